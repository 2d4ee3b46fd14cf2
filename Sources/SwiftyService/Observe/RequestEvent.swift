import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Something that happened to one request: built, an attempt started, redirected, answered, retried,
/// finished. A realm's observers (``RealmConfiguration/addObserver(_:)``) get every event of every request,
/// each exactly once and, for one request, in the order they happened.
public struct RequestEvent: Sendable {
    /// The request the event is about: every event of one call carries the same.
    public let requestID: RequestID
    /// What happened.
    public let kind: Kind
    /// When it happened.
    public let date: Date

    /// What happened to a request.
    public enum Kind: Sendable {
        /// The request was built and is about to be sent, as this `URLRequest` (before middleware).
        case built(URLRequest)
        /// An attempt went to the backend, as this `URLRequest` (after middleware; secrets as sent).
        case attemptStarted(attempt: Int, URLRequest)
        /// A redirect was followed, from one URL to the next (the next hop's secrets stripped already).
        case redirected(from: URL, to: URL, statusCode: Int)
        /// The attempt waits for a connection to its host: as many as the realm's (or the backend's) limit
        /// allows are in use, and it starts when one comes free (``RealmConfiguration/setMaxConnectionsPerHost(_:)``).
        case waitingForConnection(ConnectionWait)
        /// An attempt's response head arrived.
        case responseHead(attempt: Int, HTTPURLResponse)
        /// A retry was scheduled after `attempt`, to start after `delay` seconds, for `reason`.
        case retryScheduled(attempt: Int, delay: TimeInterval, reason: String)
        /// A token refresh began, because a request was refused or its token had expired.
        case tokenRefreshStarted
        /// The token refresh ended.
        case tokenRefreshEnded(succeeded: Bool)
        /// The answer came from the realm's HTTP cache, without asking the server.
        case cacheHit
        /// The server confirmed the cached answer (304).
        case cacheRevalidated
        /// The call succeeded; `Response.metrics` holds every attempt's metrics when they were collected.
        case completed(Response)
        /// The call failed; `metrics` holds the attempts' metrics that were collected.
        case failed(ServiceError, metrics: [TransferMetrics])
        /// The WebSocket this call opened (after its `completed` with the `101`) has ended, as the app saw it: its
        /// reader got the end or the failure, its `close` returned, or it was let go. Comes once, last.
        case webSocketEnded(WebSocketSummary)
    }
}

/// What an open WebSocket did, told once it has ended (``RequestEvent/Kind/webSocketEnded(_:)``): how it ended,
/// and how much went each way. Enough to log a session or to decide whether to open the socket again.
public struct WebSocketSummary: Sendable {
    /// The code of the server's close frame, when it sent one that carried a code.
    public let closeCode: WebSocketCloseCode?
    /// The reason in the server's close frame, when it sent one.
    public let closeReason: String?
    /// What ended the socket, when it did not end with a close handshake.
    public let error: ServiceError?
    /// The messages the app sent, and their payload bytes (before compression).
    public let messagesSent: Int
    /// The payload bytes of the messages sent.
    public let bytesSent: Int
    /// The messages the app received, and their payload bytes (after decompression).
    public let messagesReceived: Int
    /// The payload bytes of the messages received.
    public let bytesReceived: Int
    /// The time from the `101` answer to the end.
    public let duration: TimeInterval
}

/// Identifies one call across its events: unique within the process.
public struct RequestID: Sendable, Hashable, CustomStringConvertible {
    /// The number, counting from 1 in the order calls were sent.
    public let value: UInt64

    /// `#42`.
    public var description: String { "#\(value)" }
}

/// Watches a realm's requests. Events arrive on whichever thread the request is on at the time: keep the
/// work short (hand it to a queue or a task), and do not wait for the request from here.
///
/// ```swift
/// struct PhaseLog: RequestObserver {
///     func observe(_ event: RequestEvent) {
///         if case let .completed(response) = event.kind, let last = response.metrics.last {
///             print(event.requestID, response.statusCode, last)   // #7 200 dns 3 ms · connect 1 ms · …
///         }
///     }
/// }
/// ServiceRealm.get("users").addObserver(PhaseLog())
/// ```
public protocol RequestObserver: Sendable {
    /// Called once for each event of each request of the realm.
    func observe(_ event: RequestEvent)
}

/// An observer made of a closure: `realm.addObserver(EventHandler { event in … })`.
public struct EventHandler: RequestObserver {
    private let handle: @Sendable (RequestEvent) -> Void

    /// An observer that calls `handle` with each event.
    public init(_ handle: @escaping @Sendable (RequestEvent) -> Void) {
        self.handle = handle
    }

    /// Calls the closure.
    public func observe(_ event: RequestEvent) {
        handle(event)
    }
}
