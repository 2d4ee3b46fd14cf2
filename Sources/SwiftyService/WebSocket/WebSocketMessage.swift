import Foundation

/// One whole WebSocket message, however many frames it came in.
public enum WebSocketMessage: Sendable, Hashable {
    /// A text message (validated as UTF-8).
    case text(String)
    /// A binary message.
    case binary(Data)
}

/// The status code of a WebSocket close frame (RFC 6455, section 7.4).
public struct WebSocketCloseCode: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The code as sent on the wire.
    public let rawValue: UInt16

    /// A close code; any value, though only 1000-1003, 1007-1014 and 3000-4999 may be sent.
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// 1000: the purpose of the connection is fulfilled.
    public static let normalClosure = WebSocketCloseCode(rawValue: 1000)
    /// 1001: the endpoint is going away (a server shutting down, a page left).
    public static let goingAway = WebSocketCloseCode(rawValue: 1001)
    /// 1002: the peer broke the protocol.
    public static let protocolError = WebSocketCloseCode(rawValue: 1002)
    /// 1003: a kind of data the endpoint cannot accept.
    public static let unsupportedData = WebSocketCloseCode(rawValue: 1003)
    /// 1005: the close frame carried no code (never sent on the wire).
    public static let noStatusReceived = WebSocketCloseCode(rawValue: 1005)
    /// 1006: the connection ended without a close frame (never sent on the wire).
    public static let abnormalClosure = WebSocketCloseCode(rawValue: 1006)
    /// 1007: a text message was not valid UTF-8.
    public static let invalidFramePayloadData = WebSocketCloseCode(rawValue: 1007)
    /// 1008: a message broke the endpoint's policy.
    public static let policyViolation = WebSocketCloseCode(rawValue: 1008)
    /// 1009: a message was larger than the endpoint accepts.
    public static let messageTooBig = WebSocketCloseCode(rawValue: 1009)
    /// 1010: the server did not agree to an extension the client needs.
    public static let mandatoryExtension = WebSocketCloseCode(rawValue: 1010)
    /// 1011: the server met an unexpected condition.
    public static let internalServerError = WebSocketCloseCode(rawValue: 1011)

    /// Whether the code may appear in a close frame (RFC 6455, 7.4.1 and the IANA registry).
    var mayBeSent: Bool {
        switch rawValue {
        case 1000...1003, 1007...1014, 3000...4999: true
        default: false
        }
    }

    /// `1000 (normal closure)`, or the bare number for codes without a name.
    public var description: String {
        let names: [UInt16: String] = [
            1000: "normal closure", 1001: "going away", 1002: "protocol error", 1003: "unsupported data",
            1005: "no status received", 1006: "abnormal closure", 1007: "invalid frame payload data",
            1008: "policy violation", 1009: "message too big", 1010: "mandatory extension",
            1011: "internal server error",
        ]
        return names[rawValue].map { "\(rawValue) (\($0))" } ?? "\(rawValue)"
    }
}

/// Why a WebSocket failed; thrown as the underlying error of ``ServiceError/transport(_:underlying:attempts:)``.
public enum WebSocketError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The server answered the handshake with a 101 that is not a valid WebSocket upgrade.
    case handshakeFailed(String)
    /// The server broke RFC 6455; the socket was closed with `code` (1002, or 1007 for invalid UTF-8).
    case protocolViolation(code: WebSocketCloseCode, reason: String)
    /// A message was larger than ``WebSocketOptions/maximumMessageSize``; the socket was closed with 1009
    /// and nothing past the limit was read.
    case messageTooBig(limit: Int)
    /// The server did not answer a keep-alive ping in time; the connection was dropped.
    case pingTimedOut
    /// The connection ended without a close handshake (1006).
    case connectionLost(String)
    /// The backend cannot open WebSockets on this platform.
    case unsupportedBackend(String)
    /// The WebSocket was closed (by either side) before the message could be sent.
    case closed

    /// The code of the close frame the library sent the server because of this failure, if it sent one.
    public var closeCode: WebSocketCloseCode? {
        switch self {
        case let .protocolViolation(code, _): code
        case .messageTooBig: .messageTooBig
        default: nil
        }
    }

    /// What went wrong, in one line.
    public var description: String {
        switch self {
        case let .handshakeFailed(reason): "the WebSocket handshake failed: \(reason)"
        case let .protocolViolation(code, reason): "the server broke the WebSocket protocol (\(code)): \(reason)"
        case let .messageTooBig(limit): "a WebSocket message is larger than the limit of \(limit) bytes"
        case .pingTimedOut: "the server did not answer a WebSocket ping in time"
        case let .connectionLost(reason): "the WebSocket connection ended without a close handshake: \(reason)"
        case let .unsupportedBackend(reason): reason
        case .closed: "the WebSocket is closed"
        }
    }
}
