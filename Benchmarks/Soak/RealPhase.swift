import Foundation
import LegacyNetworking
import ProcessProbes
import SwiftyService
import SwiftyServiceCurl

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The real-server phase's mix, in requests per thousand.
private enum RealScenario: String, CaseIterable {
    case noContent = "status-204"
    case get
    case anything
    case status500 = "status-500"
    case status404 = "status-404"
    case notJSON = "not-json"
    case noScheme = "no-scheme"
    case badHeader = "bad-header"
    case closedPort = "closed-port"
    case delayCancelled = "delay-cancelled"
    case delayResourceTimeout = "delay-resource-timeout"
    case delayIdleTimeout = "delay-idle-timeout"

    var perMille: Int {
        switch self {
        case .noContent: 482
        case .get: 150
        case .anything: 100
        case .status500: 80
        case .status404: 60
        case .notJSON: 40
        case .noScheme: 20
        case .badHeader: 20
        case .closedPort: 40
        case .delayCancelled: 5
        case .delayResourceTimeout: 2
        case .delayIdleTimeout: 1
        }
    }

    var path: String {
        switch self {
        case .noContent, .noScheme, .badHeader, .closedPort: "status/204"
        case .get: "get"
        case .anything: "anything/soak/ü x"
        case .status500: "status/500"
        case .status404: "status/404"
        case .notJSON: "robots.txt"
        case .delayCancelled, .delayResourceTimeout: "delay/1"
        case .delayIdleTimeout: "delay/3"
        }
    }

    var expected: Outcome {
        switch self {
        case .noContent, .get, .anything: .success
        case .status500, .status404: .unacceptableStatusCode
        case .notJSON: .decoding
        case .noScheme, .badHeader: .invalidRequest
        case .closedPort: .transport
        case .delayCancelled: .cancelled
        case .delayResourceTimeout, .delayIdleTimeout: .timedOut
        }
    }

    static func pick(_ random: inout SoakRandom) -> RealScenario {
        var roll = Int.random(in: 0..<1000, using: &random)
        for scenario in allCases {
            if roll < scenario.perMille { return scenario }
            roll -= scenario.perMille
        }
        return .noContent
    }
}

/// The three backends under test, and the realms that use them.
enum Kind: String, CaseIterable, Sendable {
    case urlSession = "URLSessionBackend"
    case curl = "CurlBackend"
    case legacy = "LegacyBackend"

    /// The name `--backends` takes.
    var option: String {
        switch self {
        case .urlSession: "urlsession"
        case .curl: "curl"
        case .legacy: "legacy"
        }
    }
}

/// Every backend the phase makes, tracked, with weak references to check that each goes away.
private final class Backends: @unchecked Sendable {
    let legacyURLCache: Bool
    let stats: [Kind: BackendStats] = Dictionary(
        uniqueKeysWithValues: Kind.allCases.map { ($0, BackendStats($0.rawValue)) })
    let curls = WeakSet<CurlBackend>()
    let sessions = WeakSet<URLSessionBackend>()
    /// The backends' `URLSession`s: invalidated when their backend goes, they must go too.
    let urlSessions = WeakSet<URLSession>()
    let legacies = WeakSet<LegacyBackend>()
    let clients = WeakSet<LegacyHTTPClient>()
    let current = Shared<[Kind: TrackingBackend]>([:])
    /// Connections per host each kind keeps at most.
    let limits: [Kind: Int] = [
        .urlSession: URLSessionBackend.defaultConfiguration().httpMaximumConnectionsPerHost,
        .curl: 8,
        .legacy: URLSessionConfiguration.default.httpMaximumConnectionsPerHost,
    ]

    init(legacyURLCache: Bool) { self.legacyURLCache = legacyURLCache }

    func make(_ kind: Kind) -> TrackingBackend {
        let inner: any NetworkBackend
        switch kind {
        case .urlSession:
            let backend = URLSessionBackend()
            sessions.add(backend)
            urlSessions.add(backend.session)
            inner = backend
        case .curl:
            let backend = try! CurlBackend(maxConnectionsPerHost: limits[.curl]!)
            curls.add(backend)
            inner = backend
        case .legacy:
            let client = LegacyHTTPClient(configuration: legacyConfiguration(keepingURLCache: legacyURLCache))
            clients.add(client)
            let backend = LegacyBackend(client: client)
            legacies.add(backend)
            inner = backend
        }
        return TrackingBackend(inner, stats: stats[kind]!)
    }

