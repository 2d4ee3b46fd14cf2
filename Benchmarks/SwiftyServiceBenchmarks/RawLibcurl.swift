import CCurlShim
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// libcurl used by hand from Swift, as fast as it goes: the baseline CurlBackend is held to. Sequentially, one
/// easy handle reused with `curl_easy_perform`; with more in flight, a multi handle with one reused easy handle
/// per request in flight, driven on the calling thread. The body is counted and dropped.
final class RawLibcurl {
    private let curl: RawCurlAPI
    private let handles: [RawCurlAPI.Handle]
    private let multi: RawCurlAPI.Handle?

    /// With `http2CA`, over HTTP/2 (TLS, trusting that CA), every request in flight on one connection.
    init(url: URL, inFlight: Int, http2CA: URL? = nil) throws {
        let curl = try RawCurlAPI()
        self.curl = curl
        handles = (0..<inFlight).map { _ in curl.handle(for: url) }
        multi = inFlight > 1 ? curl.multiInit() : nil
        if let http2CA {
            for handle in handles { curl.useHTTP2(handle, trusting: http2CA) }
            if let multi { curl.limitConnectionsPerHost(multi, to: 1) }
        }
    }

    /// Sends requests until `seconds` have passed; the number answered.
    func run(for seconds: Double) -> Int {
        let deadline = now() + UInt64(seconds * 1e9)
        guard let multi else {
            var count = 0
            while now() < deadline {
                guard curl.easyPerform(handles[0]) == 0 else { continue }
                count += 1
            }
            return count
        }
        for handle in handles { _ = curl.multiAdd(multi, handle) }
        var count = 0
        var running: Int32 = 0
        var adding = true
        var inMulti = handles.count
        while inMulti > 0 {
            _ = curl.multiPerform(multi, &running)
            var queued: Int32 = 0
            while let message = curl.multiInfoRead(multi, &queued) {
                guard message.pointee.msg == 1, let handle = message.pointee.easy_handle else { continue }
                if message.pointee.data.result == 0 { count += 1 }
                _ = curl.multiRemove(multi, handle)
                if adding {
                    _ = curl.multiAdd(multi, handle)
                } else {
                    inMulti -= 1
                }
            }
            adding = now() < deadline
            if inMulti > 0 { _ = curl.multiPoll(multi, nil, 0, 100, nil) }
        }
        return count
    }
}
