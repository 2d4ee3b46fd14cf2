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

    /// How many times the request has been handed to the backend so far.
    public var attempts: Int { counter.value }
}

/// Counts the times one call reached the backend, across retries.
final class AttemptCounter: Sendable {
    private let count = Locked.make(0)

    var value: Int { count.value }

    func increment() -> Int {
        count.withLock { count in
            count += 1
            return count
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
