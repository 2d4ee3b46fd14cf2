import CCurlShim
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One request on its way through libcurl: one easy handle per hop (redirects are followed by us).
///
/// Everything but `stop` happens on the thread that drives the loop; libcurl's callbacks reach it through
/// `Unmanaged` pointers that the loop keeps alive while the handle is in the multi handle.
final class CurlTransfer: StoppableTransfer, @unchecked Sendable {
    let request: BackendRequest
    let policy: RedirectPolicy
    /// The loop that carries the transfer out, which a stop goes through.
    private let loop: CurlLoop
    /// Called once, then dropped; only the driving thread touches it, so it needs no lock of its own (a
    /// locked, generic once-only wrapper cost six allocations per request on the loop's busiest path).
    private var completion: (@Sendable (Result<Response, any Error>) -> Void)?
    /// The longest the transfer may hear nothing, and when it last heard something (or sent a byte).
    var silenceLimit: TimeInterval = 60
    // Unchecked for exclusivity, as are the fields below that the header and body callbacks write: only the loop
    // thread touches them, never in overlapping accesses, and the runtime's check cost a third of a header line.
    @exclusivity(unchecked) private(set) var heardAt: TimeInterval = 0
    /// Set by the callbacks when they hear from the server (or send a body's bytes), until the loop next
    /// looks at the silence (``noteHeard(now:)``).
    @exclusivity(unchecked) private var heard = false
    /// The call's deadline, when the transfer keeps it (``CallerDrivenBackend``): when it passes, on the
    /// clock of silences, and the seconds it was set to. Set before the loop sees the transfer.
    private(set) var deadline: (due: TimeInterval, seconds: TimeInterval)?

    /// Ends the transfer with ``CallDeadlinePassed`` unless it has ended `seconds` from now.
    func keepDeadline(after seconds: TimeInterval) {
        deadline = (Self.monotonicSeconds() + min(seconds, .longestTimeout), seconds)
    }

    /// When the attempt began, for its metrics (read from the clock only when the realm collects them).
    let startedAt: Date?
    /// The last hop's metrics, with the time the hops before it took (when the realm collects metrics).
    private var metrics: TransferMetrics?
    private var redirectTime: TimeInterval = 0

    private(set) var redirects = 0
    /// What the loop reads of the current hop's request, read once per hop. The first hop's is the builder's
    /// own, or read as the transfer is made, on the caller's thread: URLRequest's accessors copy under a lock,
    /// and the loop's one thread carries every transfer of the backend (at 8 in flight it was the bottleneck).
    private(set) var hop: WireForm
    /// The hop's easy handle, the loop's while the transfer has it.
    var easy: PooledHandle?
    /// The options of the request's TLS policy, kept while the transfer may connect: on a libcurl that takes
    /// no roots in memory, they own the file its handles read the roots from.
    var tlsOptions: CurlTLSOptions?
    /// The current hop's record of its TLS handshake, when it goes over https on a libcurl that can watch one.
    private var handshakeWatch: OpaquePointer?
    /// The host whose connection the hop holds, while it holds one (CurlLoop+Connections).
    var connectionHost: String?
    /// When the hop began to wait for a connection, while it waits; and how long its waits took in all.
    var waitingForConnectionSince: TimeInterval?
    var waitedForConnections: TimeInterval = 0

