import Foundation
import SwiftyService
import SwiftyServiceCurl

/// The local server's small JSON file from a realm of one's choosing.
struct LiveFileIn: SwiftyServiceProtocol {
    let realm: ServiceRealm
    var path: String { "user.json" }
    var method: HTTPMethod { .get }
}

/// `live.curl.metrics`: sequential GETs through one CurlBackend from a realm that collects metrics, against
/// the same from a realm that does not (the baseline). Short alternating turns, so that load on the machine
/// falls on both alike; the goal is that measuring costs at most 5%.
func liveCurlMetrics(_ settings: Settings, base: URL) async throws -> Outcome {
    let backend = try CurlBackend()
    let measured = LiveFileIn(
        realm: ServiceRealm.get("bench-metrics-on").setBaseURL(base).use(backend).collectMetrics())
    let plain = LiveFileIn(realm: ServiceRealm.get("bench-metrics-off").setBaseURL(base).use(backend))
    _ = try await throughput(requests: 200, inFlight: 1) { _ = try await measured.request() }
    _ = try await throughput(requests: 200, inFlight: 1) { _ = try await plain.request() }
    var ours: [Double] = []
    var baseline: [Double] = []
    let turns = max(2, settings.liveRuns * 4)
    let requests = max(50, settings.liveRequests / 4)
    for turn in 0..<turns {
        let measuredFirst = turn.isMultiple(of: 2)
        for half in 0..<2 {
            if (half == 0) == measuredFirst {
                ours.append(
                    try await throughput(requests: requests, inFlight: 1) {
                        let response = try await measured.request()
                        guard response.metrics.count == 1 else { throw URLError(.badServerResponse) }
                    }.perSecond)
            } else {
                baseline.append(
                    try await throughput(requests: requests, inFlight: 1) { _ = try await plain.request() }
                        .perSecond)
            }
        }
    }
    return Outcome(
        scenario: "live.curl.metrics", ours: median(ours), baseline: median(baseline),
        unit: .requestsPerSecond,
        goal: 0.95, higherIsBetter: true, note: "metrics collected vs not, one CurlBackend")
}
