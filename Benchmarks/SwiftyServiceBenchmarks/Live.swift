import Foundation
import SwiftyService

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A GET of the local server's small JSON file.
struct LiveFile: SwiftyServiceProtocol {
    var realm: ServiceRealm { .get("bench-live") }
    var path: String { "user.json" }
    var method: HTTPMethod { .get }
}

/// Raw URLSession, the way a hand-written client sends the same request.
func rawRequest(_ session: URLSession, _ request: URLRequest) async throws {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
        session.dataTask(with: request) { data, response, error in
            if let error {
                continuation.resume(throwing: error)
            } else if let response = response as? HTTPURLResponse, response.statusCode == 200, data != nil {
                continuation.resume()
            } else {
                continuation.resume(throwing: URLError(.badServerResponse))
            }
        }.resume()
    }
}

/// Requests per second and CPU microseconds per request for `send`, with `inFlight` requests at a time.
func throughput(requests: Int, inFlight: Int, _ send: @escaping @Sendable () async throws -> Void)
    async throws
    -> (perSecond: Double, cpuMicroseconds: Double)
{
    let cpuStart = processCPUTime()
    let start = now()
    try await withThrowingTaskGroup(of: Void.self) { group in
        for worker in 0..<inFlight {
            let share = requests / inFlight + (worker < requests % inFlight ? 1 : 0)
            group.addTask { for _ in 0..<share { try await send() } }
        }
        try await group.waitForAll()
    }
    let seconds = Double(now() - start) / 1e9
    return (Double(requests) / seconds, Double(processCPUTime() - cpuStart) / 1_000 / Double(requests))
}

func live(
    _ settings: Settings, base: URL, inFlight: Int, scenario: String,
    backend: any NetworkBackend = URLSessionBackend(),
    goal: Double = 0.97
) async throws -> Outcome {
    let realm = ServiceRealm.get("bench-live").setBaseURL(base).use(backend)
    let session = URLSession(configuration: URLSessionBackend.defaultConfiguration())
    var request = URLRequest(url: base.appendingPathComponent("user.json"))
    request.timeoutInterval = realm.timeout
    let raw = request
    let endpoint = LiveFile()
    _ = try await throughput(requests: 50, inFlight: inFlight) { _ = try await endpoint.request() }
    _ = try await throughput(requests: 50, inFlight: inFlight) { try await rawRequest(session, raw) }

    var ours: [Double] = []
    var baseline: [Double] = []
    var oursCPU: [Double] = []
    var baselineCPU: [Double] = []
    // Alternate which goes first: the second of a pair runs on warmer connections and caches.
    for run in 0..<settings.liveRuns {
        let oursFirst = run.isMultiple(of: 2)
        var o = (perSecond: 0.0, cpuMicroseconds: 0.0)
        var b = o
        for turn in 0..<2 {
            if (turn == 0) == oursFirst {
                o = try await throughput(requests: settings.liveRequests, inFlight: inFlight) {
                    _ = try await endpoint.request()
                }
            } else if ProcessInfo.processInfo.environment["BENCH_ONLY_OURS"] == nil {
                b = try await throughput(requests: settings.liveRequests, inFlight: inFlight) {
                    try await rawRequest(session, raw)
                }
            }
        }
        ours.append(o.perSecond)
        baseline.append(b.perSecond)
        oursCPU.append(o.cpuMicroseconds)
        baselineCPU.append(b.cpuMicroseconds)
    }
    session.finishTasksAndInvalidate()
    return Outcome(
        scenario: scenario, ours: median(ours), baseline: median(baseline), unit: .requestsPerSecond,
        goal: goal, higherIsBetter: true,
        note: String(format: "CPU %.0f µs/req vs %.0f", median(oursCPU), median(baselineCPU)))
}
