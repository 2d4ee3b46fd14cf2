import Foundation
import SwiftyService

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What JSON bodies are decoded into: the stub's sample data (`{"ok": true}`) or httpbin's `/get` echo.
struct Payload: Decodable, Sendable {
    let ok: Bool?
    let url: String?
}

/// Retries that wait milliseconds, not seconds: the soak wants many of them.
let fastRetry: RetryPolicy = {
    var policy = RetryPolicy.maxRetries(2)
    policy.baseDelay = 0.002
    policy.maxDelay = 0.01
    return policy
}()

/// One endpoint of the soak, made of values.
struct SoakEndpoint: SwiftyServiceProtocol {
    let realm: ServiceRealm
    let path: String
    var scenario = ""
    var query: [String: String]?
    var extraHeaders: HTTPHeaderDictionary?
    var ownBaseURL: URL?
    var retries = false
    var sample = Data(#"{"ok": true}"#.utf8)

    var method: HTTPMethod { .get }
    var baseURL: URL? { ownBaseURL ?? realm.baseURL }
    var parameters: [String: Any]? { query }
    var headers: HTTPHeaderDictionary? { extraHeaders }
    var sampleData: Data { sample }
    var middleware: [any Middleware] { retries ? [RetryMiddleware(fastRetry)] : [] }
}

/// An endpoint as sent: plain, or with one-off settings.
enum Call: Sendable {
    case plain(SoakEndpoint)
    case overridden(OverriddenEndpoint<SoakEndpoint>)

    func response() async throws -> Response {
        switch self {
        case let .plain(endpoint): try await endpoint.request()
        case let .overridden(endpoint): try await endpoint.request()
        }
    }

    func decoded() async throws -> Payload {
        switch self {
        case let .plain(endpoint): try await endpoint.request(as: Payload.self)
        case let .overridden(endpoint): try await endpoint.request(as: Payload.self)
        }
    }

    func request(completion: @escaping @Sendable (Result<Response, ServiceError>) -> Void) -> RequestHandle {
        switch self {
        case let .plain(endpoint): endpoint.request(completion: completion)
        case let .overridden(endpoint): endpoint.request(completion: completion)
        }
    }
}

/// How a request is sent and whether the soak cancels it.
struct Plan: Sendable {
    enum Form: String, Sendable, CaseIterable {
        /// `try await endpoint.request()`
        case async
        /// `try await endpoint.request(as: Payload.self)`
        case asyncDecoded
        /// `endpoint.request { result in }`
        case callback
        /// `endpoint.request { result in }`, then `response.decode(Payload.self)`
        case callbackDecoded
    }

    enum Cancel: Sendable {
        case none
        /// Task or handle cancelled right after the request is sent (often before it reaches the backend).
        case immediately
        /// Cancelled after this many seconds, from another thread.
        case after(TimeInterval)
        /// Cancelled twice, at once and again later.
        case twice(TimeInterval)
    }

    var id: Int
    var label: String
    var scenario: String
    var expected: Outcome
    var call: Call
    var form: Form
    var cancel: Cancel = .none
}

/// The per-request objects the soak watches, besides the ledger.
struct Watch: Sendable {
    /// Probes in the completion closures of the callback form.
    let callbacks = LiveCounter()
    /// Every 8th `RequestHandle` of the callback form.
    let handles = HandleSample()
}

/// Sends one planned request; its outcome goes to the ledger, once.
func launch(_ plan: Plan, ledger: Ledger, watch: Watch) {
    let id = plan.id
    ledger.expect(id, plan.expected, label: plan.label, scenario: plan.scenario)
    if case .none = plan.cancel {} else { ledger.markCancel(id) }
    switch plan.form {
    case .async, .asyncDecoded:
        let decode = plan.form == .asyncDecoded
        let call = plan.call
        let task = Task {
            do {
                if decode { _ = try await call.decoded() } else { _ = try await call.response() }
                ledger.record(id, .success)
            } catch {
                ledger.record(id, Outcome(error))
            }
        }
        schedule(plan.cancel) { task.cancel() }
    case .callback, .callbackDecoded:
        let decode = plan.form == .callbackDecoded
        let probe = watch.callbacks.probe()
        let handle = plan.call.request { result in
            probe.touch()
            switch result {
            case let .success(response):
                if decode {
                    do {
                        _ = try response.decode(Payload.self)
                        ledger.record(id, .success)
                    } catch {
                        ledger.record(id, Outcome(error))
                    }
                } else {
                    ledger.record(id, .success)
                }
            case let .failure(error):
                ledger.record(id, Outcome(error))
            }
        }
        // Requests that could not be built share one finished handle, which lives for ever.
        if plan.expected != .invalidRequest, id.isMultiple(of: 8) { watch.handles.add(handle) }
        schedule(plan.cancel) { handle.cancel() }
    }
}

private func schedule(_ cancel: Plan.Cancel, _ body: @escaping @Sendable () -> Void) {
    switch cancel {
    case .none:
        break
    case .immediately:
        body()
    case let .after(seconds):
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds, execute: body)
    case let .twice(seconds):
        body()
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds, execute: body)
    }
}

