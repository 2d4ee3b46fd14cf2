import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A server's answer: the request that was sent, the HTTP response and its body.
public struct Response: Sendable, CustomStringConvertible {
    /// The head and the body, behind one reference: a response is copied several times on its way to the
    /// caller (the answer, the outcome an exchange keeps, the task resumed with it), and a copy is then one
    /// retain rather than one per part; a change copies the parts first when the reference is shared.
    private var parts: CopyOnWriteBox<Parts>

    /// The request as it was sent.
    public var request: URLRequest { head.request }
    /// The HTTP response head: status and headers. (Made on first use when the backend gave only the
    /// parts: on Linux, building an `HTTPURLResponse` costs more than the rest of a libcurl request.)
    public var response: HTTPURLResponse { head.response }
    private var head: Head { parts.value.head }
    /// The response body; empty when there is none, and for a download (see ``fileURL``).
    public internal(set) var data: Data {
        get { parts.value.data }
        set { unique().value.data = newValue }
    }
    /// How many times the request was sent to get this response: more than 1 after retries.
    public internal(set) var attempts: Int {
        get { parts.value.attempts }
        set { unique().value.attempts = newValue }
    }
    /// Where the response came from: the network, a realm's ``HTTPCache``, or the cache after a 304.
    public internal(set) var source: Source {
        get { parts.value.source }
        set { unique().value.source = newValue }
    }
    /// The file the body was written to, for a download; `data` is then empty.
    public internal(set) var fileURL: URL? {
        get { parts.value.fileURL }
        set { unique().value.fileURL = newValue }
    }
    /// How each attempt went over the network, phase by phase, when the realm collects metrics; empty
    /// otherwise. Backends that measure set it (one entry for their attempt).
    public var metrics: [TransferMetrics] {
        get { parts.value.metrics }
        set { unique().value.metrics = newValue }
    }
    /// The body still arriving, for a streamed call (``SwiftyServiceProtocol/stream()``); `nil` when
    /// ``data`` (or ``fileURL``) holds the whole body.
    private(set) var arriving: BodyOwner? {
        get { parts.value.arriving }
        set { unique().value.arriving = newValue }
    }

    /// The parts, this response's own: copied first when another response shares them.
    private mutating func unique() -> CopyOnWriteBox<Parts> { CopyOnWriteBox.unique(&parts) }

    /// Whether the body is still arriving: the response of a streamed call (``SwiftyServiceProtocol/stream()``)
    /// as middleware sees it, whose body goes to the stream's reader after the chain. ``data`` is then empty;
    /// ``whenBodyEnds(_:)`` tells when the body has ended and how.
    public var isStreamed: Bool { arriving != nil }

    /// Calls `handler` once when the body has ended, with the bytes of it and the error that stopped it
    /// (`nil` when it came whole): at once for a body in ``data`` or ``fileURL``, at the end of the stream
    /// for a streamed one (``isStreamed``), whether the reader read it to the end, left early or the
    /// transfer failed.
    public func whenBodyEnds(_ handler: @escaping @Sendable (_ bytes: Int64, _ error: ServiceError?) -> Void) {
        guard let arriving else {
            let bytes = fileURL.flatMap { try? $0.resourceValues(forKeys: [.fileSizeKey]).fileSize } ?? data.count
            return handler(Int64(bytes), nil)
        }
        arriving.body.whenEnded(handler)
    }

    /// The body still arriving, when there is one.
    var arrivingBody: (any ArrivingBody)? { arriving?.body }

    /// This head with `body` arriving after it; its `data` is empty.
    func arriving(_ body: any ArrivingBody) -> Response {
        var response = self
        response.data = Data()
        response.arriving = BodyOwner(body)
        return response
    }

    /// This response with its whole body in memory: what arrived of a streamed one, or `data` as it is.
    func whole(_ body: Data) -> Response {
        var response = self
        response.data = body
        response.arriving = nil
        return response
    }

    /// The response's `Set-Cookie` lines, each as the server sent it, where the backend saw them apart
    /// (CurlBackend); `nil` where it had them only joined with ", " (URLSession on Linux), which the realm's
    /// cookie jar then splits again by a guess (``CookieJar/splitCombinedSetCookie(_:)``).
    var setCookieLines: [String]? {
        get { parts.value.setCookieLines }
        set { unique().value.setCookieLines = newValue }
    }

    /// Where a response came from.
    public enum Source: Sendable, Hashable {
        /// The server, in full.
        case network
        /// A realm's ``HTTPCache``, without asking the server.
        case cache
        /// A realm's ``HTTPCache``, after the server confirmed it with a 304.
        case revalidated
    }

    /// Creates a response; backends and tests make these.
    public init(request: URLRequest, response: HTTPURLResponse, data: Data) {
        self.init(head: Head(.given(request), response), data: data)
    }

    /// A response of `head` and `data`.
    private init(head: Head, data: Data) {
        parts = CopyOnWriteBox(Parts(head: head, data: data))
    }

