import Foundation
import LegacyNetworking
import ProcessProbes
import SwiftyService
import SwiftyServiceCurl

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The real-server phase's mix.
private enum RealScenario: String, ScenarioMix {
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

    var share: Int { mix.share }

    /// Requests per thousand, the path asked for, and the outcome the caller must get.
    var mix: (share: Int, path: String, expected: Outcome) {
        switch self {
        case .noContent: (482, "status/204", .success)
        case .get: (150, "get", .success)
        case .anything: (100, "anything/soak/ü x", .success)
        case .status500: (80, "status/500", .unacceptableStatusCode)
        case .status404: (60, "status/404", .unacceptableStatusCode)
        case .notJSON: (40, "robots.txt", .decoding)
        case .noScheme: (20, "status/204", .invalidRequest)
        case .badHeader: (20, "status/204", .invalidRequest)
        case .closedPort: (40, "status/204", .transport)
        case .delayCancelled: (5, "delay/1", .cancelled)
        case .delayResourceTimeout: (2, "delay/1", .timedOut)
        case .delayIdleTimeout: (1, "delay/3", .timedOut)
        }
    }
}

/// The three backends under test, and the realms that use them.
enum Kind: String, CaseIterable, Sendable {
    case urlSession = "URLSessionBackend"
    case curl = "CurlBackend"
    case legacy = "LegacyBackend"

    /// The name `--backends` takes: the type's name without "Backend", in lower case.
    var option: String { rawValue.dropLast("Backend".count).lowercased() }
}

/// Every backend the phase makes, tracked, with weak references to check that each goes away.
private final class Backends: Sendable {
    let legacyURLCache: Bool
    let stats: [Kind: BackendStats] = Dictionary(
        uniqueKeysWithValues: Kind.allCases.map { ($0, BackendStats($0.rawValue)) })
    let curls = WeakSet<CurlBackend>()
    let sessions = WeakSet<URLSessionBackend>()
    /// The backends' `URLSession`s: invalidated when their backend goes, they must go too.
    let urlSessions = WeakSet<URLSession>()
    let legacies = WeakSet<LegacyBackend>()
    let clients = WeakSet<LegacyHTTPClient>()
    let current = Locked<[Kind: TrackingBackend]>([:])
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
        current.withLock { $0[kind] = backend }
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
    let port = server.port!
    let root =
        server.absoluteString.hasSuffix("/")
        ? String(server.absoluteString.dropLast()) : server.absoluteString
    let closed = (try? closedPort()) ?? 9
    await primeReal(root: root, port: port, options: options, report: report)

    // The monitor's thread runs from before the baseline to after the last figure.
    let monitor = PeakMonitor(port: port)
    let before = ProcessFigures.measure(port: port, heap: true)
    let rig = RealRig(root: root, closedPort: closed, options: options)
    let mutator = rig.mutate(seed: options.seed ^ 0x7EA1, churnInterval: options.churnInterval)
    var traffic = await drive(
        count: options.realRequests, options: options, seed: options.seed ^ 0x2222, plan: rig.plan)
    let backends = rig.backends
    let rest = await traffic.rest(stopping: mutator, port: port, releaseWait: 15) {
        backends.stats.values.allSatisfy { $0.completions.alive == 0 } && backends.curlTransfersInFlight == 0
    }
    let curlInFlight = backends.curlTransfersInFlight
    let curlsAtRest = backends.curls.alive.count
    let socketBound = backends.socketBound

    // Teardown: the realms let go of their backends; each must then close its connections, end its
    // thread, and go.
    for (_, realm, _) in rig.realms { realm.reset() }
    backends.current.withLock { $0 = [:] }
    let teardown = await awaitTeardown(to: before, port: port) { backends.alive == 0 }
    let peak = monitor.finish()

    report.traffic(traffic, rest: rest, teardown: teardown)
    report.leaks(
        before: before, atRest: rest.figures, after: teardown.after, peak: peak, socketsLabel: "server",
        socketBound: socketBound)
    report.line(
        "  CurlBackend.transfersInFlight at rest: \(curlInFlight) (over \(curlsAtRest) live CurlBackends)")
    report.check(
        "real-server: CurlBackend.transfersInFlight == 0 at rest", curlInFlight == 0,
        "\(curlInFlight) in flight")
    // FoundationNetworking itself keeps about 175 bytes of every URLSession request for good (measured with
    // URLSession alone): this phase's heap bound allows for it (see Options.maxRealHeapGrowthPerRequest).
    report.memory(
        traffic.memory, bound: options.maxGrowthPerRequest, heapBound: options.maxRealHeapGrowthPerRequest)
    report.objects(watch: traffic.watch)
    rig.reportBackends(to: report)
    return report
}

/// The real-server phase's backends and realms: a realm per kind and, with more than one kind, a mixed
/// realm whose backend keeps changing kind.
private final class RealRig: Sendable {
    let root: String
    let closedPort: Int
    let kinds: [Kind]
    let backends: Backends
    let realms: [(label: String, realm: ServiceRealm, kind: Kind?)]
    let callbackQueue = DispatchQueue(label: "soak.real.callbacks")
    /// Backends replaced mid-run, and when the last one was.
    let churned = Locked(0)
    let lastChurn = Locked(now())

    init(root: String, closedPort: Int, options: Options) {
        self.root = root
        self.closedPort = closedPort
        kinds = options.backends
        backends = Backends(legacyURLCache: options.legacyURLCache)
        for kind in kinds { backends.renew(kind) }
        realms =
            kinds.map { ($0.rawValue, ServiceRealm.get("soak-\($0.option)"), $0) }
            + (kinds.count > 1 ? [("mixed", ServiceRealm.get("soak-mixed"), nil)] : [])
        for (_, realm, kind) in realms {
            realm.reset().setBaseURL(URL(string: root)!).use(backends.backend(kind ?? kinds[0]))
        }
    }

