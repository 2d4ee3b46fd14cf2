import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension CurlBackend: StreamingBackend {
    /// Streams the response: the head as soon as libcurl has it, then each chunk as it is read. When the
    /// reader's buffer (``StreamSink/capacity``) is full the transfer is paused (`CURL_WRITEFUNC_PAUSE`) and
    /// the loop thread resumes it (`curl_easy_pause`) once the reader has caught up, so a slow reader holds
    /// at most that much; a paused transfer's silence does not count toward its timeout. Cancelling removes
    /// the handle at once, which closes its connection.
    public func stream(_ request: BackendRequest, into sink: StreamSink) -> BackendTask {
        let loop = self.loop(for: request)
        let transfer = CurlTransfer(request: request, policy: policy, loop: loop) { result in
            // A head that did not go on its own (a redirect not followed): it and its body go now.
            sink.deliver(result)
        }
        transfer.sink = sink
        sink.whenDrained { loop.resume(transfer) }
        loop.start(transfer)
        return BackendTask(stopping: transfer)
    }
}