/// Sends `count` requests, at most the gate's limit at a time (a new limit in `concurrency` every 5,000),
/// and reports progress; `checkpoint` runs after each request is sent, with the number sent so far.
func drive(
    count: Int, ledger: Ledger, gate: Gate, watch: Watch, concurrency: ClosedRange<Int>, seed: UInt64,
    plan: (Int, inout SoakRandom) -> Plan, checkpoint: (Int) -> Void
) async {
    var random = SoakRandom(seed: seed)
    let started = now()
    var lastReport = started
    for id in 0..<count {
        if id.isMultiple(of: 5_000) { gate.setLimit(Int.random(in: concurrency, using: &random)) }
        await gate.acquire()
        launch(plan(id, &random), ledger: ledger, watch: watch)
        checkpoint(id + 1)
        if now() - lastReport > 10 {
            lastReport = now()
            log(
                String(
                    format: "  … %d of %d sent (%.0f req/s), %d in flight", id + 1, count,
                    Double(id + 1) / (lastReport - started), gate.current))
        }
    }
}

/// Wraps a backend: counts what it was asked to send, and how often it called back; a probe in each
/// completion closure it is handed shows whether it lets go of the closure once done.
final class TrackingBackend: NetworkBackend {
    let inner: any NetworkBackend
    let stats: BackendStats

    init(_ inner: any NetworkBackend, stats: BackendStats) {
        self.inner = inner
        self.stats = stats
        stats.instances.born()
    }

    deinit { stats.instances.died() }

    var supportsStreaming: Bool { inner.supportsStreaming }

    func send(
        _ request: BackendRequest, completion: @escaping @Sendable (Result<Response, any Error>) -> Void
    ) -> BackendTask {
        let probe = stats.completions.probe()
        let once = Shared(false)
        stats.sent()
        return inner.send(request) { [stats] result in
            probe.touch()
            let first = once.update { called in
                defer { called = true }
                return !called
            }
            stats.called(first: first)
            completion(result)
        }
    }
}

/// What the tracked backends of one kind did.
final class BackendStats: @unchecked Sendable {
    let name: String
    /// Probes in completion closures handed to the backend, still held by it.
    let completions = LiveCounter()
    /// Live `TrackingBackend`s of this kind.
    let instances = InstanceCounter()
    private let lock = NSLock()
    private var sends = 0
    private var calls = 0
    private var repeats = 0

    init(_ name: String) { self.name = name }

    func sent() { lock.withLock { sends += 1 } }
    func called(first: Bool) { lock.withLock { if first { calls += 1 } else { repeats += 1 } } }

    /// Sends, first completions, and completions after the first.
    var figures: (sent: Int, completed: Int, repeated: Int) { lock.withLock { (sends, calls, repeats) } }
}

/// Live instances of a class that counts itself.
final class InstanceCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var live = 0
    private var made = 0
    func born() {
        lock.withLock {
            live += 1; made += 1
        }
    }
    func died() { lock.withLock { live -= 1 } }
    var alive: Int { lock.withLock { live } }
    var created: Int { lock.withLock { made } }
}

/// A thread of its own that keeps changing realms while requests are built, until stopped.
final class RealmMutator: @unchecked Sendable {
    private let lock = NSLock()
    private var stopping = false
    private var changes = 0
    private let done = DispatchSemaphore(value: 0)

    /// Calls `change` (with the change number) every `interval` seconds or so.
    init(interval: TimeInterval, seed: UInt64, change: @escaping @Sendable (Int, inout SoakRandom) -> Void) {
        Thread.detachNewThread { [self] in
            var random = SoakRandom(seed: seed)
            var number = 0
            while !lock.withLock({ stopping }) {
                number += 1
                change(number, &random)
                lock.withLock { changes = number }
                Thread.sleep(forTimeInterval: interval * Double.random(in: 0.5...1.5, using: &random))
            }
            done.signal()
        }
    }

    /// Stops the thread and waits for it; the number of changes made.
    func stop() -> Int {
        lock.withLock { stopping = true }
        done.wait()
        return lock.withLock { changes }
    }
}