    /// A response whose body a streaming backend wrote to `fileURL` (``BackendRequest/downloadFile``).
    public init(request: URLRequest, response: HTTPURLResponse, fileURL: URL) {
        self.init(request: request, response: response, data: Data())
        self.fileURL = fileURL
    }

    /// Creates a response from its parts; `url` defaults to the request's.
    public init(
        request: URLRequest, statusCode: Int, headers: HTTPHeaderDictionary = [:], data: Data = Data(),
        url: URL? = nil
    ) {
        let url = url ?? request.url ?? .placeholder
        self.init(head: Head(.given(request), url: url, statusCode: statusCode, headers: headers), data: data)
    }

    /// A response from fields already read, as CurlBackend has them; `url` defaults to the request's.
    init(request: URLRequest, statusCode: Int, fields: HeaderFields, data: Data, url: URL? = nil) {
        let url = url ?? request.url ?? .placeholder
        self.init(head: Head(.given(request), url: url, statusCode: statusCode, fields: fields), data: data)
    }

    /// A response whose fields are parsed from the head's `lines` once asked for, as CurlBackend has them;
    /// `url` defaults to the request's.
    init(sent: SentRequest, statusCode: Int, lines: HeaderLines, data: Data, url: URL? = nil) {
        let url = url ?? sent.url ?? .placeholder
        self.init(head: Head(sent, url: url, statusCode: statusCode, lines: lines), data: data)
    }

    /// A response from fields already read and one more field whose name they lack, as the cache serves
    /// them: its stored fields with an `Age`.
    init(
        request: URLRequest, statusCode: Int, fields: HeaderFields, adding added: HeaderFields.Field,
        data: Data
    ) {
        let head = Head(
            .given(request), url: request.url ?? .placeholder, statusCode: statusCode, fields: fields,
            adding: added)
        self.init(head: head, data: data)
    }

    /// The HTTP status code.
    public var statusCode: Int { head.statusCode }

    /// The URL the response came from (the last hop's), without making the `HTTPURLResponse`.
    var url: URL { head.url }

    /// Every response header, as the cache stores them.
    var allHeaders: [String: String] { head.allHeaders }

    /// A response header's value; names compare case-insensitively, and a name the server repeated has its
    /// values joined with ", " (RFC 9110 §5.3).
    public func header(_ name: String) -> String? {
        head.header(name)
    }

    /// Decodes the body as JSON into `type`.
    /// - Throws: ``ServiceError/decoding(_:underlying:)`` carrying this response.
    public func decode<T: Decodable>(_ type: T.Type = T.self, decoder: JSONDecoder = JSONDecoder()) throws
        -> T
    {
        do {
            return try decoder.decode(type, from: data)
        } catch {
            throw ServiceError.decoding(self, underlying: error)
        }
    }

    /// The body as text in `encoding` (UTF-8 by default).
    /// - Throws: ``ServiceError/decoding(_:underlying:)`` when the bytes are not valid in that encoding.
    public func mapString(encoding: String.Encoding = .utf8) throws -> String {
        guard let string = String(data: data, encoding: encoding) else {
            throw ServiceError.decoding(
                self, underlying: BodyDecodingFailure("the body is not valid \(encoding) text"))
        }
        return string
    }

    /// The body parsed with `JSONSerialization`: dictionaries, arrays, strings, numbers and `NSNull`.
    /// - Throws: ``ServiceError/decoding(_:underlying:)`` when the body is not JSON.
    public func mapJSON() throws -> Any {
        do {
            return try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        } catch {
            throw ServiceError.decoding(self, underlying: error)
        }
    }

    /// `200 GET https://api.example.com/v1/user/info?uid=42 (57 bytes)`; `(streamed)` for a body still arriving.
    public var description: String {
        let body = arriving == nil ? "\(data.count) bytes" : "streamed"
        return
            "\(statusCode) \(request.httpMethod ?? "GET") \((request.url?.absoluteString ?? "?").abbreviatedURL) (\(body))"
    }
}

/// A ``Response``'s head and body, which it keeps in a ``CopyOnWriteBox``.
private struct Parts: Sendable {
    let head: Response.Head
    var data: Data
    var attempts = 1
    var source = Response.Source.network
    var fileURL: URL?
    var metrics: [TransferMetrics] = []
    var arriving: BodyOwner?
    var setCookieLines: [String]?
}

/// A body still arriving after its head, as a response carries it through the middleware chain to its reader.
protocol ArrivingBody: AnyObject, Sendable {
    /// Calls `handler` once when the body has ended: at once if it has.
    func whenEnded(_ handler: @escaping @Sendable (_ bytes: Int64, _ error: ServiceError?) -> Void)
    /// Stops the body: its reader hears `error`, and the transfer stops.
    func stop(with error: ServiceError)
    /// Stops the body as cancelled.
    func cancel()
    /// Whether a reader has started on it: that reader then owns the transfer.
    var isIterated: Bool { get }
    /// Calls `whole` with the whole body once it has arrived, when it arrives whole, within `limit` bytes,
    /// and no reader had taken any of it yet; nothing otherwise. The reader gets the body all the same.
    func whenWhole(upTo limit: Int, _ whole: @escaping @Sendable (Data) -> Void)
    /// Reads the rest of the body, up to `limit` bytes (the rest is left unread).
    func collect(limit: Int) async throws -> Data
}

