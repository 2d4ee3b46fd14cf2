import Foundation
import SwiftyService

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Recorded HTTP exchanges, stored as readable JSON with a stable key order.
///
/// Bodies that are UTF-8 text are stored as text, anything else as base64. Secret headers and query
/// values are stored redacted (see ``/SwiftyService/Redaction``), so a cassette can be committed.
public struct Cassette: Codable, Sendable, Equatable {
    /// The format version, for readers of older cassettes.
    public var version = 1
    /// The exchanges, in the order they happened.
    public var interactions: [Interaction] = []

    /// An empty cassette.
    public init() {}

    /// One request and what came back: a response or a failure.
    public struct Interaction: Codable, Sendable, Equatable {
        /// The request as sent, secrets redacted.
        public var request: RecordedRequest
        /// The response, if the server answered.
        public var response: RecordedResponse?
        /// The failure, if it did not.
        public var error: RecordedError?
        /// What a WebSocket handshake's socket did after its `101`, if the request was one.
        public var webSocket: RecordedWebSocket?

        /// An exchange: a request and its response, or its failure.
        public init(
            request: RecordedRequest, response: RecordedResponse? = nil, error: RecordedError? = nil,
            webSocket: RecordedWebSocket? = nil
        ) {
            self.request = request
            self.response = response
            self.error = error
            self.webSocket = webSocket
        }
    }

    /// A request as sent.
    public struct RecordedRequest: Codable, Sendable, Equatable {
        /// `GET`, `POST`…
        public var method: String
        /// The URL, secret query values redacted.
        public var url: String
        /// The headers SwiftyService set, secret values redacted.
        public var headers: [String: String]
        /// The body, if any.
        public var body: Body?

        /// A request as sent.
        public init(method: String, url: String, headers: [String: String] = [:], body: Body? = nil) {
            self.method = method
            self.url = url
            self.headers = headers
            self.body = body
        }
    }

    /// A response as received.
    public struct RecordedResponse: Codable, Sendable, Equatable {
        /// The status code.
        public var status: Int
        /// The headers, secret values redacted.
        public var headers: [String: String]
        /// The body, if not empty.
        public var body: Body?
        /// For a streamed response, how its body arrived: the chunks' sizes and times (the bytes are
        /// `body`'s, redacted as a whole); `nil` for a response read whole.
        public var chunks: [RecordedChunk]?

        /// A response as received.
        public init(
            status: Int, headers: [String: String] = [:], body: Body? = nil, chunks: [RecordedChunk]? = nil
        ) {
            self.status = status
            self.headers = headers
            self.body = body
            self.chunks = chunks
        }
    }

    /// One chunk of a streamed body: how many bytes, and when, in seconds after the head.
    public struct RecordedChunk: Codable, Sendable, Equatable {
        /// Seconds after the head.
        public var at: TimeInterval
        /// Bytes.
        public var size: Int

        /// `size` bytes, `at` seconds after the head.
        public init(at: TimeInterval, size: Int) {
            self.at = at
            self.size = size
        }
    }

    /// A failure as reported by the backend.
    public struct RecordedError: Codable, Sendable, Equatable {
        /// The error domain, e.g. `NSURLErrorDomain`.
        public var domain: String
        /// The code within the domain, e.g. `-1001` for a timeout.
        public var code: Int
        /// What it said.
        public var description: String

        /// A failure as reported.
        public init(domain: String, code: Int, description: String) {
            self.domain = domain
            self.code = code
            self.description = description
        }
    }

    /// A body: text when it is UTF-8, base64 otherwise.
    public enum Body: Codable, Sendable, Equatable {
        /// UTF-8 text, stored as is.
        case text(String)
        /// Anything else.
        case base64(Data)

        /// Text when `data` is printable UTF-8, base64 otherwise; `nil` for no data.
        public init?(_ data: Data?) {
            guard let data, !data.isEmpty else { return nil }
            if let text = String(data: data, encoding: .utf8),
                text.unicodeScalars.allSatisfy({ $0.value >= 0x20 || $0 == "\n" || $0 == "\r" || $0 == "\t" })
            {
                self = .text(text)
            } else {
                self = .base64(data)
            }
        }

        /// The bytes.
        public var data: Data {
            switch self {
            case let .text(text): Data(text.utf8)
            case let .base64(data): data
            }
        }

        private enum CodingKeys: String, CodingKey { case text, base64 }