    /// Replaces the current backend of `kind` with a new one; the old one must go once its requests end.
    func renew(_ kind: Kind) {
        let backend = make(kind)
        current.update { $0[kind] = backend }
    }

    func backend(_ kind: Kind) -> TrackingBackend { current.value[kind]! }

    var alive: Int {
        curls.alive.count + sessions.alive.count + urlSessions.alive.count + legacies.alive.count
            + clients.alive.count
            + stats.values.map(\.instances.alive).reduce(0, +)
    }

    var made: String {
        "\(stats[.urlSession]!.instances.created) URLSessionBackend, \(stats[.curl]!.instances.created) CurlBackend, \(stats[.legacy]!.instances.created) LegacyBackend"
    }

    var aliveDescription: String {
        "URLSessionBackend \(sessions.alive.count), URLSession \(urlSessions.alive.count), CurlBackend \(curls.alive.count), LegacyBackend \(legacies.alive.count), LegacyHTTPClient \(clients.alive.count), wrappers \(stats.values.map(\.instances.alive).reduce(0, +))"
    }

    /// Connections the live backends may keep open to one host.
    var socketBound: Int {
        sessions.alive.count * limits[.urlSession]! + curls.alive.count * limits[.curl]!
            + clients.alive.count * limits[.legacy]!
    }

    var curlTransfersInFlight: Int { curls.alive.map(\.transfersInFlight).reduce(0, +) }
}

