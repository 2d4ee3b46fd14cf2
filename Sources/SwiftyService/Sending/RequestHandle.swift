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
