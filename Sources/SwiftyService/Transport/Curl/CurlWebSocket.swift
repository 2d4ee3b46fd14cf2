import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#elseif canImport(Musl)
import Musl
#endif

/// A WebSocket's connection on libcurl: `CURLOPT_CONNECT_ONLY` makes the TCP or TLS connection (under the
/// realm's TLS policy: a pin that does not match fails here, before a byte is sent), then the handshake's
/// request and answer and every frame go through `curl_easy_send` and `curl_easy_recv`.
enum CurlWebSocketConnector {
    /// Connects and makes the handshake on a thread of its own; `completion` hears the answer's head — a
    /// `101` whose socket is left in `upgrade`, or any other status with its body — or the failure.
    static func open(
        _ request: BackendRequest, upgrade: WebSocketUpgrade, tlsSupport: CurlTLSSupport,
        completion: @escaping @Sendable (Result<Response, any Error>) -> Void
    ) -> BackendTask {
        let once = OnceCompletion(completion)
        let cancelled = Locked<Bool>.make(false)
        let thread = Thread {
            let result: Result<Response, any Error>
            do {
                result = .success(
                    try handshake(request, upgrade: upgrade, tlsSupport: tlsSupport) { cancelled.value })
            } catch {
                result = .failure(error)
            }
            once(result)
        }
        thread.name = "SwiftyService.WebSocket"
        thread.start()
        return BackendTask {
            cancelled.withLock { $0 = true }
            once(.failure(URLError(.cancelled)))
        }
    }

    private static func handshake(
        _ request: BackendRequest, upgrade: WebSocketUpgrade, tlsSupport: CurlTLSSupport,
        isCancelled: @escaping () -> Bool
    ) throws -> Response {
        let curl = try LibCurl.shared.get()
        guard let perform = curl.easyPerform, curl.easySend != nil, curl.easyRecv != nil else {
            throw WebSocketError.unsupportedBackend("the loaded libcurl lacks curl_easy_send or curl_easy_recv")
        }
        let urlRequest = request.urlRequest
        guard let url = urlRequest.url, let handle = curl.easyInit() else {
            throw URLError(.badURL)
        }
        let stream = CurlByteStream(curl: curl, handle: handle, isTLS: ["https", "wss"].contains(url.scheme?.lowercased()))
        var handedOver = false
        defer { if !handedOver { stream.shutdown() } }
        typealias O = LibCurl.Option
        curl.set(handle, O.url, string: url.absoluteString)
        curl.set(handle, O.connectOnly, 1)
        curl.set(handle, O.noSignal, 1)
        curl.set(handle, O.errorBuffer, pointer: stream.errorBuffer)
        // libcurl up to 8.4 hands `curl_easy_recv` at most this many bytes per call (16 KiB by default): a
        // large message's payload then took a system call per 16 KiB. The buffer itself is allocated but, in
        // connect-only mode, never written, so it costs address space rather than memory.
        curl.set(handle, O.bufferSize, CurlLoop.streamReadSize)
        let timeout = urlRequest.timeoutInterval > 0 ? urlRequest.timeoutInterval : 60
        curl.set(handle, O.connectTimeoutMilliseconds, Int(timeout * 1000))
        // Only http and https: a proxy or redirect never takes the connection elsewhere.
        curl.set(handle, O.protocols, 3)
        if let policy = request.tlsPolicy {
            if let refused = try CurlTLSOptions(policy, support: tlsSupport).apply(to: handle, curl) { throw refused }
        }
        let code = perform(handle)
        guard code == 0 else {
            let reason = stream.failureReason ?? curl.describe(code)
            throw TLSFailure.error(curlCode: code, reason: reason, url: url)
                ?? CurlLoop.urlError(code, description: reason)
        }
        guard let descriptor = curl.activeSocket(handle) else { throw URLError(.cannotConnectToHost) }
        stream.descriptor = descriptor
        let deadline = Date().addingTimeInterval(timeout)

        try stream.writeAll(requestHead(urlRequest, handshake: upgrade.handshake), until: deadline, isCancelled)
        var received: [UInt8] = []
        var parsed: (head: HTTPResponseHead, length: Int)?
        while parsed == nil {
            guard try stream.readSome(into: &received, until: deadline, isCancelled) else {
                throw URLError(.networkConnectionLost, userInfo: [NSLocalizedDescriptionKey: "the server ended the connection before its answer"])
            }
            parsed = try HTTPResponseHead.parse(received)
        }
        guard let (head, length) = parsed else { throw URLError(.badServerResponse) }
        var leftover = Array(received[length...])
        guard head.statusCode == 101 else {
            // The refusal's body explains it: read as much as it declares, within a megabyte and the timeout. A
            // body of no declared length (chunked, kept alive) gets what comes within a second, undecoded.
            let limit = min(request.maxResponseSize ?? (1 << 20), 1 << 20)
            let declared = head.headers.first { $0.key.lowercased() == "content-length" }.flatMap { Int($0.value) }
            let bodyDeadline = declared == nil ? min(deadline, Date().addingTimeInterval(1)) : deadline
            while leftover.count < min(declared ?? limit, limit),
                (try? stream.readSome(into: &leftover, until: bodyDeadline, isCancelled)) == true
            {}
            let body = Data(leftover.prefix(min(declared ?? limit, limit)))
            return Response(
                request: urlRequest, statusCode: head.statusCode, fields: HeaderFields(head.headers), data: body,
                url: url)
        }
        let agreement = try upgrade.handshake.validate(headers: head.headers)
        let deflate = try agreement.compression.map(WebSocketDeflate.init)
        handedOver = true
        upgrade.deposit(
            WebSocketEngine(
                stream: stream, leftover: leftover, subprotocol: agreement.subprotocol, deflate: deflate,
                options: upgrade.options))
        return Response(request: urlRequest, statusCode: 101, fields: HeaderFields(head.headers), data: Data(), url: url)
    }

