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

/// Keeps the load test and the tests that measure promptness from overlapping.
///
/// Hundreds of requests in flight stall Swift's cooperative thread pool (2 threads on a 2-core machine).
/// Measured here during the 500-request test: `URLSessionBackend.send` (URLSession's `dataTask` and
/// `resume` on Linux) blocked its caller for up to ~45 ms at a time, and a task sleeping 10 ms woke up to
/// ~1 s late, while a plain thread doing the same was never more than ~10 ms late. A "cancelled within
/// 1 s" check running beside the load test then fails for reasons of its own. Timing tests may run
/// together; the load test runs alone.
actor LoadGate {
    static let shared = LoadGate()

    private var timingTests = 0
    private var loadRunning = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    /// Enters as a timing test: waits while the load test runs (other timing tests may run together).
    func timing() async {
        while loadRunning { await suspend() }
        timingTests += 1
    }

    /// Enters as the load test: waits until no timing test and no other load test runs.
    func load() async {
        while loadRunning || timingTests > 0 { await suspend() }
        loadRunning = true
    }

    func endTiming() {
        timingTests -= 1
        resumeAll()
    }

    func endLoad() {
        loadRunning = false
        resumeAll()
    }

    private func suspend() async {
        await withCheckedContinuation { waiting.append($0) }
    }

    private func resumeAll() {
        let resumed = waiting
        waiting = []
        for continuation in resumed { continuation.resume() }
    }
}

/// Runs a test body that measures promptness, never beside the load test (see ``LoadGate``).
func measuringPromptness<T>(_ body: () async throws -> T) async throws -> T {
    await LoadGate.shared.timing()
    do {
        let result = try await body()
        await LoadGate.shared.endTiming()
        return result
    } catch {
        await LoadGate.shared.endTiming()
        throw error
    }
}

/// Runs the load test's body alone, with no promptness test beside it (see ``LoadGate``).
func underLoad<T>(_ body: () async throws -> T) async throws -> T {
    await LoadGate.shared.load()
    do {
        let result = try await body()
        await LoadGate.shared.endLoad()
        return result
    } catch {
        await LoadGate.shared.endLoad()
        throw error
    }
}
