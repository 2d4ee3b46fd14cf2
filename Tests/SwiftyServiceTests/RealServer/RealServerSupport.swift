import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// Small helpers for the tests against httpbin; everything general lives in Support/TestSupport.swift.

extension Response {
    /// httpbin's echo of the request this response answers (`/anything`, `/get`, `/post`…).
    func echo() throws -> Echo { try decode(Echo.self) }

    /// The request target exactly as httpbin received it on the wire (path and query, escapes intact):
    /// the `X-Raw-Request-URI` header that Tests/Servers/httpbin_app.py adds.
    var rawRequestURI: String? { header("X-Raw-Request-URI") }
}

extension ServiceError {
    /// The case's name, so that `#expect(error.caseName == "cancelled")` fails with a readable message.
    var caseName: String {
        switch self {
        case .invalidRequest: "invalidRequest"
        case .transport: "transport"
        case .timedOut: "timedOut"
        case .cancelled: "cancelled"
        case .unacceptableStatusCode: "unacceptableStatusCode"
        case .decoding: "decoding"
        }
    }
}

extension Result {
    /// The failure, or `nil` for a success.
    var failure: Failure? {
        if case let .failure(error) = self { return error }
        return nil
    }

    /// The failure as a ``ServiceError``, or `nil` for a success or any other error.
    var serviceError: ServiceError? { failure as? ServiceError }
}

/// Seconds elapsed since `start`, for "promptly" checks.
func seconds(since start: ContinuousClock.Instant) -> Double {
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}

/// The absolute URL string of `path` on the httpbin server, e.g. `http://127.0.0.1:PORT/anything/x`.
func httpbinURL(_ path: String) throws -> String {
    try HTTPBin.url().absoluteString + "/" + path
}

/// A marker set on a dispatch queue, to tell inside a callback whether it runs on that queue.
final class QueueMarker: @unchecked Sendable {
    /// The queue callbacks should run on.
    let queue: DispatchQueue
    private let key = DispatchSpecificKey<String>()
    private let token = UUID().uuidString

    init(label: String) {
        queue = DispatchQueue(label: "\(label)-\(token)")
        queue.setSpecific(key: key, value: token)
    }

    /// Whether the caller runs on ``queue``.
    var isCurrent: Bool { DispatchQueue.getSpecific(key: key) == token }
}

/// Wraps a backend and records what the wrapped backend itself answered, after SwiftyService has
/// stopped listening too: shows whether a cancellation really reached the transfer.
final class AnswerSpyBackend: NetworkBackend, @unchecked Sendable {
    private let inner: any NetworkBackend
    private let recorder = CallbackRecorder<Result<Int, any Error>>()

    init(_ inner: any NetworkBackend) { self.inner = inner }

    /// The wrapped backend's first answer: the status code, or its error.
    func answer(within timeout: TimeInterval) async throws -> Result<Int, any Error> {
        try await recorder.first(within: timeout)
    }

    func send(
        _ request: BackendRequest, completion: @escaping @Sendable (Result<Response, any Error>) -> Void
    ) -> BackendTask {
        inner.send(request) { [recorder] result in
            recorder.record(result.map(\.statusCode))
            completion(result)
        }
    }
}