        /// Reads `{"text": …}` or `{"base64": …}`.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            if let text = try container.decodeIfPresent(String.self, forKey: .text) {
                self = .text(text)
            } else {
                self = .base64(try container.decode(Data.self, forKey: .base64))
            }
        }

        /// Writes `{"text": …}` or `{"base64": …}`.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            switch self {
            case let .text(text): try container.encode(text, forKey: .text)
            case let .base64(data): try container.encode(data, forKey: .base64)
            }
        }
    }

    /// Reads a cassette file.
    /// - Throws: ``CassetteError`` naming the file and what is wrong with it.
    public static func load(from file: URL) throws -> Cassette {
        let data: Data
        do {
            data = try Data(contentsOf: file)
        } catch {
            throw CassetteError(file: file, problem: "cannot be read (\(error.localizedDescription))")
        }
        do {
            return try JSONDecoder().decode(Cassette.self, from: data)
        } catch let error as DecodingError {
            throw CassetteError(file: file, problem: Self.describe(error))
        } catch {
            throw CassetteError(file: file, problem: "is not a cassette (\(error))")
        }
    }

    /// Writes the cassette to `file` atomically: a crash mid-write leaves the previous file intact.
    public func write(to file: URL) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        try FileManager.default.createDirectory(
            at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try encoder.encode(self).write(to: file, options: .atomic)
    }

    private static func describe(_ error: DecodingError) -> String {
        func at(_ context: DecodingError.Context) -> String {
            let path = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }
                .joined()
            return path.isEmpty ? "" : " at \(path)"
        }
        switch error {
        case let .dataCorrupted(context):
            return "is not valid JSON, or is cut short\(at(context)): \(context.debugDescription)"
        case let .keyNotFound(key, context):
            return "lacks \"\(key.stringValue)\"\(at(context))"
        case let .typeMismatch(_, context), let .valueNotFound(_, context):
            return "has a wrong value\(at(context)): \(context.debugDescription)"
        @unknown default:
            return "is not a cassette (\(error))"
        }
    }
}

/// A cassette file that cannot be used, and why.
public struct CassetteError: Error, CustomStringConvertible, Equatable {
    /// The file.
    public let file: URL
    /// What is wrong with it.
    public let problem: String

    /// `cassette /path/to/file.json is not valid JSON, or is cut short: …`
    public var description: String { "cassette \(file.path) \(problem)" }
}

extension Cassette.Interaction {
    /// The exchange, with the request's and the response's secrets redacted.
    ///
    /// The values of the request's secret headers and query parameters are also scrubbed from the bodies
    /// and response headers: a server that echoes them (httpbin does) would otherwise store them.
    init(_ request: BackendRequest, _ result: Result<Response, any Error>, redaction: Redaction) {
        let urlRequest = request.urlRequest
        var secrets = redaction.secretValues(in: urlRequest)
        // A cookie a response sets is as secret as one a request sends, wherever else it shows up.
        if case let .success(response) = result, let setCookie = response.header("Set-Cookie") {
            // Each line's first pair is the cookie; the rest are attributes (Path, Expires…), not secrets.
            secrets += CookieJar.splitCombinedSetCookie(setCookie).compactMap {
                Redaction.cookieValues(String($0.prefix { $0 != ";" })).first
            }
        }
        let scrub = Scrubber(secrets: secrets)
        self.request = Cassette.RecordedRequest(
            method: urlRequest.httpMethod ?? "GET",
            url: urlRequest.url.map { redaction.redacting($0).absoluteString } ?? "",
            headers: redaction.redacting(headers: urlRequest.allHTTPHeaderFields ?? [:]),
            body: Cassette.Body(urlRequest.httpBody.map(scrub.data)))
        switch result {
        case let .success(response):
            var headers: [String: String] = [:]
            for case let (name as String, value as String) in response.response.allHeaderFields {
                headers[name] = scrub.string(value)
            }
            self.response = Cassette.RecordedResponse(
                status: response.statusCode, headers: redaction.redacting(headers: headers),
                body: Cassette.Body(scrub.data(response.data)))
            self.error = nil
        case let .failure(error):
            let nsError = error as NSError
            self.response = nil
            self.error = Cassette.RecordedError(
                domain: nsError.domain, code: nsError.code, description: String(describing: error))
        }
    }

    /// What the backend answered, rebuilt for `request`.
    func replay(for request: URLRequest) -> Result<Response, any Error> {
        if let response {
            return .success(
                Response(
                    request: request, statusCode: response.status, headers: response.headers,
                    data: response.body?.data ?? Data()))
        }
        let recorded =
            error ?? Cassette.RecordedError(domain: "SwiftyServiceTesting", code: 0, description: "no answer")
        if recorded.domain == NSURLErrorDomain, let code = URLError.Code(rawValue: recorded.code) {
            return .failure(URLError(code))
        }
        return .failure(ReplayedFailure(description: recorded.description))
    }
}

/// A recorded failure that was not a `URLError`, replayed.
public struct ReplayedFailure: Error, CustomStringConvertible {
    /// What the original failure said.
    public let description: String
}

/// Replaces every occurrence of the secret values sent with a request by the redaction placeholder.
struct Scrubber {
    let secrets: [Data]
    private let placeholder = Data(Redaction.headerPlaceholder.utf8)

    init(secrets: [String]) {
        // Longest first, so that a secret containing another is replaced whole.
        self.secrets = secrets.filter { $0.utf8.count >= 4 }.sorted { $0.utf8.count > $1.utf8.count }
            .map { Data($0.utf8) }
    }

    func data(_ data: Data) -> Data {
        guard !secrets.isEmpty else { return data }
        var result = data
        for secret in secrets {
            var searchStart = result.startIndex
            while let range = result.range(of: secret, in: searchStart..<result.endIndex) {
                result.replaceSubrange(range, with: placeholder)
                searchStart = range.lowerBound + placeholder.count
            }
        }
        return result
    }

    func string(_ string: String) -> String {
        guard !secrets.isEmpty else { return string }
        return String(decoding: data(Data(string.utf8)), as: UTF8.self)
    }
}
