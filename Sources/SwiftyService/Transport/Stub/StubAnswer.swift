import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension StubBackend {
    /// What a stub answers: a status, headers and a body, or a failure; optionally after a delay.
    public struct Answer: Sendable {
        /// The status code.
        public var statusCode: Int
        /// The response headers.
        public var headers: HTTPHeaderDictionary
        /// The body; `nil` answers with the endpoint's sample data.
        public var data: Data?
        /// The failure to report instead of a response.
        public var failure: (any Error)?
        /// How long to wait before answering; `nil` follows the stub's timing.
        public var delay: TimeInterval?
        /// The body in timed pieces, for ``ResponseStream``s; `data` is them joined, for plain requests.
        public var pieces: [Piece]?
        /// The socket a WebSocket handshake opens, scripted; see ``webSocket(_:subprotocol:)``.
        public var webSocketScript: WebSocketScript?

        /// An answer with these parts; without `data`, the endpoint's sample data.
        public init(statusCode: Int = 200, headers: HTTPHeaderDictionary = [:], data: Data? = nil) {
            self.statusCode = statusCode
            self.headers = headers
            self.data = data
        }

        /// `200` with the endpoint's sample data.
        public static let sampleData = Answer()

        /// An answer with `statusCode` and, optionally, a body.
        public static func status(_ statusCode: Int, data: Data? = Data()) -> Answer {
            Answer(statusCode: statusCode, data: data)
        }

        /// An answer with a JSON body.
        public static func json(_ json: String, statusCode: Int = 200) -> Answer {
            Answer(
                statusCode: statusCode, headers: ["Content-Type": "application/json"], data: Data(json.utf8))
        }

        /// A failure instead of a response, e.g. `URLError(.networkConnectionLost)`.
        public static func failure(_ error: any Error) -> Answer {
            var answer = Answer()
            answer.failure = error
            return answer
        }

        /// A `101` that opens a WebSocket which plays `steps`: messages the app receives, messages it must
        /// send, and the server's close.
        ///
        /// ```swift
        /// StubBackend().on(.path("/chat"), answer: .webSocket([
        ///     .receive(.text("welcome")), .expect(.text("hello")), .receive(.text("hi")), .close(.normalClosure),
        /// ]))
        /// ```
        public static func webSocket(_ steps: [WebSocketScript.Step], subprotocol: String? = nil) -> Answer {
            var answer = Answer(statusCode: 101, headers: subprotocol.map { ["Sec-WebSocket-Protocol": $0] } ?? [:])
            answer.webSocketScript = WebSocketScript(steps: steps, subprotocol: subprotocol)
            return answer
        }

        /// The request times out (``ServiceError/timedOut(_:attempts:)``).
        public static let timeout = failure(URLError(.timedOut))

        /// The connection is refused (``ServiceError/transport(_:underlying:attempts:)``).
        public static let connectionRefused = failure(URLError(.cannotConnectToHost))

        /// A body streamed in `chunks`, each `interval` seconds after the one before (after the head).
        public static func streamed(
            _ chunks: [Data], every interval: TimeInterval = 0, statusCode: Int = 200,
            headers: HTTPHeaderDictionary = [:]
        ) -> Answer {
            streamed(chunks.map { Piece($0, after: interval) }, statusCode: statusCode, headers: headers)
        }

        /// A body streamed in `pieces`, each after its own delay.
        public static func streamed(
            _ pieces: [Piece], statusCode: Int = 200, headers: HTTPHeaderDictionary = [:]
        ) -> Answer {
            var answer = Answer(
                statusCode: statusCode, headers: headers, data: Data(pieces.map(\.data).joined()))
            answer.pieces = pieces
            return answer
        }

        /// The same answer, given after `seconds`.
        public func delayed(_ seconds: TimeInterval) -> Answer {
            var answer = self
            answer.delay = seconds
            return answer
        }
    }

    /// A piece of a streamed body and how long after the one before it (or the head) it comes.
    public struct Piece: Sendable, Hashable {
        /// The bytes.
        public var data: Data
        /// The wait before it, in seconds.
        public var delay: TimeInterval

        /// `data`, `delay` seconds after the piece before it.
        public init(_ data: Data, after delay: TimeInterval = 0) {
            self.data = data
            self.delay = delay
        }
    }

    /// Which requests a stub rule answers.
    public struct Match: Sendable, CustomStringConvertible {
        let matches: @Sendable (BackendRequest) -> Bool

        init(matches: @escaping @Sendable (BackendRequest) -> Bool, description: String) {
            self.matches = matches
            self.description = description
        }
        /// What the rule matches, in words, for failure messages.
        public let description: String

        /// Requests that `predicate` accepts.
        public static func request(
            _ description: String = "a custom predicate",
            _ predicate: @escaping @Sendable (BackendRequest) -> Bool
        ) -> Match {
            Match(matches: predicate, description: description)
        }

        /// Every request.
        public static let any = Match(matches: { _ in true }, description: "any request")

        /// Requests whose URL path is `path` (e.g. `"/v1/user/info"`), with `method` if given.
        public static func path(_ path: String, method: HTTPMethod? = nil) -> Match {
            Match(
                matches: { request in
                    request.urlRequest.url?.path == path
                        && (method.map { $0.rawValue == (request.urlRequest.httpMethod ?? "GET") } ?? true)
                }, description: "\(method.map { "\($0) " } ?? "")\(path)")
        }

        /// CRUD requests of `crudMethod`, of any ``Service``.
        public static func crud(_ crudMethod: CRUDMethod) -> Match {
            Match(matches: { $0.crudMethod == crudMethod }, description: "CRUD .\(crudMethod)")
        }
    }
}