func runRealPhase(_ options: Options, server: URL) async -> PhaseReport {
    let report = PhaseReport("real-server")
    let count = options.realRequests
    let port = server.port!
    let root =
        server.absoluteString.hasSuffix("/")
        ? String(server.absoluteString.dropLast()) : server.absoluteString
    let closed = (try? closedPort()) ?? 9

    let primer = await primeReal(
        root: root, port: port, kinds: options.backends, legacyURLCache: options.legacyURLCache)
    report.line("  primer: \(primer)")
    report.line(
        "  LegacyHTTPClient sessions: URLSessionConfiguration.default \(options.legacyURLCache ? "with its URLCache (--legacy-urlcache)" : "without its URLCache (--legacy-urlcache keeps it)")"
    )

    // The monitor's thread runs from before the baseline to after the last figure.
    let monitor = PeakMonitor(port: port)
    let before = ProcessFigures.measure(port: port, heap: true)
    let backends = Backends(legacyURLCache: options.legacyURLCache)
    let kinds = options.backends
    for kind in kinds { backends.renew(kind) }
    // A realm per kind, and (with more than one kind) a mixed realm whose backend keeps changing kind.
    let realms: [(label: String, realm: ServiceRealm, kind: Kind?)] =
        kinds.map { ($0.rawValue, ServiceRealm.get("soak-\($0.option)"), $0) }
        + (kinds.count > 1 ? [("mixed", ServiceRealm.get("soak-mixed"), nil)] : [])
    for (_, realm, kind) in realms {
        realm.reset().setBaseURL(URL(string: root)!).use(backends.backend(kind ?? kinds[0]))
    }
    let callbackQueue = DispatchQueue(label: "soak.real.callbacks")
    let churned = Shared(0)
    let lastChurn = Shared(now())
    let churnInterval = options.churnInterval

    // The realms change all the time; the mixed realm's backend moves between the three kinds, and now
    // and then one kind's backend is replaced by a new one (the old one must close its connections and
    // end its thread once its last request is over).
    let mutator = RealmMutator(interval: 0.002, seed: options.seed ^ 0x7EA1) { number, random in
        if churnInterval > 0, now() - lastChurn.value > churnInterval {
            lastChurn.value = now()
            let turn = churned.update { count in
                defer { count += 1 }
                return count
            }
            backends.renew(kinds[turn % kinds.count])
        }
        let (_, realm, kind) = realms.randomElement(using: &random)!
        switch Int.random(in: 0..<4, using: &random) {
        case 0:
            realm.addHeader("X-Soak-Version", withValue: String(number))
        case 1:
            realm.setBaseURL(baseVariant(root, number, &random))
        default:
            let backend = backends.backend(kind ?? kinds.randomElement(using: &random)!)
            let retry = random.chance(0.4)
            let queue = random.chance(0.3) ? callbackQueue : nil
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
            }
        }
    }

    let gate = Gate(limit: options.concurrency.lowerBound)
    let ledger = Ledger(count: count, gate: gate)
    let watch = Watch()
    var memory = MemoryTrail(warmup: options.warmup)
    var forms: [Plan.Form: Int] = [:]
    let started = now()
    await drive(
        count: count, ledger: ledger, gate: gate, watch: watch, concurrency: options.concurrency,
        seed: options.seed ^ 0x2222,
        plan: { id, random in
            let scenario = RealScenario.pick(&random)
            // The mixed realm takes one request in ten, the others share the rest.
            let mixed = realms.count > kinds.count && random.chance(0.1)
            let (label, realm, _) =
                mixed ? realms[kinds.count] : realms[Int.random(in: 0..<kinds.count, using: &random)]
            var endpoint = SoakEndpoint(realm: realm, path: scenario.path, scenario: scenario.rawValue)
            endpoint.retries = random.chance(0.25)
            var cancel = randomCancel(&random, delays: 0...0.005)
            var call = Call.plain(endpoint)
            switch scenario {
            case .anything:
                endpoint.query = ["id": String(id), "q": "a&b=c d/é"]
                call = .plain(endpoint)
            case .noScheme:
                endpoint.ownBaseURL = URL(string: "127.0.0.1/nowhere")
                call = .plain(endpoint)
            case .badHeader:
                endpoint.extraHeaders = ["X-Broken": "line\nInjected: yes"]
                call = .plain(endpoint)
            case .closedPort:
                endpoint.ownBaseURL = URL(string: "http://127.0.0.1:\(closed)")
                call = .plain(endpoint)
            case .delayCancelled:
                endpoint.retries = false
                cancel = .after(Double.random(in: 0.01...0.3, using: &random))
                call = .plain(endpoint)
            case .delayResourceTimeout:
                endpoint.retries = false
                call = .overridden(endpoint.override { $0.setResourceTimeout(0.2) })
            case .delayIdleTimeout:
                endpoint.retries = false
                call = .overridden(endpoint.override { $0.setTimeout(1) })
            default:
                break
            }
            var form = Plan.Form.allCases.randomElement(using: &random)!
            switch scenario {
            case .notJSON: form = random.chance(0.5) ? .asyncDecoded : .callbackDecoded
            // 204 has no body to decode.
            case .noContent where form == .asyncDecoded: form = .async
            case .noContent where form == .callbackDecoded: form = .callback
            default: break
            }
            forms[form, default: 0] += 1
            return Plan(
                id: id, label: label, scenario: scenario.rawValue, expected: scenario.expected, call: call,
                form: form, cancel: cancel)
        },
        checkpoint: { sent in memory.note(sent: sent) })
    let sendingTime = now() - started
    let drained = await settle(within: 30) { gate.current == 0 }
    let wall = now() - started
    let changes = mutator.stop()
    let released = await settle(within: 15) {
        watch.callbacks.alive == 0 && watch.handles.alive == 0
            && backends.stats.values.allSatisfy { $0.completions.alive == 0 }
            && backends.curlTransfersInFlight == 0
    }
    let curlInFlight = backends.curlTransfersInFlight
    let curlsAtRest = backends.curls.alive.count
    let socketBound = backends.socketBound
    let atRest = ProcessFigures.measure(port: port, heap: true)
    memory.finish(
        residentKB: atRest.residentKB, heap: atRest.heapBytes, requests: count)

    // Teardown: the realms let go of their backends; each must then close its connections, end its
    // thread, and go.
    for (_, realm, _) in realms { realm.reset() }
    backends.current.value = [:]
    let teardown = await awaitTeardown(to: before, port: port) { backends.alive == 0 }
    let after = teardown.after
    let peak = monitor.finish()

    let summary = ledger.summary(sent: count)
    report.requests(
        summary, wall: wall, sendingTime: sendingTime, gate: gate, concurrency: options.concurrency,
        changes: changes, forms: forms)
    report.settling(drained: drained, released: released, releaseWait: 15, teardown: teardown)
    report.exactlyOnce(summary)
    report.leaks(
        before: before, atRest: atRest, after: after, peak: peak, socketsLabel: "server",
        socketBound: socketBound)
    report.line(
        "  CurlBackend.transfersInFlight at rest: \(curlInFlight) (over \(curlsAtRest) live CurlBackends)")
    report.check(
        "real-server: CurlBackend.transfersInFlight == 0 at rest", curlInFlight == 0,
        "\(curlInFlight) in flight")
    // FoundationNetworking itself keeps about 175 bytes of every URLSession request for good (measured with
    // URLSession alone): this phase's heap bound allows for it (see Options.maxRealHeapGrowthPerRequest).
    report.memory(memory, bound: options.maxGrowthPerRequest, heapBound: options.maxRealHeapGrowthPerRequest)
    report.objects(watch: watch)
    for kind in kinds { report.backend(backends.stats[kind]!) }
    report.line(
        "  backends made: \(backends.made) (\(churned.value) replaced mid-run); alive after teardown: \(backends.aliveDescription)"
    )
    report.check(
        "real-server: every backend and legacy client deallocated after teardown", backends.alive == 0,
        backends.aliveDescription)
    return report
}