    // The current hop's response.
    @exclusivity(unchecked) private var statusLine: String?
    /// The head's field lines as they came, parsed into fields only when something asks for them.
    @exclusivity(unchecked) private var lines = HeaderLines(capacity: 512)
    /// The head's `Content-Encoding` and `Transfer-Encoding` values (a repeated field's joined with ", "),
    /// read as they come: the end of the head looks at them.
    @exclusivity(unchecked) private var contentCodings: String?
    @exclusivity(unchecked) private var transferCodings: String?
    /// The hop's `Set-Cookie` lines, each as it came: the parsed fields join them with ", ", which cookies
    /// themselves may hold (in a value, in an `Expires` date), so the jar gets them apart.
    @exclusivity(unchecked) private var setCookieLines: [String] = []
    /// Header lines and bytes of head read in this hop, 1xx heads and trailers included.
    @exclusivity(unchecked) private var fieldCount = 0
    @exclusivity(unchecked) private var headBytes = 0
    /// Set when the head went past a limit and the transfer was stopped for it.
    private(set) var headTooLarge: ResponseHeadTooLarge?
    @exclusivity(unchecked) private var body = ResponseBodyBuffer()
    /// The bytes a body in memory has room for before it grows: most API answers fit.
    static let bodyReserve = 1024
    private var output: FileHandle?
    @exclusivity(unchecked) private var received: Int64 = 0
    @exclusivity(unchecked) private var expectedLength: Int64?

    // The current hop's request body.
    private var bodyBytes: Data?
    private var bodyFile: FileHandle?
    private var bodyOffset = 0
    /// The body's length; -1 for a stream of unknown length (sent chunked).
    private(set) var bodyLength: Int64 = 0
    /// A stream body, on the first hop: libcurl's reads drain its buffer, and pause the transfer while it is
    /// empty (`isAwaitingBody`) until the stream has more and the loop resumes the transfer.
    private var bodyStream: BodyStream?
    /// Whether the hop follows a 307 or 308, which sends the body again (a file from its start).
    private var resendsBody = false
    var isAwaitingBody = false
    /// The stream's failure (its sequence threw, or gave another length than declared), reported instead of
    /// libcurl's "operation aborted by callback".
    private(set) var bodyStreamFailure: (any Error)?

    init(
        request: BackendRequest, policy: RedirectPolicy, loop: CurlLoop,
        completion: @escaping @Sendable (Result<Response, any Error>) -> Void
    ) {
        startedAt = request.collectsMetrics ? Date() : nil
        // Reserved here, on the caller's thread, where the caller lets go of it: allocated on the loop's
        // thread, each body was freed into the loop thread's arena from another, under the arena's lock
        // that the loop's own allocations then waited on.
        if request.downloadFile == nil { body.reserve(Self.bodyReserve) }
        hop = request.wire ?? WireForm(reading: request.urlRequest)
        // Stored last, so that storing it is its last use: a move, not a copy of its fields.
        self.request = request
        self.policy = policy
        self.loop = loop
        self.completion = completion
    }

    /// Gets ready for a hop: resets the response, opens the body.
    func prepareHop() throws {
        statusLine = nil
        clearFields()
        fieldCount = 0
        headBytes = 0
        body.removeAll()
        received = 0
        bodyOffset = 0
        bodyFile = nil
        bodyBytes = hop.body
        bodyLength = Int64(bodyBytes?.count ?? 0)
        if redirects == 0 || resendsBody, let file = request.bodyFile {
            bodyFile = try FileHandle(forReadingFrom: file)
            let size = (try FileManager.default.attributesOfItem(atPath: file.path))[.size] as? Int64
            bodyLength = size ?? 0
        }
        // After a redirect that turned the request into a GET, the stream is done with: let it go now.
        let stream = redirects == 0 ? request.bodyStream : nil
        if stream == nil { bodyStream?.stop() }
        bodyStream = stream
        if let bodyStream { bodyLength = bodyStream.length ?? -1 }
        if let download = request.downloadFile {
            try FileManager.default.createDirectory(
                at: download.deletingLastPathComponent(), withIntermediateDirectories: true)
            _ = FileManager.default.createFile(atPath: download.path, contents: nil)
            output = try FileHandle(forWritingTo: download)
        }
    }

    var hasBody: Bool { bodyBytes != nil || bodyFile != nil || bodyStream != nil }

    deinit {
        ccurl_tls_watch_release(handshakeWatch)
        body.deallocate()
    }

    /// A new record for the hop's handshake (the last hop's let go of), for `CURLOPT_SSL_CTX_DATA`.
    func watchNewHandshake() -> OpaquePointer? {
        stopWatchingHandshake()
        handshakeWatch = ccurl_tls_watch_new()
        return handshakeWatch
    }

