import Foundation

/// A request under way, with its progress as an `AsyncStream`: made by ``SwiftyServiceProtocol/transfer()``.
///
/// The stream yields upload and download reports (throttled, never backwards, 100% last) and ends when
/// the request does; ``response`` waits for the outcome, which may be awaited any number of times.
public final class TransferTask: Sendable {
    /// The progress reports, ending when the request ends.
    public let progress: AsyncStream<TransferProgress>
    private let exchange: Exchange

    init(_ prepare: (@escaping @Sendable (TransferProgress) -> Void) -> Result<PreparedRequest, ServiceError>)
    {
        let (stream, continuation) = AsyncStream.makeStream(of: TransferProgress.self)
        progress = stream
        switch prepare({ continuation.yield($0) }) {
        case let .success(prepared):
            let call = prepared.makeCall()
            exchange = call.exchange
            exchange.wait { _ in continuation.finish() }
            prepared.start(call)
        case let .failure(error):
            exchange = Exchange(failed: error)
            continuation.finish()
        }
    }

    /// The response, once the request is over.
    /// - Throws: ``ServiceError`` only.
    public var response: Response {
        get async throws { try await exchange.outcome(cancelling: false).get() }
    }

    /// Stops the transfer; a partial download is removed.
    public func cancel() {
        exchange.cancel()
    }
}
