import Foundation
import ProcessProbes
import SwiftyService

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The stub phase's mix: what each scenario is answered with (`stubAnswer`) and what the caller must get.
private enum StubScenario: String, ScenarioMix {
    case ok
    case okDelayed = "ok-delayed"
    case overrideOK = "override-ok"
    case transport
    case thrown
    case status500 = "status-500"
    case status404 = "status-404"
    case timeoutAnswer = "timeout-answer"
    case slowerThanTimeout = "slower-than-timeout"
    case resourceTimeout = "resource-timeout"
    case invalidJSON = "invalid-json"
    case invalidHeader = "invalid-header"
    case noScheme = "no-scheme"

    var share: Int { mix.share }

    /// Percent of the requests, and the outcome the caller must get.
    var mix: (share: Int, expected: Outcome) {
        switch self {
        case .ok: (35, .success)
        case .okDelayed: (15, .success)
        case .overrideOK: (6, .success)
        case .transport: (7, .transport)
        case .thrown: (2, .transport)
        case .status500: (7, .unacceptableStatusCode)
        case .status404: (4, .unacceptableStatusCode)
        case .timeoutAnswer: (5, .timedOut)
        case .slowerThanTimeout: (3, .timedOut)
        case .resourceTimeout: (2, .timedOut)
        case .invalidJSON: (8, .decoding)
        case .invalidHeader: (3, .invalidRequest)
        case .noScheme: (3, .invalidRequest)
        }
    }
}