    func stopWatchingHandshake() {
        ccurl_tls_watch_release(handshakeWatch)
        handshakeWatch = nil
    }

    /// What the current hop's TLS handshake showed, as far as it was watched.
    var handshake: TLSHandshakeFacts {
        let flags = ccurl_tls_watch_flags(handshakeWatch)
        return TLSHandshakeFacts(
            certificateRequested: flags & CCURL_TLS_CERTIFICATE_REQUESTED != 0,
            serverWentOn: flags & CCURL_TLS_SERVER_WENT_ON != 0 || headBytes > 0,
            certificatePresented: request.tlsPolicy?.clientIdentity != nil)
    }

    // MARK: libcurl callbacks

    /// One header line from libcurl, CRLF included; parsed on bytes, as Foundation's string trimming
    /// would cost more than the rest of the request. `false` stops the transfer: the head went past
    /// ``TransportRules``' limits.
    func header(_ line: UnsafeRawBufferPointer) -> Bool {
        heard = true
        headBytes += line.count
        if let problem = ResponseHeadTooLarge.problem(fields: fieldCount, bytes: headBytes) {
            headTooLarge = problem
            return false
        }
        var end = line.count
        while end > 0, line[end - 1] == UInt8(ascii: "\r") || line[end - 1] == UInt8(ascii: "\n") { end -= 1 }
        let bytes = UnsafeRawBufferPointer(rebasing: line[0..<end])
        if Self.isStatusLine(bytes) {
            // `HTTP/2 200`: the host multiplexes, and the loop lets every request to it share its connections.
            if bytes.count > 5, bytes[5] == UInt8(ascii: "2"), let host = connectionHost {
                loop.noteMultiplexing(host)
            }
            // A new status line (after a 100 Continue, say) starts the headers over.
            statusLine = String(decoding: bytes, as: UTF8.self)
            clearFields()
            expectedLength = nil
            return true
        }
        if bytes.isEmpty {
            keepsUnknownCodingUndecoded()
            if sink != nil { handOverHead() }
            return true
        }
        guard let start = bytes.baseAddress, let colonAt = memchr(start, Int32(UInt8(ascii: ":")), bytes.count)
        else { return true }
        fieldCount += 1
        if let problem = ResponseHeadTooLarge.problem(fields: fieldCount, bytes: headBytes) {
            headTooLarge = problem
            return false
        }
        lines.append(bytes)
        // Only the fields the transfer acts on are read now; their lengths tell most lines apart unread.
        let colon = UnsafeRawPointer(colonAt) - start
        let name = HeaderName.trimmed(UnsafeRawBufferPointer(rebasing: bytes[0..<colon]))
        func value() -> UnsafeRawBufferPointer {
            HeaderName.trimmed(UnsafeRawBufferPointer(rebasing: bytes[(colon + 1)...]))
        }
        switch name.count {
        case 14 where HeaderName.same(name, "Content-Length"):
            expectedLength = Self.contentLength(value())
        case 10 where HeaderName.same(name, "Set-Cookie"):
            setCookieLines.append(String(decoding: value(), as: UTF8.self))
        case 16 where HeaderName.same(name, "Content-Encoding"):
            let value = String(decoding: value(), as: UTF8.self)
            contentCodings = contentCodings.map { $0 + ", " + value } ?? value
        case 17 where HeaderName.same(name, "Transfer-Encoding"):
            let value = String(decoding: value(), as: UTF8.self)
            transferCodings = transferCodings.map { $0 + ", " + value } ?? value
        default:
            break
        }
        return true
    }

    /// A `Content-Length` value: digits only (RFC 9110 §8.6), `nil` for anything else or more than fits.
    private static func contentLength(_ digits: UnsafeRawBufferPointer) -> Int64? {
        guard !digits.isEmpty else { return nil }
        var length: Int64 = 0
        for byte in digits {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let (times10, overflowed) = length.multipliedReportingOverflow(by: 10)
            let (sum, overflowedAgain) = times10.addingReportingOverflow(Int64(byte - UInt8(ascii: "0")))
            guard !overflowed, !overflowedAgain else { return nil }
            length = sum
        }
        return length
    }

