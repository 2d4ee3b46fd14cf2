import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The outcome of a CRUD call in the iService shape: each part is `nil` where there is none.
public struct ServiceResult: Sendable {
    /// The outcome as a `Result`.
    public let result: Result<Response, ServiceError>

    /// The request as sent; `nil` when it could not be built.
    public var request: URLRequest? {
        switch result {
        case let .success(response): response.request
        case let .failure(error): error.request
        }
    }

    /// The HTTP response, also for an unacceptable status.
    public var response: HTTPURLResponse? { responseValue?.response }

    /// The response body, also for an unacceptable status.
    public var data: Data? { responseValue?.data }

    /// The failure, if the call failed.
    public var error: ServiceError? {
        if case let .failure(error) = result { return error }
        return nil
    }

    private var responseValue: Response? {
        switch result {
        case let .success(response): response
        case let .failure(error): error.response
        }
    }
}

/// A CRUD call under way. It started when it was made; `then` and `value` only wait for it.
///
/// `then` may be called any number of times, before or after completion, and each closure runs once;
/// awaiting ``value`` any number of times sends nothing more. Closures run on the realm's callback
/// queue if it has one, otherwise where the backend answers (or at once, if it has answered already).
public final class ServicePromise: Sendable {
    private let exchange: Exchange
    private let callbackQueue: DispatchQueue?

    init(_ prepared: PreparedRequest) {
        exchange = prepared.makeExchange()
        callbackQueue = prepared.callbackQueue
        prepared.start(exchange)
    }

    init(failedWith error: ServiceError, callbackQueue: DispatchQueue?) {
        exchange = Exchange(failed: error)
        self.callbackQueue = callbackQueue
    }

    /// Runs `body` once with the outcome: when it arrives, or at once if it has.
    @discardableResult
    public func then(_ body: @escaping @Sendable (ServiceResult) -> Void) -> ServicePromise {
        exchange.wait(Exchange.waiter({ body(ServiceResult(result: $0)) }, on: callbackQueue))
        return self
    }

    /// The response; awaiting it again returns the same one.
    ///
    /// Cancelling the awaiting task ends this wait with ``ServiceError/cancelled(_:attempts:)``; it cancels the
    /// request too when nothing else (another wait or a `then`) is waiting for it.
    /// - Throws: ``ServiceError`` only.
    public var value: Response {
        get async throws { try await exchange.outcome(cancelling: false).get() }
    }

    /// The response body decoded from JSON into `type`.
    /// - Throws: ``ServiceError`` only.
    public func value<T: Decodable>(as type: T.Type, decoder: JSONDecoder = JSONDecoder()) async throws -> T {
        try await value.decode(type, decoder: decoder)
    }

    /// The outcome, if it has arrived.
    public var result: ServiceResult? {
        exchange.outcome.map(ServiceResult.init(result:))
    }

    /// Cancels the request; waiting closures and tasks get ``ServiceError/cancelled(_:attempts:)``.
    public func cancel() {
        exchange.cancel()
    }
}
