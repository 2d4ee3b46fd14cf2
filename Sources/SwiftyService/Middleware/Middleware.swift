import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A step that every request of a realm or endpoint passes through on its way to the backend and back.
///
/// A middleware gets the request and calls `next` to pass it on; it may change the request first, answer
/// without calling `next`, look at the response or the error `next` throws, or call `next` again (retry).
/// Write one for a cross-cutting concern (authentication, retries, logging, metrics); write a
/// ``NetworkBackend`` instead to change how bytes move.
///
/// Order: the realm's middleware in the order added (the first added is the outermost), then the
/// endpoint's, then the one-off override's; then the backend. `next` returns responses of every status —
/// statuses are judged after the whole chain — and throws ``ServiceError`` for transport failures,
/// timeouts and cancellation. What a middleware throws that is not a `ServiceError` reaches the caller as
/// ``ServiceError/transport(_:underlying:attempts:)``.
///
/// Every call takes the chain, whether its body is read whole or streamed. For a stream
/// (``SwiftyServiceProtocol/stream()``), `next` returns once the head has arrived: the response's
/// ``Response/isStreamed`` is `true`, its ``Response/data`` is empty, and the body goes to the stream's reader
/// after the chain; ``Response/whenBodyEnds(_:)`` tells when and how it ended. Calling `next` again (a retry)
/// is possible until the chain returns, which is before the first byte of body is handed out; a streamed
/// response a middleware drops stops its transfer.
public protocol Middleware: Sendable {
    /// Handles one request: usually adjusts it, calls `next`, and looks at what comes back.
    func intercept(_ request: URLRequest, context: RequestContext, next: MiddlewareNext) async throws
        -> Response
}

/// The rest of the chain after a middleware: the next middleware, or the backend. Call it like a
/// function, `try await next(request)`, as many times as needed.
public struct MiddlewareNext: Sendable {
    private let proceed: @Sendable (URLRequest) async throws -> Response

    init(_ proceed: @escaping @Sendable (URLRequest) async throws -> Response) {
        self.proceed = proceed
    }

    /// Passes `request` on and returns what comes back, whatever its status.
    /// - Throws: ``ServiceError`` for transport failures, timeouts and cancellation.
    public func callAsFunction(_ request: URLRequest) async throws -> Response {
        try await proceed(request)
    }
}

/// What a middleware may want to know about the request beyond the `URLRequest`.
public struct RequestContext: Sendable {
    /// The endpoint the request was built from, kept opaque here: ``endpoint`` reads it as what it is.
    let builtFrom: (any Sendable)?
    /// The CRUD method, if the request came from a ``Service``.
    public let crudMethod: CRUDMethod?
    /// What the realm declares secret.
    public let redaction: Redaction
    /// The call the request belongs to: its attempts, its trace, how its body is read.
    let call: CallState
    /// Where the call's events go, when the realm has observers.
    let events: EventEmitter?
    /// The attempts' metrics, when the realm collects them.
    let metricsLog: MetricsLog?

    /// How many times the request has been handed to the backend so far.
    public var attempts: Int { call.attempts }

    /// Whether the call is a stream (``SwiftyServiceProtocol/stream()``).
    @available(*, deprecated, message: "Look at the response: `isStreamed` says whether its body is still arriving")
    public var isStream: Bool { call.mode == .streamed }

    /// Calls `handler` each time an attempt of this call waits for a connection to its host, because the
    /// realm's (or the backend's) limit of connections to it are all in use; the attempt starts when one
    /// comes free. ``LoggingMiddleware`` logs it.
    public func whenWaitingForConnection(_ handler: @escaping @Sendable (ConnectionWait) -> Void) {
        call.whenWaitingForConnection(handler)
    }

    /// For a stream, calls `handler` once when its body has ended, with the bytes handed to the reader and
    /// the error that stopped it (`nil` when the body came whole); also, with the error, when the head the
    /// chain returned was refused. Never called for a call that is not a stream.
    @available(*, deprecated, message: "Use `whenBodyEnds(_:)` on the response `next` returned")
    public func whenStreamEnds(
        _ handler: @escaping @Sendable (_ bytes: Int64, _ error: ServiceError?) -> Void
    ) {
        call.whenStreamEnds(handler)
    }
}

/// One call as the chain sees it: how its body is read, the times it reached the backend across retries,
/// the trace its attempts share, and what decides whether two calls may share one trip to the backend.
final class CallState: Sendable {
    /// How a call's body is read.
    enum Mode: Sendable {
        /// Whole, into memory or a file, before the call returns.
        case buffered
        /// As it arrives, by the stream's reader after the chain has returned the head.
        case streamed
    }

