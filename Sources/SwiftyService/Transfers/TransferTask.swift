import Foundation

/// A request under way, with its progress as an `AsyncStream`: made by ``SwiftyServiceProtocol/transfer()``.
///
/// The stream yields upload and download reports (throttled, never backwards, 100% last) and ends when
/// the request does; ``response`` waits for the outcome, which may be awaited any number of times.
public final class TransferTask: Sendable {
    /// The progress reports, ending when the request ends.
    public let progress: AsyncStream<TransferProgress>
    private let promise: ServicePromise

    init(_ prepare: (@escaping @Sendable (TransferProgress) -> Void) -> Result<PreparedRequest, ServiceError>)
    {
        let (stream, continuation) = AsyncStream.makeStream(of: TransferProgress.self)
        progress = stream
        switch prepare({ continuation.yield($0) }) {
        case let .success(prepared): promise = ServicePromise(prepared)
        case let .failure(error): promise = ServicePromise(failedWith: error, callbackQueue: nil)
        }
        promise.then { _ in continuation.finish() }
    }

    /// The response, once the request is over.
    /// - Throws: ``ServiceError`` only.
    public var response: Response {
        get async throws { try await promise.value }
    }

    /// Stops the transfer; a partial download is removed.
    public func cancel() {
        promise.cancel()
    }
}
