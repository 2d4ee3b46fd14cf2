import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How ``SwiftyServiceProtocol/serverSentEvents(reconnecting:maxEventSize:)`` reconnects, as `EventSource`
/// does: after a dropped connection, a timeout or a stream the server ended, it sends the request again
/// through the realm's middleware with `Last-Event-ID`, after the server's `retry` or ``delay``.
public struct EventReconnection: Sendable, Hashable {
    /// The wait before reconnecting until the server sends a `retry`: 3 s by default, as browsers wait.
    public var delay: TimeInterval
    /// The most reconnections in a row without an event in between; past it the last failure is thrown —
    /// the error that ended the last connection, or ``EventStreamEnded`` when the server ended it cleanly.
    public var maxAttempts: Int

    /// A policy that waits `delay` seconds (until the server says otherwise) and tries `maxAttempts` times.
    public init(delay: TimeInterval = 3, maxAttempts: Int = 5) {
        self.delay = delay
        self.maxAttempts = maxAttempts
    }

    /// 3 s, 5 attempts.
    public static let `default` = EventReconnection()
}

extension SwiftyServiceProtocol {
    /// The endpoint's server-sent events across reconnections: when the connection drops, times out or the
    /// server ends the stream, the request is sent again (through the realm's middleware, so token refresh
    /// and retries apply) with `Last-Event-ID` set to the parser's ``ServerSentEventParser/lastEventID``
    /// (the ID as of the last blank line read, all events before it handed out), after the server's
    /// `retry`.
    ///
    /// It ends when the server answers 204; it throws on a refused status, a line or event past its limit
    /// (after the events before it), cancellation, or after `policy.maxAttempts` reconnections in a row
    /// without an event: then the error that ended the last connection, or ``EventStreamEnded`` when the
    /// server ended it cleanly.
    public func serverSentEvents(
        reconnecting policy: EventReconnection = .default,
        maxEventSize: Int = ServerSentEventParser.defaultMaxEventSize
    ) -> ReconnectingEvents {
        let endpoint = self
        return ReconnectingEvents(policy: policy, maxEventSize: maxEventSize) { lastEventID in
            guard !lastEventID.isEmpty else { return try await endpoint.stream() }
            return try await endpoint.override { $0.addHeader("Last-Event-ID", withValue: lastEventID) }
                .stream()
        }
    }
}

/// The server kept ending an event stream cleanly without sending an event, more times in a row than
/// ``EventReconnection/maxAttempts`` allows; thrown as ``ServiceError/transport(_:underlying:attempts:)``.
public struct EventStreamEnded: Error, Sendable, CustomStringConvertible {
    /// The connections in a row that the server ended without an event: the first and each reconnection.
    public let connections: Int

    /// `the server ended the event stream 6 times in a row without an event`
    public var description: String {
        "the server ended the event stream \(connections) times in a row without an event"
    }
}

/// Server-sent events that outlive their connections; see
/// ``SwiftyServiceProtocol/serverSentEvents(reconnecting:maxEventSize:)``.
public struct ReconnectingEvents: AsyncSequence, Sendable {
    /// One event.
    public typealias Element = ServerSentEvent

    let policy: EventReconnection
    let maxEventSize: Int
    let open: @Sendable (_ lastEventID: String) async throws -> ResponseStream

    /// Reads the events, reconnecting as needed.
    public func makeAsyncIterator() -> Iterator {
        Iterator(events: self, parser: ServerSentEventParser(maxEventSize: maxEventSize))
    }

    /// Reads events from one connection after another.
    public struct Iterator: AsyncIteratorProtocol {
        let events: ReconnectingEvents
        var parser: ServerSentEventParser
        var chunks: ResponseStream.Iterator?
        var ready: [ServerSentEvent] = []
        var index = 0
        /// An event past its limit, thrown once the events before it are out.
        var failure: StreamItemTooLarge?
        var lastRequest: URLRequest?
        /// Reconnections since the last event.
        var failures = 0
        var connected = false
        var finished = false

        init(events: ReconnectingEvents, parser: ServerSentEventParser) {
            self.events = events
            self.parser = parser
        }

        /// The next event; `nil` once the server answered 204.
        /// - Throws: ``ServiceError`` only.
        public mutating func next() async throws -> ServerSentEvent? {
            while true {
                if index < ready.count {
                    let event = ready[index]
                    index += 1
                    failures = 0
                    return event
                }
                if let failure {
                    self.failure = nil
                    finished = true
                    chunks = nil
                    throw ServiceError.transport(lastRequest ?? Self.unknown, underlying: failure)
                }
                if finished { return nil }
                guard var current = chunks else {
                    try await connect()
                    continue
                }
                do {
                    if let chunk = try await current.next() {
                        chunks = current
                        (ready, failure) = parser.events(in: chunk)
                        index = 0
                    } else {
                        try dropped(nil)
                    }
                } catch let error as ServiceError {
                    try dropped(error)
                }
            }
        }

        /// The connection ended, cleanly (`nil`) or not: reconnect if the error allows and attempts remain.
        private mutating func dropped(_ error: ServiceError?) throws {
            chunks = nil
            parser.restart()
            failures += 1
            guard let error else {
                guard failures <= events.policy.maxAttempts else {
                    finished = true
                    throw ServiceError.transport(
                        lastRequest ?? Self.unknown, underlying: EventStreamEnded(connections: failures))
                }
                return
            }
            guard Self.reconnects(after: error), failures <= events.policy.maxAttempts else {
                finished = true
                throw error
            }
        }

        private mutating func connect() async throws {
            if connected {
                let seconds = parser.reconnectionTime.map { Double($0) / 1000 } ?? events.policy.delay
                do {
                    try await Task.sleep(nanoseconds: UInt64(Swift.max(0, Swift.min(seconds, 86_400)) * 1e9))
                } catch {
                    finished = true
                    throw ServiceError.cancelled(lastRequest ?? Self.unknown)
                }
            }
            connected = true
            do {
                // Every event the parser dispatched has been handed out by now: its last event ID is the one
                // to resume from (an `id`-only block included, as the standard says).
                let stream = try await events.open(parser.lastEventID)
                lastRequest = stream.response.request
                if stream.response.statusCode == 204 {
                    finished = true
                    return
                }
                chunks = stream.makeAsyncIterator()
            } catch let error as ServiceError {
                lastRequest = lastRequest ?? error.request
                try dropped(error)
            }
        }

        /// Whether a reconnection may help: the network or the server's silence, not a refusal or the caller.
        private static func reconnects(after error: ServiceError) -> Bool {
            switch error {
            case .timedOut: true
            case let .transport(_, underlying, _): !(underlying is StreamItemTooLarge)
            default: false
            }
        }

        private static let unknown = URLRequest(url: .placeholder)
    }
}
