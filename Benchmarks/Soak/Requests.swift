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

/// A phase's scenarios, each with its share of the requests (the shares add up to 100 or 1,000).
protocol ScenarioMix: CaseIterable {
    var share: Int { get }
}

extension ScenarioMix {
    /// A scenario drawn by share.
    static func pick(_ random: inout SoakRandom) -> Self {
        var roll = Int.random(in: 0..<allCases.map(\.share).reduce(0, +), using: &random)
        for scenario in allCases {
            if roll < scenario.share { return scenario }
            roll -= scenario.share
        }
        preconditionFailure("the roll is below the shares' total")
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

/// A random cancellation for about one request in eight.
func randomCancel(_ random: inout SoakRandom, delays: ClosedRange<TimeInterval>) -> Plan.Cancel {
    switch Double.random(in: 0..<1, using: &random) {
    case ..<0.04: .immediately
    case ..<0.10: .after(Double.random(in: delays, using: &random))
    case ..<0.12: .twice(Double.random(in: delays, using: &random))
    default: .none
    }
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
            let outcome = Outcome {
                let response = try result.get()
                if decode { _ = try response.decode(Payload.self) }
            }
            ledger.record(id, outcome)
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

/// `count` requests on `realm` before a phase's baseline, every other one in the async form and the rest
/// in the callback form; those whose index is a multiple of `cancelEvery` are cancelled at once.
func prime(_ count: Int, on realm: ServiceRealm, cancelEvery: Int? = nil, path: (Int) -> String) async {
    await withTaskGroup(of: Void.self) { group in
        for index in 0..<count {
            let endpoint = SoakEndpoint(realm: realm, path: path(index))
            let cancel = cancelEvery.map { index.isMultiple(of: $0) } ?? false
            group.addTask {
                if index.isMultiple(of: 2) {
                    let task = Task { _ = try? await endpoint.request() }
                    if cancel { task.cancel() }
                    await task.value
                } else {
                    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                        let handle = endpoint.request { _ in continuation.resume() }
                        if cancel { handle.cancel() }
                    }
                }
            }
        }
    }
}