    private func clearFields() {
        lines.removeAll()
        contentCodings = nil
        transferCodings = nil
        if !setCookieLines.isEmpty { setCookieLines = [] }
    }

    /// Whether the line starts with "HTTP/": compared byte by byte, as the generic `starts(with:)` over a
    /// string's UTF-8 view cost more than the rest of the line's checks.
    private static func isStatusLine(_ line: UnsafeRawBufferPointer) -> Bool {
        line.count >= 5 && line[0] == UInt8(ascii: "H") && line[1] == UInt8(ascii: "T")
            && line[2] == UInt8(ascii: "T") && line[3] == UInt8(ascii: "P") && line[4] == UInt8(ascii: "/")
    }

    /// The codings libcurl decodes (with `CURLOPT_ACCEPT_ENCODING` set to all it supports).
    private static let decodedCodings: Set<String> = [
        "identity", "none", "gzip", "x-gzip", "deflate", "br", "zstd",
    ]
    private static let decodedTransferCodings = decodedCodings.union(["chunked"])

    /// At the end of the head: a body under a coding libcurl does not know would fail the transfer
    /// ("Unrecognized content encoding type"); browsers hand it over as it came, with its header, and so
    /// do we, by turning libcurl's decoding off for this response before its first body byte. (libcurl
    /// reads the setting per body write up to 7.x; see the Backends article.) The same for a
    /// transfer coding other than chunked that libcurl does not know: the body, which then runs to the end
    /// of the connection (RFC 9112 §6.3), is handed over as it came.
    private func keepsUnknownCodingUndecoded() {
        // Most heads name neither, and the checks below cost a response ~0.5 µs.
        guard contentCodings != nil || transferCodings != nil, let handle = easy?.raw,
            let curl = try? LibCurl.shared.get()
        else { return }
        func isUnknown(_ codings: String?, besides known: Set<String>) -> Bool {
            (codings ?? "").split(separator: ",").contains {
                !known.contains($0.trimmingCharacters(in: .whitespaces).lowercased())
            }
        }
        guard
            isUnknown(contentCodings, besides: Self.decodedCodings)
                || isUnknown(transferCodings, besides: Self.decodedTransferCodings)
        else { return }
        curl.set(handle, LibCurl.Option.httpContentDecoding, 0)
        // Set for this response only: the next hop on the handle sets its options anew.
        easy?.setup = nil
    }

    /// Set when the body went past the request's size limit and the transfer was stopped for it.
    private(set) var tooLarge: Int?

    func write(_ chunk: UnsafeRawBufferPointer) -> Bool {
        heard = true
        if let limit = request.maxResponseSize, output == nil,
            received + Int64(chunk.count) > Int64(limit) || (expectedLength ?? 0) > Int64(limit)
        {
            tooLarge = limit
            return false
        }
        if let output {
            do { try output.write(contentsOf: chunk) } catch { return false }
        } else {
            guard body.append(chunk) else { return false }
        }
        received += Int64(chunk.count)
        if request.wantsProgress {
            request.reportProgress(
                TransferProgress(direction: .download, completed: received, expected: expectedLength))
        }
        return true
    }

    // MARK: Streaming (CurlBackend+Streaming.swift)

    /// Where a streamed response goes once its head is in; `nil` for a plain request.
    var sink: StreamSink?
    /// Whether the streamed response's head went to the sink (its body then goes there too).
    private(set) var headHandedOver = false
    /// Whether libcurl holds the transfer paused because the sink's buffer is full.
    var isPaused = false

    /// The end of a head: a final one (not 1xx, not a redirect we may follow) goes to the sink at once, so
    /// that the reader has it before the first byte of body, however long that takes.
    private func handOverHead() {
        guard let sink, !headHandedOver, let statusLine else { return }
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, let status = Int(parts[1]), status >= 200, !(300..<400).contains(status)
        else {
            return
        }
        headHandedOver = true
        var head = Response(sent: request.sent, statusCode: status, lines: lines, data: Data(), url: hop.url)
        head.setCookieLines = setCookieLines
        sink.head(head)
    }