    /// The upgrade request as HTTP/1.1 bytes: the request line, `Host`, the request's fields (the realm's and
    /// its middleware's, cookies included) and the handshake's.
    static func requestHead(_ request: URLRequest, handshake: WebSocketHandshake) -> [UInt8] {
        guard let url = request.url, let components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
            return []
        }
        var target = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        if let query = components.percentEncodedQuery { target += "?" + query }
        var host = components.percentEncodedHost ?? ""
        if host.contains(":") { host = "[\(host)]" }
        if let port = components.port { host += ":\(port)" }
        var lines = ["GET \(target) HTTP/1.1", "Host: \(host)"]
        let own = Set(handshake.requestHeaders.map { $0.name.lowercased() } + ["host", "content-length"])
        for (name, value) in (request.allHTTPHeaderFields ?? [:]).sorted(by: { $0.key < $1.key })
        where !own.contains(name.lowercased()) {
            lines.append("\(name): \(value)")
        }
        lines += handshake.requestHeaders.map { "\($0.name): \($0.value)" }
        return Array((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8)
    }
}

/// A libcurl connection made with `CURLOPT_CONNECT_ONLY`, read and written without blocking.
final class CurlByteStream: WebSocketByteStream {
    private let curl: LibCurl
    private var handle: LibCurl.Handle?
    var descriptor: Int32 = -1
    let errorBuffer: UnsafeMutablePointer<CChar>
    let drainsInOneRead: Bool

    init(curl: LibCurl, handle: LibCurl.Handle, isTLS: Bool) {
        self.curl = curl
        self.handle = handle
        drainsInOneRead = !isTLS
        errorBuffer = .allocate(capacity: 256)
        errorBuffer.initialize(repeating: 0, count: 256)
    }

    deinit { errorBuffer.deallocate() }

    var failureReason: String? { errorBuffer.pointee == 0 ? nil : String(cString: errorBuffer) }

    /// `CURLE_AGAIN`: nothing to read, or no room to write, now.
    private static let again: Int32 = 81

    func write(_ bytes: UnsafeRawBufferPointer) throws -> Int {
        guard let handle, let send = curl.easySend else { throw WebSocketError.closed }
        var sent = 0
        let code = send(handle, bytes.baseAddress, bytes.count, &sent)
        if code == Self.again { return 0 }
        guard code == 0 else { throw CurlLoop.urlError(code, description: failureReason ?? curl.describe(code)) }
        return sent
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int? {
        guard let handle, let receive = curl.easyRecv else { throw WebSocketError.closed }
        var count = 0
        let code = receive(handle, buffer.baseAddress, buffer.count, &count)
        if code == Self.again { return nil }
        guard code == 0 else { throw CurlLoop.urlError(code, description: failureReason ?? curl.describe(code)) }
        return count
    }

    func shutdown() {
        guard let handle else { return }
        self.handle = nil
        curl.easyCleanup(handle)
    }

    /// Waits (in slices, so that a cancellation is seen) until the socket is ready for `events`.
    private func wait(for events: Int32, until deadline: Date, _ isCancelled: () -> Bool) throws {
        while true {
            if isCancelled() { throw URLError(.cancelled) }
            let left = deadline.timeIntervalSinceNow
            if left <= 0 { throw URLError(.timedOut) }
            var descriptors = [pollfd(fd: descriptor, events: Int16(events), revents: 0)]
            if poll(&descriptors, 1, Int32(min(left, 0.05) * 1000) + 1) > 0 { return }
        }
    }

    func writeAll(_ bytes: [UInt8], until deadline: Date, _ isCancelled: () -> Bool) throws {
        var offset = 0
        while offset < bytes.count {
            let written = try bytes.withUnsafeBytes { try write(UnsafeRawBufferPointer(rebasing: $0[offset...])) }
            if written == 0 { try wait(for: Int32(POLLOUT), until: deadline, isCancelled) }
            offset += written
        }
    }

    /// Appends what arrives to `bytes`: `false` at the end of the stream.
    func readSome(into bytes: inout [UInt8], until deadline: Date, _ isCancelled: () -> Bool) throws -> Bool {
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            if let count = try buffer.withUnsafeMutableBytes({ try read(into: $0) }) {
                bytes += buffer[0..<count]
                return count > 0
            }
            try wait(for: Int32(POLLIN), until: deadline, isCancelled)
        }
    }
}
