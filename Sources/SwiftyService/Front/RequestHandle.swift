import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A request in flight. `cancel()` stops it; its completion then runs once, with
/// ``ServiceError/cancelled(_:attempts:)``, unless the answer had already been delivered.
public final class RequestHandle: Sendable {
    private let exchange: Exchange

    init(_ exchange: Exchange) {
        self.exchange = exchange
    }

    /// Whether the completion has run, or is about to.
    public var isFinished: Bool { exchange.isFinished }

    /// Whether ``cancel()`` was called before the request finished.
    public var isCancelled: Bool { exchange.isCancelled }

    /// Stops the request. Its completion runs at once with ``ServiceError/cancelled(_:attempts:)``, unless it
    /// ran (or began to) already; the backend is told to stop the transfer.
    public func cancel() {
        exchange.cancel()
    }
}

extension PreparedRequest {
    /// Sends the request; `delivery` runs exactly once, on the realm's callback queue if it has one.
    func start(delivering delivery: @escaping Exchange.Waiter) -> RequestHandle {
        let call = makeCall()
        call.exchange.wait(Exchange.waiter(delivery, on: callbackQueue))
        start(call)
        return RequestHandle(call.exchange)
    }
}

extension Exchange {
    /// An exchange over before it began, whose waiter hears on `queue` (a request that could not be built).
    static func failed(_ error: ServiceError, delivering delivery: @escaping Waiter, on queue: DispatchQueue?)
        -> RequestHandle
    {
        let exchange = Exchange(failed: error)
        exchange.wait(waiter(delivery, on: queue))
        return RequestHandle(exchange)
    }
}
