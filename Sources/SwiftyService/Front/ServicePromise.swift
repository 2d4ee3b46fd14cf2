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
    /// The realm's or override's decoder, for typed reads.
    private let decoder: JSONDecoder?

    init(_ prepared: PreparedRequest) {
        let call = prepared.makeCall()
        exchange = call.exchange
        callbackQueue = prepared.callbackQueue
        decoder = prepared.decoder
        prepared.start(call)
    }

    init(failedWith error: ServiceError, callbackQueue: DispatchQueue?) {
        exchange = Exchange(failed: error)
        self.callbackQueue = callbackQueue
        decoder = nil
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

    /// The response body decoded from JSON into `type`, whole or at `keyPath` (`"data"`), with `decoder`
    /// or else the realm's (``ServiceRealm/setDecoder(_:)``).
    /// - Throws: ``ServiceError`` only; ``ServiceError/decoding(_:underlying:)`` with a ``DecodingFailure``.
    public func value<T: Decodable>(
        as type: T.Type, atKeyPath keyPath: String? = nil, decoder: JSONDecoder? = nil
    )
        async throws -> T
    {
        let response = try await value
        return try response.decode(
            type, atKeyPath: keyPath, decoder: decoder ?? self.decoder, source: Self.call(response))
    }

    /// Runs `body` once with the body decoded into `type` (whole or at `keyPath`) or the failure, as
    /// ``then(_:)`` does.
    @discardableResult
    public func then<T: Decodable & Sendable>(
        as type: T.Type, atKeyPath keyPath: String? = nil,
        _ body: @escaping @Sendable (Result<T, ServiceError>) -> Void
    ) -> ServicePromise {
        let decoder = decoder
        exchange.wait(
            Exchange.waiter(
                { outcome in
                    body(
                        outcome.flatMap { response in
                            Result { () throws(ServiceError) in
                                try response.decode(
                                    type, atKeyPath: keyPath, decoder: decoder, source: Self.call(response))
                            }
                        })
                }, on: callbackQueue))
        return self
    }

    /// `GET https://…/users/1`: the call, as decoding failures name it.
    private static func call(_ response: Response) -> String {
        "\(response.request.httpMethod ?? "GET") \(response.request.url?.absoluteString ?? "?")"
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
