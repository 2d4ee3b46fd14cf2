import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension URLSessionBackend: StreamingBackend {
    /// The most of a streamed body this backend holds for a reader that has fallen behind, on Linux: 16 MiB.
    /// FoundationNetworking reads ahead of any reader (a suspended task keeps receiving), so past this the
    /// stream fails with ``ResponseTooLarge`` rather than holding the whole body; pick ``StreamingBackend``s
    /// that pause (CurlBackend) for slow readers on Linux. On Apple platforms the task is suspended instead,
    /// once ``StreamSink/capacity`` is held, and resumed when the reader has caught up.
    public static let streamReadAheadLimit = 16 << 20

    /// Streams the response through the session's delegate: the head as soon as URLSession has it, the body
    /// as URLSession hands it over. A backend made with ``init(session:)`` has no delegate of ours and
    /// answers with the whole body as one chunk.
    public func stream(_ request: BackendRequest, into sink: StreamSink) -> BackendTask {
        send(request, into: sink) { result in
            // Without a delegate, or an answer that never reached it (a challenge's 401): whole.
            sink.deliver(result)
        }
    }
}

extension SessionDelegate {
    /// A chunk of a streamed body: to the reader, holding the task back when the reader falls behind.
    func streamed(_ data: Data, of task: URLSessionDataTask, into sink: StreamSink) {
        guard !sink.offer(data) else { return }
        // URLSession has read it already: it is held whatever the buffer says, and the task waits.
        sink.forceAppend(data)
        #if canImport(FoundationNetworking)
        if sink.bufferedBytes > URLSessionBackend.streamReadAheadLimit {
            // What is held goes with it: the reader hears of the failure now, not 16 MiB later.
            sink.stop(
                with: .transport(
                    sink.request, underlying: ResponseTooLarge(limit: URLSessionBackend.streamReadAheadLimit))
            )
            task.cancel()
        }
        #else
        task.suspend()
        sink.whenDrained { task.resume() }
        #endif
    }
}
