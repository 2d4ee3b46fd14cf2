import Foundation
import SwiftyService

/// The per-request objects the soak watches, besides the ledger.
struct Watch: Sendable {
    /// Probes in the completion closures of the callback form.
    let callbacks = LiveCounter()
    /// Every 8th `RequestHandle` of the callback form.
    let handles = WeakSet<RequestHandle>()

    /// Whether the library let go of every completion closure and sampled handle.
    var released: Bool { callbacks.alive == 0 && handles.alive.isEmpty }
}

/// A phase's requests, sent and drained: what the report needs of them.
struct Traffic {
    let ledger: Ledger
    let gate: Gate
    let watch: Watch
    let concurrency: ClosedRange<Int>
    var memory: MemoryTrail
    let forms: [Plan.Form: Int]
    /// Seconds until the last request was sent, and until the last one ended (or the wait for it did).
    let sendingTime: TimeInterval
    let wall: TimeInterval
    /// Whether every request ended within 30 s of the last one sent.
    let drained: Bool
}

/// Sends `count` requests as `plan` makes them, at most the gate's limit at a time (a new limit in
/// `options.concurrency` every 5,000), reporting progress, then waits up to 30 s for them to end.
func drive(
    count: Int, options: Options, seed: UInt64, plan: (Int, inout SoakRandom) -> Plan
) async -> Traffic {
    let gate = Gate(limit: options.concurrency.lowerBound)
    let ledger = Ledger(count: count, gate: gate)
    let watch = Watch()
    var memory = MemoryTrail(warmup: options.warmup)
    var forms: [Plan.Form: Int] = [:]
    var random = SoakRandom(seed: seed)
    let started = now()
    var lastReport = started
    for id in 0..<count {
        if id.isMultiple(of: 5_000) { gate.setLimit(Int.random(in: options.concurrency, using: &random)) }
        await gate.acquire()
        let next = plan(id, &random)
        forms[next.form, default: 0] += 1
        launch(next, ledger: ledger, watch: watch)
        memory.note(sent: id + 1)
        if now() - lastReport > 10 {
            lastReport = now()
            log(
                String(
                    format: "  … %d of %d sent (%.0f req/s), %d in flight", id + 1, count,
                    Double(id + 1) / (lastReport - started), gate.current))
        }
    }
    let sendingTime = now() - started
    let drained = await settle(within: 30) { gate.current == 0 }
    return Traffic(
        ledger: ledger, gate: gate, watch: watch, concurrency: options.concurrency, memory: memory,
        forms: forms, sendingTime: sendingTime, wall: now() - started, drained: drained)
}

/// A phase at rest: its requests over, its backends still in place.
struct Rest {
    /// Realm changes made while the requests ran.
    let changes: Int
    /// Whether every per-request object went within `releaseWait` seconds.
    let released: Bool
    let releaseWait: Int
    /// The process's figures at rest.
    let figures: ProcessFigures
}

extension Traffic {
    /// Stops the realm changes, waits up to `releaseWait` s for the per-request objects to go (those of
    /// `watch`, and whatever `backendsReleased` checks), then measures and ends the memory trail.
    mutating func rest(
        stopping realmChanges: LoopThread, port: Int?, releaseWait: Int, backendsReleased: () -> Bool
    ) async -> Rest {
        let changes = realmChanges.stop()
        let watch = self.watch
        let released = await settle(within: TimeInterval(releaseWait)) {
            watch.released && backendsReleased()
        }
        let figures = ProcessFigures.measure(port: port, heap: true)
        memory.finish(residentKB: figures.residentKB, heap: figures.heapBytes, requests: ledger.count)
        return Rest(changes: changes, released: released, releaseWait: releaseWait, figures: figures)
    }
}

/// One random change to `realm`, the `number`th: a header, the base URL (a variant of `root`), or a whole
/// new configuration: a backend from `pickBackend`, random retries, callback queue (`queue` or none) and
/// timeout, and, where `coalescing`, now and then coalescing.
func changeRealm(
    _ realm: ServiceRealm, _ number: Int, root: String, queue: DispatchQueue, coalescing: Bool = false,
    _ random: inout SoakRandom, pickBackend: (inout SoakRandom) -> TrackingBackend
) {
    switch Int.random(in: 0..<4, using: &random) {
    case 0:
        realm.addHeader("X-Soak-Version", withValue: String(number))
    case 1:
        realm.setBaseURL(baseVariant(root, number, &random))
    default:
        let backend = pickBackend(&random)
        let retry = random.chance(0.4)
        let queue = random.chance(0.3) ? queue : nil
        let coalesce = coalescing && random.chance(0.2)
        let timeout = Double.random(in: 20...60, using: &random)
        let base = baseVariant(root, number, &random)
        realm.configure { configuration in
            configuration = RealmConfiguration()
            configuration.setBaseURL(base)
            configuration.use(backend)
            configuration.addHeader("X-Soak-Version", withValue: String(number))
            configuration.setTimeout(timeout)
            if retry { configuration.addMiddleware(RetryMiddleware(fastRetry)) }
            configuration.setCallbackQueue(queue)
            if coalesce { configuration.coalesceIdenticalRequests() }
        }
    }
}

/// The same base URL written three ways: as given, with a trailing slash, with a query of its own.
func baseVariant(_ root: String, _ number: Int, _ random: inout SoakRandom) -> URL {
    switch Int.random(in: 0..<3, using: &random) {
    case 0: URL(string: root)!
    case 1: URL(string: root + "/")!
    default: URL(string: root + "/?realm=\(number)")!
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
        let once = Locked(false)
        stats.sent()
        return inner.send(request) { [stats] result in
            probe.touch()
            let first = once.withLock { called in
                defer { called = true }
                return !called
            }
            stats.called(first: first)
            completion(result)
        }
    }
}

/// What the tracked backends of one kind did.
final class BackendStats: Sendable {
    let name: String
    /// Probes in completion closures handed to the backend, still held by it.
    let completions = LiveCounter()
    /// Live `TrackingBackend`s of this kind.
    let instances = LiveCounter()
    private let counts = Locked((sent: 0, completed: 0, repeated: 0))

    init(_ name: String) { self.name = name }

    func sent() { counts.withLock { $0.sent += 1 } }

    func called(first: Bool) {
        counts.withLock {
            if first { $0.completed += 1 } else { $0.repeated += 1 }
        }
    }

    /// Sends, first completions, and completions after the first.
    var figures: (sent: Int, completed: Int, repeated: Int) { counts.value }
}

/// Changes realms while requests are built, from a thread of its own: `change`, with the change's number,
/// about every `interval` seconds until stopped (`stop()` returns the number of changes made).
func realmChanges(
    every interval: TimeInterval, seed: UInt64, _ change: @escaping @Sendable (Int, inout SoakRandom) -> Void
) -> LoopThread {
    LoopThread(SoakRandom(seed: seed)) { number, random in
        change(number, &random)
        Thread.sleep(forTimeInterval: interval * Double.random(in: 0.5...1.5, using: &random))
    }
}
