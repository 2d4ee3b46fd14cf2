import Foundation

/// What a ``StubBackend``'s WebSocket does, step by step, for app tests without a server.
public struct WebSocketScript: Sendable, Hashable {
    /// One step of the script, in order.
    public enum Step: Sendable, Hashable {
        /// The app receives this message (once the expected messages before it were sent).
        case receive(WebSocketMessage)
        /// The app must send this message next; anything else fails its `send` with ``Mismatch``.
        case expect(WebSocketMessage)
        /// The server closes with this code and reason: the app's message sequence ends.
        case close(WebSocketCloseCode, reason: String = "")
        /// The socket fails with this error after the messages before it.
        case fail(WebSocketError)
    }

    /// A message the app sent that the script did not expect.
    public struct Mismatch: Error, Sendable, Hashable, CustomStringConvertible {
        /// What the script expected next, if anything.
        public let expected: WebSocketMessage?
        /// What the app sent.
        public let sent: WebSocketMessage
        /// `the scripted WebSocket expected …, the app sent …`
        public var description: String {
            "the scripted WebSocket expected \(expected.map { "\($0)" } ?? "no message"), the app sent \(sent)"
        }
    }

    /// The steps, in order.
    public var steps: [Step]
    /// The subprotocol the stub's server "chose".
    public var subprotocol: String?

    /// A script of `steps`, played in order.
    public init(steps: [Step], subprotocol: String? = nil) {
        self.steps = steps
        self.subprotocol = subprotocol
    }
}

/// What a socket did, as ``BackendRequest/observeWebSocket(_:)`` reports it.
public enum WebSocketActivity: Sendable, Hashable {
    /// A step of the conversation, as a ``WebSocketScript`` would play it back: a message received
    /// (``WebSocketScript/Step/receive(_:)``) or sent (``WebSocketScript/Step/expect(_:)``), the server's close,
    /// a failure.
    case step(WebSocketScript.Step)
    /// The socket has ended; nothing follows.
    case ended
}