    /// Changes the realms all the time; the mixed realm's backend moves between the kinds, and now and
    /// then one kind's backend is replaced by a new one (the old one must close its connections and end
    /// its thread once its last request is over).
    func mutate(seed: UInt64, churnInterval: TimeInterval) -> LoopThread {
        realmChanges(every: 0.002, seed: seed) { [self] number, random in
            if churnInterval > 0, now() - lastChurn.value > churnInterval {
                lastChurn.withLock { $0 = now() }
                let turn = churned.withLock { count in
                    defer { count += 1 }
                    return count
                }
                backends.renew(kinds[turn % kinds.count])
            }
            let (_, realm, kind) = realms.randomElement(using: &random)!
            changeRealm(realm, number, root: root, queue: callbackQueue, &random) { random in
                backends.backend(kind ?? kinds.randomElement(using: &random)!)
            }
        }
    }

    /// The next request: a scenario of the mix in one of the realms, sent in a random form, now and then
    /// cancelled.
    func plan(_ id: Int, _ random: inout SoakRandom) -> Plan {
        let scenario = RealScenario.pick(&random)
        // The mixed realm takes one request in ten, the others share the rest.
        let mixed = realms.count > kinds.count && random.chance(0.1)
        let (label, realm, _) =
            mixed ? realms[kinds.count] : realms[Int.random(in: 0..<kinds.count, using: &random)]
        var endpoint = SoakEndpoint(realm: realm, path: scenario.mix.path, scenario: scenario.rawValue)
        endpoint.retries = random.chance(0.25)
        var cancel = randomCancel(&random, delays: 0...0.005)
        switch scenario {
        case .anything: endpoint.query = ["id": String(id), "q": "a&b=c d/é"]
        case .noScheme: endpoint.ownBaseURL = URL(string: "127.0.0.1/nowhere")
        case .badHeader: endpoint.extraHeaders = ["X-Broken": "line\nInjected: yes"]
        case .closedPort: endpoint.ownBaseURL = URL(string: "http://127.0.0.1:\(closedPort)")
        case .delayCancelled: cancel = .after(Double.random(in: 0.01...0.3, using: &random))
        default: break
        }
        // A retry would send again the slow request the scenario means to cancel or time out once.
        if [.delayCancelled, .delayResourceTimeout, .delayIdleTimeout].contains(scenario) {
            endpoint.retries = false
        }
        let call: Call =
            switch scenario {
            case .delayResourceTimeout: .overridden(endpoint.override { $0.setResourceTimeout(0.2) })
            case .delayIdleTimeout: .overridden(endpoint.override { $0.setTimeout(1) })
            default: .plain(endpoint)
            }
        var form = Plan.Form.allCases.randomElement(using: &random)!
        switch scenario {
        case .notJSON: form = random.chance(0.5) ? .asyncDecoded : .callbackDecoded
        // 204 has no body to decode.
        case .noContent where form == .asyncDecoded: form = .async
        case .noContent where form == .callbackDecoded: form = .callback
        default: break
        }
        return Plan(
            id: id, label: label, scenario: scenario.rawValue, expected: scenario.mix.expected, call: call,
            form: form,
            cancel: cancel)
    }

    /// Each kind's record, and the check that every backend went after the teardown.
    func reportBackends(to report: PhaseReport) {
        for kind in kinds { report.backend(backends.stats[kind]!) }
        report.line(
            "  backends made: \(backends.made) (\(churned.value) replaced mid-run); alive after teardown: \(backends.aliveDescription)"
        )
        report.check(
            "real-server: every backend and legacy client deallocated after teardown", backends.alive == 0,
            backends.aliveDescription)
    }
}

/// A few hundred requests through a backend of each kind, which then go: whatever the first use of
/// URLSession and libcurl sets up for good exists before the baseline is taken.
private func primeReal(root: String, port: Int, options: Options, report: PhaseReport) async {
    let realm = ServiceRealm.get("soak-real-primer")
    var sent = 0
    for kind in options.backends {
        let backend: any NetworkBackend =
            switch kind {
            case .urlSession: URLSessionBackend()
            case .curl: try! CurlBackend()
            case .legacy:
                LegacyBackend(
                    client: LegacyHTTPClient(
                        configuration: legacyConfiguration(keepingURLCache: options.legacyURLCache)))
            }
        realm.reset().setBaseURL(URL(string: root)!).use(backend).addMiddleware(RetryMiddleware(fastRetry))
        await prime(200, on: realm, cancelEvery: 7) { $0.isMultiple(of: 5) ? "status/500" : "status/204" }
        sent += 200
    }
    realm.reset()
    let settled = await settle(within: 15) {
        openSockets(toPort: port) == 0 && !threadNames().contains { $0.hasPrefix("SwiftyCurl-") }
    }
    let figures = ProcessFigures.measure(port: port)
    report.line(
        "  primer: \(sent) requests through one backend of each kind, dropped; \(settled ? "settled" : "NOT settled in 15 s"): sockets to httpbin \(figures.sockets), SwiftyCurl threads \(figures.curlThreads)"
    )
    report.line(
        "  LegacyHTTPClient sessions: URLSessionConfiguration.default \(options.legacyURLCache ? "with its URLCache (--legacy-urlcache)" : "without its URLCache (--legacy-urlcache keeps it)")"
    )
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
