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
    private typealias Waiter = CheckedContinuation<Response, any Error>

    private struct State {
        var outcome: Result<Response, ServiceError>?
        var handlers: [@Sendable (ServiceResult) -> Void] = []
        var waiters: [Int: Waiter] = [:]
        var cancelledWaiters: Set<Int> = []
        var nextWaiter = 0
    }

    private let state = Locked<State>.make(State())
    private let handle: RequestHandle
    private let request: URLRequest?
    private let callbackQueue: DispatchQueue?

    init(_ prepared: PreparedRequest) {
        request = prepared.urlRequest
        callbackQueue = prepared.callbackQueue
        handle = prepared.makeHandle()
        prepared.start(handle) { [self] in settle($0) }
    }

    init(failedWith error: ServiceError, callbackQueue: DispatchQueue?) {
        request = nil
        self.callbackQueue = callbackQueue
        handle = .finished
        state.withLock { $0.outcome = .failure(error) }
    }

    /// Runs `body` once with the outcome: when it arrives, or at once if it has.
    @discardableResult
    public func then(_ body: @escaping @Sendable (ServiceResult) -> Void) -> ServicePromise {
        let outcome = state.withLock { state -> Result<Response, ServiceError>? in
            if state.outcome == nil { state.handlers.append(body) }
            return state.outcome
        }
        if let outcome { run(body, with: outcome) }
        return self
    }

    /// The response; awaiting it again returns the same one.
    ///
    /// Cancelling the awaiting task ends this wait with ``ServiceError/cancelled(_:attempts:)``; it cancels the
    /// request too when nothing else (another wait or a `then`) is waiting for it.
    /// - Throws: ``ServiceError`` only.
    public var value: Response {
        get async throws {
            if let outcome = state.value.outcome { return try outcome.get() }
            let id = state.withLock { state -> Int in
                defer { state.nextWaiter += 1 }
                return state.nextWaiter
            }
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (waiter: Waiter) in
                    let outcome = state.withLock { state -> Result<Response, ServiceError>? in
                        if let outcome = state.outcome { return outcome }
                        if state.cancelledWaiters.remove(id) != nil { return .failure(cancellation) }
                        state.waiters[id] = waiter
                        return nil
                    }
                    if let outcome { waiter.resume(with: outcome) }
                }
            } onCancel: {
                stopWaiting(id)
            }
        }
    }

    /// The response body decoded from JSON into `type`.
    /// - Throws: ``ServiceError`` only.
    public func value<T: Decodable>(as type: T.Type, decoder: JSONDecoder = JSONDecoder()) async throws -> T {
        try await value.decode(type, decoder: decoder)
    }

    /// The outcome, if it has arrived.
    public var result: ServiceResult? {
        state.value.outcome.map(ServiceResult.init(result:))
    }

    /// Cancels the request; waiting closures and tasks get ``ServiceError/cancelled(_:attempts:)``.
    public func cancel() {
        handle.cancel()
    }

    private var cancellation: ServiceError {
        .cancelled(request ?? URLRequest(url: URL(string: "about:blank")!))
    }

    private func stopWaiting(_ id: Int) {
        let (waiter, isLastInterest) = state.withLock { state -> (Waiter?, Bool) in
            guard state.outcome == nil else { return (nil, false) }
            guard let waiter = state.waiters.removeValue(forKey: id) else {
                state.cancelledWaiters.insert(id)
                return (nil, state.waiters.isEmpty && state.handlers.isEmpty)
            }
            return (waiter, state.waiters.isEmpty && state.handlers.isEmpty)
        }
        waiter?.resume(throwing: cancellation)
        if isLastInterest { handle.cancel() }
    }

    private func settle(_ outcome: Result<Response, ServiceError>) {
        let (handlers, waiters) = state.withLock { state in
            state.outcome = outcome
            defer {
                state.handlers = []
                state.waiters = [:]
            }
            return (state.handlers, state.waiters.values)
        }
        for waiter in waiters { waiter.resume(with: outcome) }
        for handler in handlers { run(handler, with: outcome) }
    }

    private func run(
        _ handler: @escaping @Sendable (ServiceResult) -> Void, with outcome: Result<Response, ServiceError>
    ) {
        let result = ServiceResult(result: outcome)
        if let callbackQueue {
            callbackQueue.async { handler(result) }
        } else {
            handler(result)
        }
    }
}