/// What the stub answers, from the scenario the endpoint carries.
@Sendable private func stubAnswer(_ request: BackendRequest) throws -> StubBackend.Answer {
    let scenario = (request.endpoint as? SoakEndpoint).flatMap { StubScenario(rawValue: $0.scenario) } ?? .ok
    switch scenario {
    case .ok, .overrideOK, .invalidHeader, .noScheme: return .sampleData
    case .okDelayed: return StubBackend.Answer.sampleData.delayed(Double.random(in: 0.0005...0.005))
    case .transport: return .failure(URLError(.networkConnectionLost))
    case .thrown: throw URLError(.cannotConnectToHost)
    case .status500: return .status(500)
    case .status404: return .status(404, data: Data("no such thing".utf8))
    case .timeoutAnswer: return .timeout
    case .slowerThanTimeout: return StubBackend.Answer.sampleData.delayed(0.05)
    case .resourceTimeout: return StubBackend.Answer.sampleData.delayed(0.1)
    case .invalidJSON: return .json(#"{"ok": tru"#)
    }
}

func runStubPhase(_ options: Options) async -> PhaseReport {
    // Primer: the thread pools and lazily made globals that any use of the library brings exist before
    // the baseline is taken, so that they are not counted as the phase's.
    await primeStub()

    // The monitor's thread runs from before the baseline to after the last figure.
    let monitor = PeakMonitor(port: nil)
    let before = ProcessFigures.measure(port: nil, heap: true)
    let rig = StubRig(seed: options.seed)
    let mutator = rig.mutate(seed: options.seed ^ 0xA5A5)
    var traffic = await drive(
        count: options.stubRequests, options: options, seed: options.seed, plan: rig.plan)
    let rest = await traffic.rest(stopping: mutator, port: nil, releaseWait: 10) {
        rig.stats.completions.alive == 0
    }

    // Teardown: the realm lets go of its backend; every stub made must then go away.
    rig.realm.reset()
    rig.current.withLock { $0 = nil }
    let teardown = await awaitTeardown(to: before, port: nil) { rig.backendsGone }
    let peak = monitor.finish()

    let report = PhaseReport("stub")
    let stats = rig.stats
    report.traffic(traffic, rest: rest, teardown: teardown)
    report.leaks(before: before, atRest: rest.figures, after: teardown.after, peak: peak, socketsLabel: nil)
    report.memory(
        traffic.memory, bound: options.maxGrowthPerRequest, heapBound: options.maxStubHeapGrowthPerRequest)
    report.objects(watch: traffic.watch)
    report.backend(stats)
    report.check(
        "stub: backends released after teardown", rig.backendsGone,
        "tracking wrappers alive \(stats.instances.alive) of \(stats.instances.created), StubBackends alive \(rig.stubs.alive.count) of \(rig.stubs.added)"
    )
    report.line(
        "  backends: \(stats.instances.created) StubBackends made by the realm changes, \(stats.instances.alive) alive after teardown"
    )
    return report
}

/// The stub phase's realm and the stubs behind it.
private final class StubRig: Sendable {
    static let root = "https://stub.soak.example/v1"
    let realm = ServiceRealm.get("soak-stub")
    let stats = BackendStats("StubBackend")
    let stubs = WeakSet<StubBackend>()
    let current = Locked<TrackingBackend?>(nil)
    let callbackQueue = DispatchQueue(label: "soak.stub.callbacks")

    init(seed: UInt64) {
        var random = SoakRandom(seed: seed ^ 0x5157)
        let first = makeBackend(&random)
        current.withLock { $0 = first }
        realm.reset().setBaseURL(URL(string: Self.root)!).use(first)
    }

    /// Every stub and wrapper made went, once the realm let go of them.
    var backendsGone: Bool { stats.instances.alive == 0 && stubs.alive.isEmpty }

    func makeBackend(_ random: inout SoakRandom) -> TrackingBackend {
        let timing: StubBackend.Timing = random.chance(0.3) ? .delayed(0.001) : .immediate
        let stub = StubBackend(
            timing, logLimit: [0, 16, 1_000].randomElement(using: &random)!, answer: stubAnswer)
        stubs.add(stub)
        return TrackingBackend(stub, stats: stats)
    }

    /// The next request: a scenario of the mix, sent in a random form, now and then cancelled.
    func plan(_ id: Int, _ random: inout SoakRandom) -> Plan {
        let scenario = StubScenario.pick(&random)
        var endpoint = SoakEndpoint(
            realm: realm, path: "soak/\(scenario.rawValue)", scenario: scenario.rawValue)
        endpoint.retries = random.chance(0.25)
        switch scenario {
        case .invalidHeader: endpoint.extraHeaders = ["X-Broken": "line\r\nInjected: yes"]
        case .noScheme: endpoint.ownBaseURL = URL(string: "stub.soak.example/v1")
        default: break
        }
        let call: Call =
            switch scenario {
            case .overrideOK:
                .overridden(endpoint.override { $0.addHeader("X-Override", withValue: "\(id)") })
            case .slowerThanTimeout: .overridden(endpoint.override { $0.setTimeout(0.02) })
            case .resourceTimeout: .overridden(endpoint.override { $0.setResourceTimeout(0.02) })
            default: .plain(endpoint)
            }
        var form = Plan.Form.allCases.randomElement(using: &random)!
        if scenario == .invalidJSON { form = random.chance(0.5) ? .asyncDecoded : .callbackDecoded }
        let cancel = randomCancel(&random, delays: 0...0.003)
        return Plan(
            id: id, label: "stub", scenario: scenario.rawValue, expected: scenario.mix.expected, call: call,
            form: form, cancel: cancel)
    }

    /// Changes the realm all the time: headers, base URL, backend, retry middleware, callback queue,
    /// coalescing.
    func mutate(seed: UInt64) -> LoopThread {
        realmChanges(every: 0.001, seed: seed) { [self] number, random in
            changeRealm(
                realm, number, root: Self.root, queue: callbackQueue, coalescing: true, &random,
                pickBackend: nextBackend)
        }
    }

    /// The backend of a new configuration: now and then a new stub, so that old ones must go away once
    /// their requests are done.
    func nextBackend(_ random: inout SoakRandom) -> TrackingBackend {
        let backend = random.chance(0.2) ? makeBackend(&random) : current.value!
        current.withLock { $0 = backend }
        return backend
    }
}

/// A few thousand stub requests in every form, before any baseline is taken.
private func primeStub() async {
    let realm = ServiceRealm.get("soak-primer")
    realm.reset().setBaseURL(URL(string: "https://primer.soak.example")!).use(StubBackend(.delayed(0.001)))
        .addMiddleware(RetryMiddleware(fastRetry))
    await prime(2_000, on: realm) { _ in "primer" }
    realm.reset()
    try? await Task.sleep(nanoseconds: 200_000_000)
}