/// A few hundred requests through a backend of each kind, which then go: whatever the first use of
/// URLSession and libcurl sets up for good exists before the baseline is taken.
private func primeReal(root: String, port: Int, kinds: [Kind], legacyURLCache: Bool) async -> String {
    let realm = ServiceRealm.get("soak-real-primer")
    var sent = 0
    for kind in kinds {
        let backend: any NetworkBackend =
            switch kind {
            case .urlSession: URLSessionBackend()
            case .curl: try! CurlBackend()
            case .legacy:
                LegacyBackend(
                    client: LegacyHTTPClient(
                        configuration: legacyConfiguration(keepingURLCache: legacyURLCache)))
            }
        realm.reset().setBaseURL(URL(string: root)!).use(backend).addMiddleware(RetryMiddleware(fastRetry))
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<200 {
                let endpoint = SoakEndpoint(
                    realm: realm, path: index.isMultiple(of: 5) ? "status/500" : "status/204")
                group.addTask {
                    if index.isMultiple(of: 2) {
                        let task = Task { _ = try? await endpoint.request() }
                        if index.isMultiple(of: 7) { task.cancel() }
                        await task.value
                    } else {
                        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                            let handle = endpoint.request { _ in continuation.resume() }
                            if index.isMultiple(of: 7) { handle.cancel() }
                        }
                    }
                }
            }
        }
        sent += 200
    }
    realm.reset()
    let settled = await settle(within: 15) {
        openSockets(toPort: port) == 0 && !threadNames().contains { $0.hasPrefix("SwiftyCurl-") }
    }
    let figures = ProcessFigures.measure(port: port)
    return
        "\(sent) requests through one backend of each kind, dropped; \(settled ? "settled" : "NOT settled in 15 s"): sockets to httpbin \(figures.sockets), SwiftyCurl threads \(figures.curlThreads)"
}

/// The legacy client's configuration: `URLSessionConfiguration.default` without its `URLCache`, unless asked.
///
/// With a `URLCache`, FoundationNetworking looks the cache up on a background queue before a task starts,
/// and a task cancelled around its completion then crashes the process ("Trying to access a behaviour for
/// a task that in not in the registry", swift-corelibs-foundation issues 3292 and 3296). URLSession on
/// Linux caches nothing, so nothing else changes; `URLSessionBackend.defaultConfiguration()` leaves the
/// cache out for the same reason.
private func legacyConfiguration(keepingURLCache: Bool) -> URLSessionConfiguration {
    let configuration = URLSessionConfiguration.default
    if !keepingURLCache { configuration.urlCache = nil }
    return configuration
}
