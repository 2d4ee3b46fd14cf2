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
    let counter: AttemptCounter
    /// Where the call's events go, when the realm has observers.
    let events: EventEmitter?
    /// The attempts' metrics, when the realm collects them.
    let metricsLog: MetricsLog?
    /// For a streamed call, who hears of the end of its body.
    var streamEnd: StreamEndHandlers? = nil
    /// Who hears that an attempt waits for a connection (ConnectionLimit.swift).
    let connectionWaits = ConnectionWaitListeners()

    /// How many times the request has been handed to the backend so far.
    public var attempts: Int { counter.value }

    /// Whether the call is a stream (``SwiftyServiceProtocol/stream()``): the response the chain returns is
    /// its head, and the body comes after the chain is done.
    public var isStream: Bool { streamEnd != nil }

    /// Calls `handler` each time an attempt of this call waits for a connection to its host, because the
    /// realm's (or the backend's) limit of connections to it are all in use; the attempt starts when one
    /// comes free. ``LoggingMiddleware`` logs it.
    public func whenWaitingForConnection(_ handler: @escaping @Sendable (ConnectionWait) -> Void) {
        connectionWaits.add(handler)
    }

    /// For a stream, calls `handler` once when its body has ended: with the bytes handed to the reader, and
    /// the error that stopped it (`nil` when the body came whole). It is also called, with the error, when
    /// the head the chain returned was refused. Never called for a call that is not a stream.
    public func whenStreamEnds(
        _ handler: @escaping @Sendable (_ bytes: Int64, _ error: ServiceError?) -> Void
    ) {
        streamEnd?.add(handler)
    }
}

/// The handlers of one streamed call's end, called once.
final class StreamEndHandlers: Sendable {
    private let handlers = Locked.make([@Sendable (Int64, ServiceError?) -> Void]())

    func add(_ handler: @escaping @Sendable (Int64, ServiceError?) -> Void) {
        handlers.withLock { $0.append(handler) }
    }

    /// Calls every handler once; later calls do nothing.
    func end(bytes: Int64, error: ServiceError?) {
        let taken = handlers.withLock { handlers in
            defer { handlers = [] }
            return handlers
        }
        for handler in taken { handler(bytes, error) }
    }
}

/// Counts the times one call reached the backend, across retries; and keeps the call's trace, which every
/// attempt shares.
final class AttemptCounter: Sendable {
    private struct State {
        var count = 0
        var trace: TraceContext?
    }

    private let state = Locked.make(State())

    var value: Int { state.withLock { $0.count } }

    func increment() -> Int {
        state.withLock { state in
            state.count += 1
            return state.count
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