    /// A chunk of a streamed body: the bytes taken, or `CURL_WRITEFUNC_PAUSE` when the sink is full (libcurl
    /// then keeps the chunk and offers it again once the loop resumes the transfer).
    func stream(_ chunk: UnsafeRawBufferPointer) -> Int {
        guard let sink, headHandedOver else { return write(chunk) ? chunk.count : 0 }
        heard = true
        guard sink.offer(Data(chunk)) else {
            isPaused = true
            return Self.writePause
        }
        received += Int64(chunk.count)
        return chunk.count
    }

    /// `CURL_WRITEFUNC_PAUSE`
    static let writePause = 0x1000_0001

    /// Fills libcurl's buffer with the next bytes of the body; 0 at the end, `readAbort` on failure.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        heard = true
        var count = 0
        if let bodyStream {
            switch bodyStream.read(into: buffer, whenReadable: { [loop] in loop.resume(self) }) {
            case let .bytes(taken): count = taken
            case .wait:
                isAwaitingBody = true
                return Self.readPause
            case .end: break
            case let .failed(error):
                bodyStreamFailure = error
                return Self.readAbort
            }
        } else if let bodyFile {
            guard let chunk = try? bodyFile.read(upToCount: buffer.count) else { return Self.readAbort }
            chunk.copyBytes(to: buffer)
            count = chunk.count
        } else if let bodyBytes {
            count = max(0, min(buffer.count, bodyBytes.count - bodyOffset))
            if count > 0 {
                let start = bodyBytes.startIndex + bodyOffset
                bodyBytes.copyBytes(
                    to: buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), from: start..<start + count)
            }
        }
        bodyOffset += count
        if request.wantsProgress, bodyLength != 0 {
            request.reportProgress(
                TransferProgress(
                    direction: .upload, completed: Int64(bodyOffset), expected: bodyLength < 0 ? nil : bodyLength))
        }
        return count
    }

    /// `CURL_READFUNC_ABORT`
    static let readAbort = 0x1000_0000
    /// `CURL_READFUNC_PAUSE`
    static let readPause = 0x1000_0001

    /// Moves the body back to `offset` for libcurl to send it again; `false` if that cannot be done.
    func rewind(to offset: Int64) -> Bool {
        // A stream cannot go back: only to where it is (libcurl asks for 0 before it has read a byte).
        if bodyStream != nil { return offset == bodyOffset }
        guard offset >= 0, offset <= bodyLength else { return false }
        if let bodyFile {
            do { try bodyFile.seek(toOffset: UInt64(offset)) } catch { return false }
        }
        bodyOffset = Int(offset)
        return true
    }

    // MARK: Endings

    /// The current hop's headers, repeated names joined with commas.
    func headerFields() -> [String: String] {
        lines.fields.dictionary
    }

    /// The response of the current hop as an `HTTPURLResponse` (costly on Linux: only for redirects and
    /// downloads).
    func response(status: Int) -> HTTPURLResponse? {
        let version = statusLine?.split(separator: " ").first.map(String.init) ?? "HTTP/1.1"
        return hop.url.flatMap {
            HTTPURLResponse(url: $0, statusCode: status, httpVersion: version, headerFields: headerFields())
        }
    }

    /// The current hop's head as far as it came, if its status line did: what a failed download wrote
    /// belongs to it.
    private func headSoFar() -> HTTPURLResponse? {
        let status = statusLine?.split(separator: " ", maxSplits: 2).dropFirst().first.flatMap { Int($0) }
        return status.flatMap { response(status: $0) }
    }

    /// The next hop's request after a redirect, if the policy follows it; `.tooMany` past its limit.
    func nextHop(after head: HTTPURLResponse) -> RedirectPolicy.Step? {
        // The hop's request as a `URLRequest`: the first hop's is made here, once a redirect needs it.
        let current = hop.urlRequest
        guard let proposed = RedirectPolicy.proposedRequest(after: head, sent: current) else { return nil }
        redirects += 1
        let step = policy.step(
            after: head, setCookieLines: setCookieLines, sent: current, proposed: proposed, for: request,
            redirects: redirects)
        if case let .follow(next) = step {
            self.hop = WireForm(reading: next)
            resendsBody = head.statusCode == 307 || head.statusCode == 308
        }
        return step
    }

    func closeFiles() {
        try? output?.close()
        output = nil
        try? bodyFile?.close()
        bodyFile = nil
        bodyStream?.stop()
        bodyStream = nil
    }

    /// Why the hop must not follow a `307`/`308` redirect to `next`: it would send the body again, and the
    /// body is a stream, read once.
    func refusalToResendBody(after status: Int, to next: URLRequest) -> BodyStreamError? {
        guard request.bodyStream != nil, status == 307 || status == 308 else { return nil }
        return .cannotResendForRedirect(status: status, location: next.url?.absoluteString ?? "?")
    }

    /// Keeps a hop's metrics: the hops before the last one add up to its redirect time.
    func measured(_ hop: TransferMetrics) {
        if let previous = metrics { redirectTime += previous.total ?? 0 }
        var hop = hop
        hop.redirects = redirects
        hop.redirectTime = redirects > 0 ? redirectTime : nil
        metrics = hop
    }

    /// Ends the transfer with the current hop's response.
    func succeed(status: Int, head: HTTPURLResponse?) {
        closeFiles()
        var response: Response
        if let download = request.downloadFile, let head = head ?? self.response(status: status) {
            response = Response(request: request.urlRequest, response: head, fileURL: download)
        } else if let head {
            response = Response(request: request.urlRequest, response: head, data: body.take())
        } else {
            response = Response(
                sent: request.sent, statusCode: status, lines: lines, data: body.take(), url: hop.url)
        }
        response.setCookieLines = setCookieLines
        if let metrics { response.metrics = [metrics] }
        finish(.success(response))
    }

    /// The transfer heard from the server, or took a byte of the body to send: its silence starts over.
    func heardFrom() {
        heardAt = Self.monotonicSeconds()
        heard = false
    }

    /// Where the loop looks at the silence (`now` being the clock's reading there): a transfer that heard from
    /// the server since the last look heard from it now. The callbacks only set ``heard``: a clock read per
    /// header line and per chunk cost more than the rest of a line's work, and the loop looks after every
    /// turn in which they ran.
    func noteHeard(now: TimeInterval) {
        guard heard else { return }
        heardAt = now
        heard = false
    }

    /// Seconds on a monotonic clock, for silences: read after every turn of the loop, so the cheapest there
    /// is. On Linux that is the coarse clock: its few milliseconds of resolution are lost in
    /// timeouts of seconds, and it costs ~20 ns where the precise one cost ~130–200 ns on this project's VM.
    static func monotonicSeconds() -> TimeInterval {
        #if os(Linux)
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC_COARSE, &now)
        return TimeInterval(now.tv_sec) + TimeInterval(now.tv_nsec) / 1_000_000_000
        #else
        return TimeInterval(DispatchTime.now().uptimeNanoseconds) / 1_000_000_000
        #endif
    }

    /// Ends the transfer as cancelled, on the loop's thread.
    func stop() {
        loop.cancel(self)
    }

    /// Whether the transfer has answered.
    var isFinished: Bool { completion == nil }

    func finish(_ result: Result<Response, any Error>) {
        guard let completion else { return }
        self.completion = nil
        closeFiles()
        guard case let .failure(error) = result else { return completion(result) }
        if request.downloadFile != nil { request.abandonDownload(head: headSoFar()) }
        // A failed attempt that was measured (it got as far as libcurl) says how far it went.
        completion(.failure(metrics.map { MeasuredFailure(underlying: error, metrics: $0) } ?? error))
    }
}