    let mode: Mode
    /// Everything besides the request itself that decides what goes out and what is trusted (backend,
    /// TLS policy, cookie jar, limits): calls may share a trip only when these are equal; `nil` when the
    /// call must not share one.
    let sendingRules: (any Hashable & Sendable)?
    /// Where the call's events go, when the realm has observers.
    let events: EventEmitter?
    private let state = Locked.make(State())

    private struct State {
        var attempts = 0
        var trace: TraceContext?
        var streamEnds: [@Sendable (Int64, ServiceError?) -> Void] = []
        /// The attempts' bodies still arriving (streamed calls), until the chain is done.
        var bodies: [any ArrivingBody] = []
        var connectionWaits: [@Sendable (ConnectionWait) -> Void] = []
    }

    init(mode: Mode, sendingRules: (any Hashable & Sendable)? = nil, events: EventEmitter? = nil) {
        self.mode = mode
        self.sendingRules = sendingRules
        self.events = events
    }

    func whenWaitingForConnection(_ handler: @escaping @Sendable (ConnectionWait) -> Void) {
        state.withLock { $0.connectionWaits.append(handler) }
    }

    var attempts: Int { state.withLock { $0.attempts } }

    /// Counts an attempt; its number.
    func nextAttempt() -> Int {
        state.withLock { state in
            state.attempts += 1
            return state.attempts
        }
    }

    /// The call's trace: the one kept, or `make()`'s, kept from now on.
    func trace(_ make: () -> TraceContext) -> TraceContext {
        state.withLock { state in
            if let trace = state.trace { return trace }
            let trace = make()
            state.trace = trace
            return trace
        }
    }

    /// Keeps an attempt's body still arriving, until the chain has returned.
    func keep(_ body: any ArrivingBody) {
        state.withLock { $0.bodies.append(body) }
    }

    /// The chain has returned: every attempt's body but the answer's stops (a retried attempt's, one a
    /// middleware set aside), so that none holds its connection for nothing.
    func stopBodies(but answer: (any ArrivingBody)?) {
        let bodies = state.withLock { state in
            defer { state.bodies = [] }
            return state.bodies
        }
        for body in bodies where body !== answer { body.cancel() }
    }

    func whenStreamEnds(_ handler: @escaping @Sendable (Int64, ServiceError?) -> Void) {
        guard mode == .streamed else { return }
        state.withLock { $0.streamEnds.append(handler) }
    }

    /// The stream's body ended (or its head was refused): the handlers of ``whenStreamEnds(_:)`` hear it once.
    func streamEnded(bytes: Int64, error: ServiceError?) {
        let handlers = state.withLock { state in
            defer { state.streamEnds = [] }
            return state.streamEnds
        }
        for handler in handlers { handler(bytes, error) }
    }
}

/// Moya-style plugin hooks as a middleware: look at each request before it is sent and at each result.
///
/// ```swift
/// realm.addMiddleware(Hooks(
///     willSend: { request, _ in print("→", request.url!) },
///     didReceive: { result, _ in print("←", (try? result.get().statusCode) ?? -1) }))
/// ```
/// `didReceive` sees every response as a success, whatever its status, and failures as ``ServiceError``.
public struct Hooks: Middleware {
    private let willSend: @Sendable (URLRequest, RequestContext) -> Void
    private let didReceive: @Sendable (Result<Response, ServiceError>, RequestContext) -> Void

    /// Hooks called before each request is passed on and after its answer comes back.
    public init(
        willSend: @escaping @Sendable (URLRequest, RequestContext) -> Void = { _, _ in },
        didReceive: @escaping @Sendable (Result<Response, ServiceError>, RequestContext) -> Void = { _, _ in }
    ) {
        self.willSend = willSend
        self.didReceive = didReceive
    }

    /// Calls `willSend`, passes the request on, calls `didReceive`.
    public func intercept(_ request: URLRequest, context: RequestContext, next: MiddlewareNext) async throws
        -> Response
    {
        willSend(request, context)
        do {
            let response = try await next(request)
            didReceive(.success(response), context)
            return response
        } catch {
            didReceive(.failure(ServiceError(error, request: request, attempts: context.attempts)), context)
            throw error
        }
    }
}

/// What a backend reports while it works on one of the call's attempts reaches the call's observers and the
/// middleware that asked.
extension CallState: TransferReporting {
    func redirected(from: URL, to: URL, statusCode: Int) {
        events?.redirected(from: from, to: to, statusCode: statusCode)
    }

    func waitingForConnection(_ wait: ConnectionWait) {
        events?.waitingForConnection(wait)
        for handler in state.withLock({ $0.connectionWaits }) { handler(wait) }
    }
}
