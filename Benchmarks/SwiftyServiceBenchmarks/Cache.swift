import Foundation
import SwiftyService

/// `BenchAPI.search` on a realm of its own, whose stub answers with `Cache-Control: max-age=3600`.
struct CachedSearch: SwiftyServiceProtocol {
    let realmName: String
    var realm: ServiceRealm { .get(realmName) }
    var path: String { "user/info" }
    var method: HTTPMethod { .get }
    var sampleData: Data { BenchAPI.sample }
    var parameters: [String: Any]? { ["q": "swift service+linux", "page": 2, "verbose": true] }

    /// An endpoint on a realm named `realmName`, set up with `cache` in front of a cacheable stub.
    init(realmName: String, cache: HTTPCache) {
        self.realmName = realmName
        ServiceRealm.get(realmName).setBaseURL(benchBase).addHeaders(benchHeaders)
            .use(
                StubBackend { _ in .init(headers: ["Cache-Control": "max-age=3600"], data: BenchAPI.sample) }
            )
            .useCache(cache)
    }
}

/// cache.hit: a fresh hit in memory through `request()`, against the same request answered by the stub
/// with no cache at all (dispatch.stub.async's path).
func cacheHit(_ settings: Settings) async -> Outcome {
    let cached = CachedSearch(realmName: "bench-cache-memory", cache: try! HTTPCache())
    return await cacheScenario(settings, cached, scenario: "cache.hit", goal: 1.0)
}

/// cache.disk.hit: a hit read from disk every time (nothing stays in memory), against the same baseline.
func cacheDiskHit(_ settings: Settings) async -> Outcome {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
        "bench-cache-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: directory) }
    let cached = CachedSearch(
        realmName: "bench-cache-disk", cache: try! HTTPCache(memoryLimit: 0, directory: directory))
    return await cacheScenario(settings, cached, scenario: "cache.disk.hit", goal: nil)
}

private func cacheScenario(_ settings: Settings, _ cached: CachedSearch, scenario: String, goal: Double?)
    async
    -> Outcome
{
    let plain = BenchAPI.search(query: "swift service+linux", page: 2, verbose: true)
    let first = try! await cached.request()
    let hit = try! await cached.request()
    precondition(
        first.source == .network && hit.source == .cache, "\(scenario): the second request is no hit")
    let (ours, baseline) = await interleavedAsync(
        runs: settings.runs, iterations: settings.iterations,
        ours: { blackHole(try! await cached.request()) },
        baseline: { blackHole(try! await plain.request()) })
    return Outcome(
        scenario: scenario, ours: ours, baseline: baseline, unit: .nanosecondsPerOperation, goal: goal,
        higherIsBetter: false, note: "baseline: the stub's round trip without a cache")
}