/// Holds a body still arriving for the responses and the stream that carry it: when the last of them lets
/// go of a body no reader has started on — a retried attempt's, a refused head's, a stream never read — the
/// transfer stops at once and frees its connection.
final class BodyOwner: Sendable {
    let body: any ArrivingBody

    init(_ body: any ArrivingBody) {
        self.body = body
    }

    deinit {
        if !body.isIterated { body.cancel() }
    }
}

/// Why a body could not be turned into what was asked for.
struct BodyDecodingFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension Response {
    /// The response head: a ready `HTTPURLResponse`, or its parts and the response made from them once asked.
    final class Head: Sendable {
        /// The request, as a `URLRequest` only once asked for.
        private let sent: SentRequest
        var request: URLRequest { sent.urlRequest }
        let statusCode: Int
        let url: URL
        private let fields: HeaderFields
        /// A field after `fields`, kept apart so that fields shared by many responses (a cache entry's) are
        /// not copied to add it; its name is none of theirs.
        private let added: HeaderFields.Field?
        /// The head's lines as they came, when its fields are parsed from them once asked for (into
        /// `parsed`, under ``lock``).
        private let lines: HeaderLines?
        nonisolated(unsafe) private var parsed: HeaderFields?
        /// Whether the head was given as an `HTTPURLResponse`, which then holds its fields.
        private let isGiven: Bool
        /// The `HTTPURLResponse`, given or made once asked; under ``lock``.
        nonisolated(unsafe) private var made: HTTPURLResponse?
        /// For a head given as an `HTTPURLResponse`: its fields with the spellings of one name joined, made
        /// once asked; under ``lock``. FoundationNetworking keeps "X-A: 1" and "x-a: 2" as two entries, of
        /// which a lookup would find either.
        nonisolated(unsafe) private var joined: HeaderFields?

        private var lock: NSLock { SharedLocks.lock(for: self) }

        init(_ sent: SentRequest, _ response: HTTPURLResponse) {
            self.sent = sent
            statusCode = response.statusCode
            url = response.url ?? .placeholder
            fields = HeaderFields()
            added = nil
            lines = nil
            isGiven = true
            made = response
        }

        convenience init(_ sent: SentRequest, url: URL, statusCode: Int, headers: HTTPHeaderDictionary) {
            self.init(sent, url: url, statusCode: statusCode, fields: HeaderFields(unsorted: headers))
        }

        init(
            _ sent: SentRequest, url: URL, statusCode: Int, fields: HeaderFields,
            adding added: HeaderFields.Field? = nil
        ) {
            self.sent = sent
            self.statusCode = statusCode
            self.url = url
            self.fields = fields
            self.added = added
            lines = nil
            isGiven = false
        }

        init(_ sent: SentRequest, url: URL, statusCode: Int, lines: HeaderLines) {
            self.sent = sent
            self.statusCode = statusCode
            self.url = url
            fields = HeaderFields()
            added = nil
            self.lines = lines
            isGiven = false
        }

        /// The fields given, or parsed from the lines given.
        private var ownFields: HeaderFields {
            guard let lines else { return fields }
            return lock.withLock {
                if let parsed { return parsed }
                let fields = lines.fields
                parsed = fields
                return fields
            }
        }

        /// The given response's fields, one per name; spellings apart in it are joined in their sorted order
        /// (the order they came in is lost by then).
        private var givenFields: HeaderFields {
            lock.withLock {
                if let joined { return joined }
                var fields = HeaderFields()
                let entries = (made?.allHeaderFields ?? [:]).compactMap { name, value in
                    (name.base as? String).flatMap { name in (value as? String).map { (name, $0) } }
                }
                for (name, value) in entries.sorted(by: { $0.0 < $1.0 }) { fields.add(name, value) }
                joined = fields
                return fields
            }
        }

        /// `fields` and the added field, as a dictionary.
        private var dictionary: [String: String] {
            var dictionary = ownFields.dictionary
            if let added { dictionary[added.name] = added.value }
            return dictionary
        }

        var response: HTTPURLResponse {
            if let made = lock.withLock({ made }) { return made }
            // Made outside the lock, which parsing the fields takes too; the first one made is kept.
            let response = HTTPURLResponse(
                url: url, statusCode: statusCode, httpVersion: "HTTP/1.1", headerFields: dictionary
            )!
            return lock.withLock {
                if let made { return made }
                made = response
                return response
            }
        }

        /// Every header, without making the `HTTPURLResponse` when there is none yet (one made here holds
        /// these same fields).
        var allHeaders: [String: String] {
            if isGiven { return givenFields.dictionary }
            return dictionary
        }

        func header(_ name: String) -> String? {
            if isGiven { return givenFields.value(for: name) }
            if let added, HeaderFields.namesMatch(added.name, name) { return added.value }
            return ownFields.value(for: name)
        }
    }
}
