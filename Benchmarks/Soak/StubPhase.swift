import Foundation
import ProcessProbes
import SwiftyService

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The stub phase's mix: what each scenario is answered with and what the caller must get.
private enum StubScenario: String, CaseIterable {
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

    /// Percent of the requests.
    var weight: Int {
        switch self {
        case .ok: 35
        case .okDelayed: 15
        case .overrideOK: 6
        case .transport: 7
        case .thrown: 2
        case .status500: 7
        case .status404: 4
        case .timeoutAnswer: 5
        case .slowerThanTimeout: 3
        case .resourceTimeout: 2
        case .invalidJSON: 8
        case .invalidHeader: 3
        case .noScheme: 3
        }
    }

    var expected: Outcome {
        switch self {
        case .ok, .okDelayed, .overrideOK: .success
        case .transport, .thrown: .transport
        case .status500, .status404: .unacceptableStatusCode
        case .timeoutAnswer, .slowerThanTimeout, .resourceTimeout: .timedOut
        case .invalidJSON: .decoding
        case .invalidHeader, .noScheme: .invalidRequest
        }
    }

    static func pick(_ random: inout SoakRandom) -> StubScenario {
        var roll = Int.random(in: 0..<100, using: &random)
        for scenario in allCases {
            if roll < scenario.weight { return scenario }
            roll -= scenario.weight
        }
        return .ok
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
    let report = PhaseReport("stub")
    let count = options.stubRequests

    // Primer: the thread pools and lazily made globals that any use of the library brings exist before
    // the baseline is taken, so that they are not counted as the phase's.
    await primeStub()

    // The monitor's thread runs from before the baseline to after the last figure.
    let monitor = PeakMonitor(port: nil)
    let before = ProcessFigures.measure(port: nil, heap: true)
    let stats = BackendStats("StubBackend")
    let stubs = WeakSet<StubBackend>()
    let realm = ServiceRealm.get("soak-stub")
    let callbackQueue = DispatchQueue(label: "soak.stub.callbacks")
    let root = "https://stub.soak.example/v1"
    @Sendable func makeBackend(_ random: inout SoakRandom) -> TrackingBackend {
        let timing: StubBackend.Timing = random.chance(0.3) ? .delayed(0.001) : .immediate
        let stub = StubBackend(
            timing, logLimit: [0, 16, 1_000].randomElement(using: &random)!, answer: stubAnswer)
        stubs.add(stub)
        return TrackingBackend(stub, stats: stats)
    }
    var setupRandom = SoakRandom(seed: options.seed ^ 0x5157)
    let current = Shared<TrackingBackend?>(makeBackend(&setupRandom))
    realm.reset().setBaseURL(URL(string: root)!).use(current.value!)

    // The realm changes all the time: headers, base URL, backend (a new stub now and then, so that old
    // ones must go away once their requests are done), retry middleware, callback queue, coalescing.
    let mutator = RealmMutator(interval: 0.001, seed: options.seed ^ 0xA5A5) { number, random in
        switch Int.random(in: 0..<4, using: &random) {
        case 0:
            realm.addHeader("X-Soak-Version", withValue: String(number))
        case 1:
            realm.setBaseURL(baseVariant(root, number, &random))
        default:
            let backend = random.chance(0.2) ? makeBackend(&random) : current.value!
            current.value = backend
            let retry = random.chance(0.4)
            let queue = random.chance(0.3) ? callbackQueue : nil
            let coalesce = random.chance(0.2)
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

    let gate = Gate(limit: options.concurrency.lowerBound)
    let ledger = Ledger(count: count, gate: gate)
    let watch = Watch()
    var memory = MemoryTrail(warmup: options.warmup)
    var forms: [Plan.Form: Int] = [:]
    let started = now()
    await drive(
        count: count, ledger: ledger, gate: gate, watch: watch, concurrency: options.concurrency,
        seed: options.seed,
        plan: { id, random in
            let scenario = StubScenario.pick(&random)
            var endpoint = SoakEndpoint(
                realm: realm, path: "soak/\(scenario.rawValue)", scenario: scenario.rawValue)
            endpoint.retries = random.chance(0.25)
            var call = Call.plain(endpoint)
            switch scenario {
            case .invalidHeader:
                endpoint.extraHeaders = ["X-Broken": "line\r\nInjected: yes"]
                call = .plain(endpoint)
            case .noScheme:
                endpoint.ownBaseURL = URL(string: "stub.soak.example/v1")
                call = .plain(endpoint)
            case .overrideOK:
                call = .overridden(endpoint.override { $0.addHeader("X-Override", withValue: "\(id)") })
            case .slowerThanTimeout:
                call = .overridden(endpoint.override { $0.setTimeout(0.02) })
            case .resourceTimeout:
                call = .overridden(endpoint.override { $0.setResourceTimeout(0.02) })
            default:
                break
            }
            var form = Plan.Form.allCases.randomElement(using: &random)!
            if scenario == .invalidJSON { form = random.chance(0.5) ? .asyncDecoded : .callbackDecoded }
            forms[form, default: 0] += 1
            return Plan(
                id: id, label: "stub", scenario: scenario.rawValue, expected: scenario.expected, call: call,
                form: form, cancel: randomCancel(&random, delays: 0...0.003))
        },
        checkpoint: { sent in memory.note(sent: sent) })
    let sendingTime = now() - started
    let drained = await settle(within: 30) { gate.current == 0 }
    let wall = now() - started
    let changes = mutator.stop()
    let released = await settle(within: 10) {
        watch.callbacks.alive == 0 && watch.handles.alive == 0 && stats.completions.alive == 0
    }
    let atRest = ProcessFigures.measure(port: nil, heap: true)
    memory.finish(
        residentKB: atRest.residentKB, heap: atRest.heapBytes, requests: count)

    // Teardown: the realm lets go of its backend; every stub made must then go away.
    realm.reset()
    current.value = nil
    let teardown = await awaitTeardown(to: before, port: nil) {
        stats.instances.alive == 0 && stubs.alive.isEmpty
    }
    let after = teardown.after
    let peak = monitor.finish()

    let summary = ledger.summary(sent: count)
    report.requests(
        summary, wall: wall, sendingTime: sendingTime, gate: gate, concurrency: options.concurrency,
        changes: changes, forms: forms)
    report.settling(drained: drained, released: released, releaseWait: 10, teardown: teardown)
    report.exactlyOnce(summary)
    report.leaks(before: before, atRest: atRest, after: after, peak: peak, socketsLabel: nil)
    report.memory(memory, bound: options.maxGrowthPerRequest, heapBound: options.maxStubHeapGrowthPerRequest)
    report.objects(watch: watch)
    report.backend(stats)
    report.check(
        "stub: backends released after teardown", stats.instances.alive == 0 && stubs.alive.isEmpty,
        "tracking wrappers alive \(stats.instances.alive) of \(stats.instances.created), StubBackends alive \(stubs.alive.count) of \(stubs.added)"
    )
    report.line(
        "  backends: \(stats.instances.created) StubBackends made by the realm changes, \(stats.instances.alive) alive after teardown"
    )
    return report
}

/// The same base URL written three ways: as given, with a trailing slash, with a query of its own.
func baseVariant(_ root: String, _ number: Int, _ random: inout SoakRandom) -> URL {
    switch Int.random(in: 0..<3, using: &random) {
    case 0: URL(string: root)!
    case 1: URL(string: root + "/")!
    default: URL(string: root + "/?realm=\(number)")!
    }
}

/// A random cancellation for about one request in eight.
func randomCancel(_ random: inout SoakRandom, delays: ClosedRange<TimeInterval>) -> Plan.Cancel {
    let roll = Double.random(in: 0..<1, using: &random)
    switch roll {
    case ..<0.04: return .immediately
    case ..<0.10: return .after(Double.random(in: delays, using: &random))
    case ..<0.12: return .twice(Double.random(in: delays, using: &random))
    default: return .none
    }
}

/// A few thousand stub requests in every form, before any baseline is taken.
private func primeStub() async {
    let realm = ServiceRealm.get("soak-primer")
    realm.reset().setBaseURL(URL(string: "https://primer.soak.example")!).use(StubBackend(.delayed(0.001)))
        .addMiddleware(RetryMiddleware(fastRetry))
    let endpoint = SoakEndpoint(realm: realm, path: "primer")
    await withTaskGroup(of: Void.self) { group in
        for index in 0..<2_000 {
            group.addTask {
                if index.isMultiple(of: 2) {
                    _ = try? await endpoint.request()
                } else {
                    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                        endpoint.request { _ in continuation.resume() }
                    }
                }
            }
        }
    }
    realm.reset()
    try? await Task.sleep(nanoseconds: 200_000_000)
}
