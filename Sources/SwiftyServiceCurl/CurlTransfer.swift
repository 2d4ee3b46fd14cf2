import Foundation
import SwiftyService

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One request on its way through libcurl: one easy handle per hop (redirects are followed by us).
///
/// Everything but `cancel` happens on the loop thread; libcurl's callbacks reach it through
/// `Unmanaged` pointers that the loop keeps alive while the handle is in the multi handle.
final class CurlTransfer: @unchecked Sendable {
    let request: BackendRequest
    let policy: RedirectPolicy
    private let completion: OnceCompletion<Result<Response, any Error>>
    /// The longest the transfer may hear nothing, and when it last heard something (or sent a byte).
    var silenceLimit: TimeInterval = 60
    private(set) var heardAt: TimeInterval = 0

    /// The request of the current hop.
    private(set) var current: URLRequest
    private(set) var redirects = 0
    var handle: LibCurl.Handle?
    var headerList: LibCurl.Handle?

    // The current hop's response.
    private var statusLine: String?
    /// The header fields, under the first spelling of each name; a repeated name's values joined with
    /// ", ". One lookup per line: a head of many fields must not cost the loop thread more than its size.
    private var fields: [HeaderName: String] = [:]
    /// Header lines and bytes of head read in this hop, 1xx heads and trailers included.
    private var fieldCount = 0
    private var headBytes = 0
    /// Set when the head went past a limit and the transfer was stopped for it.
    private(set) var headTooLarge: ResponseHeadTooLarge?
    /// libcurl's error buffer (`CURLOPT_ERRORBUFFER`, `CURL_ERROR_SIZE` bytes): the TLS library's reason
    /// for a failure, which the result code alone does not tell.
    let errorBuffer: UnsafeMutablePointer<CChar> = {
        let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: CurlTransfer.errorBufferSize)
        buffer.initialize(repeating: 0, count: CurlTransfer.errorBufferSize)
        return buffer
    }()
    static let errorBufferSize = 256
    private var body = Data()
    private var output: FileHandle?
    private var received: Int64 = 0
    private var expectedLength: Int64?

    // The current hop's request body.
    private var bodyBytes: Data?
    private var bodyFile: FileHandle?
    private var bodyOffset = 0
    private(set) var bodyLength: Int64 = 0

    init(
        request: BackendRequest, policy: RedirectPolicy,
        completion: @escaping @Sendable (Result<Response, any Error>) -> Void
    ) {
        self.request = request
        self.policy = policy
        self.completion = OnceCompletion(completion)
        current = request.urlRequest
    }

    deinit {
        errorBuffer.deallocate()
    }

    /// What libcurl said about the hop's failure: its error buffer, or `fallback` when that is empty.
    func failureReason(or fallback: String) -> String {
        errorBuffer[0] == 0 ? fallback : String(cString: errorBuffer)
    }

    /// Gets ready for a hop: resets the response, opens the body.
    func prepareHop() throws {
        statusLine = nil
        fields = [:]
        fieldCount = 0
        headBytes = 0
        errorBuffer[0] = 0
        body = Data()
        received = 0
        bodyOffset = 0
        bodyFile = nil
        bodyBytes = current.httpBody
        bodyLength = Int64(bodyBytes?.count ?? 0)
        if redirects == 0, let file = request.bodyFile {
            bodyFile = try FileHandle(forReadingFrom: file)
            let size = (try FileManager.default.attributesOfItem(atPath: file.path))[.size] as? Int64
            bodyLength = size ?? 0
        }
        if let download = request.downloadFile {
            try FileManager.default.createDirectory(
                at: download.deletingLastPathComponent(), withIntermediateDirectories: true)
            _ = FileManager.default.createFile(atPath: download.path, contents: nil)
            output = try FileHandle(forWritingTo: download)
        }
    }

    var hasBody: Bool { bodyBytes != nil || bodyFile != nil }

    // MARK: libcurl callbacks

    /// One header line from libcurl, CRLF included; parsed on bytes, as Foundation's string trimming
    /// would cost more than the rest of the request. `false` stops the transfer: the head went past
    /// ``TransportRules``' limits.
    func header(_ line: UnsafeRawBufferPointer) -> Bool {
        heardFrom()
        headBytes += line.count
        if let problem = ResponseHeadTooLarge.problem(fields: fieldCount, bytes: headBytes) {
            headTooLarge = problem
            return false
        }
        var end = line.count
        while end > 0, line[end - 1] == UInt8(ascii: "\r") || line[end - 1] == UInt8(ascii: "\n") { end -= 1 }
        let bytes = UnsafeRawBufferPointer(rebasing: line[0..<end])
        if bytes.starts(with: "HTTP/".utf8) {
            // A new status line (after a 100 Continue, say) starts the headers over.
            statusLine = String(decoding: bytes, as: UTF8.self)
            fields = [:]
            expectedLength = nil
            return true
        }
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")) else { return true }
        fieldCount += 1
        if let problem = ResponseHeadTooLarge.problem(fields: fieldCount, bytes: headBytes) {
            headTooLarge = problem
            return false
        }
        func trimmed(_ range: Range<Int>) -> String {
            var lower = range.lowerBound
            var upper = range.upperBound
            while lower < upper, bytes[lower] == UInt8(ascii: " ") || bytes[lower] == UInt8(ascii: "\t") {
                lower += 1
            }
            while upper > lower,
                bytes[upper - 1] == UInt8(ascii: " ") || bytes[upper - 1] == UInt8(ascii: "\t")
            { upper -= 1 }
            return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[lower..<upper]), as: UTF8.self)
        }
        let name = HeaderName(trimmed(0..<colon))
        let value = trimmed(colon + 1..<bytes.count)
        if name == Self.contentLength { expectedLength = Int64(value) }
        if let index = fields.index(forKey: name) {
            fields.values[index] += ", " + value
        } else {
            fields[name] = value
        }
        return true
    }

    private static let contentLength = HeaderName("Content-Length")

    /// ASCII case-insensitive comparison of header names.
    static func sameName(_ a: String, _ b: String) -> Bool {
        a.utf8.count == b.utf8.count
            && zip(a.utf8, b.utf8).allSatisfy {
                $0 == $1 || ($0 | 0x20 == $1 | 0x20 && ($0 | 0x20) >= 0x61 && ($0 | 0x20) <= 0x7A)
            }
    }

    /// Set when the body went past the request's size limit and the transfer was stopped for it.
    private(set) var tooLarge: Int?

    func write(_ chunk: UnsafeRawBufferPointer) -> Bool {
        heardFrom()
        if let limit = request.maxResponseSize, output == nil,
            received + Int64(chunk.count) > Int64(limit) || (expectedLength ?? 0) > Int64(limit)
        {
            tooLarge = limit
            return false
        }
        if let output {
            do { try output.write(contentsOf: chunk) } catch { return false }
        } else {
            body.append(contentsOf: chunk)
        }
        received += Int64(chunk.count)
        if request.wantsProgress {
            request.reportProgress(
                TransferProgress(direction: .download, completed: received, expected: expectedLength))
        }
        return true
    }

    /// Fills libcurl's buffer with the next bytes of the body; 0 at the end, `readAbort` on failure.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        heardFrom()
        var count = 0
        if let bodyFile {
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
        if request.wantsProgress, bodyLength > 0 {
            request.reportProgress(
                TransferProgress(direction: .upload, completed: Int64(bodyOffset), expected: bodyLength))
        }
        return count
    }

    /// `CURL_READFUNC_ABORT`
    static let readAbort = 0x1000_0000

    // MARK: Endings

    /// The current hop's headers, repeated names joined with commas.
    func headerFields() -> [String: String] {
        var plain = [String: String](minimumCapacity: fields.count)
        for (name, value) in fields { plain[name.text] = value }
        return plain
    }

    /// The response of the current hop as an `HTTPURLResponse` (costly on Linux: only for redirects and
    /// downloads).
    func response(status: Int) -> HTTPURLResponse? {
        let version = statusLine?.split(separator: " ").first.map(String.init) ?? "HTTP/1.1"
        return current.url.flatMap {
            HTTPURLResponse(url: $0, statusCode: status, httpVersion: version, headerFields: headerFields())
        }
    }

    /// The next hop's request after a redirect, if the policy follows it; `.tooMany` past its limit.
    func nextHop(after head: HTTPURLResponse) -> RedirectPolicy.Step? {
        guard let proposed = RedirectPolicy.proposedRequest(after: head, sent: current) else { return nil }
        redirects += 1
        let step = policy.step(after: head, sent: current, proposed: proposed, for: request, redirects: redirects)
        if case let .follow(next) = step { current = next }
        return step
    }

    func closeFiles() {
        try? output?.close()
        output = nil
        try? bodyFile?.close()
        bodyFile = nil
    }

    /// Ends the transfer with the current hop's response.
    func succeed(status: Int, head: HTTPURLResponse?) {
        closeFiles()
        if let download = request.downloadFile, let head = head ?? response(status: status) {
            return finish(.success(Response(request: request.urlRequest, response: head, fileURL: download)))
        }
        if let head {
            return finish(.success(Response(request: request.urlRequest, response: head, data: body)))
        }
        finish(
            .success(
                Response(
                    request: request.urlRequest, statusCode: status, headers: headerFields(), data: body,
                    url: current.url)))
    }

    /// The transfer heard from the server, or took a byte of the body to send: its silence starts over.
    func heardFrom() {
        heardAt = ProcessInfo.processInfo.systemUptime
    }

    /// Whether the transfer has answered.
    var isFinished: Bool { completion.isSpent }

    func finish(_ result: Result<Response, any Error>) {
        guard !completion.isSpent else { return }
        closeFiles()
        if case .failure = result, let download = request.downloadFile {
            try? FileManager.default.removeItem(at: download)
        }
        completion(result)
    }
}

/// A header name that hashes and compares as HTTP does: ASCII letters in either case are the same.
struct HeaderName: Hashable {
    /// The name as the server spelled it.
    let text: String

    init(_ text: String) {
        self.text = text
    }

    static func == (a: HeaderName, b: HeaderName) -> Bool { CurlTransfer.sameName(a.text, b.text) }

    func hash(into hasher: inout Hasher) {
        for byte in text.utf8 { hasher.combine(byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte) }
    }
}
