import Foundation
import SwiftyService
import Testing

/// Which fields a stored response keeps, and what its directives allow, against the cache server.
@Suite(.tags(.realServer), .timeLimit(.minutes(5)))
struct CacheStoredFieldsTests {
    @Test(arguments: CacheServer.backends)
    func connectionListedAndHopByHopFieldsAreNotReplayed(_ kind: ConformingBackend) async throws {
        let resource = try ScriptedResource(
            kind,
            headers: [
                "Cache-Control: max-age=600", "Connection: X-Hop", "X-Hop: secret", "Keep-Alive: timeout=5",
                "X-Kept: yes",
            ])
        _ = try await resource.get()
        let hit = try await resource.get()
        #expect(hit.source == .cache)
        #expect(
            hit.header("X-Hop") == nil && hit.header("Keep-Alive") == nil && hit.header("Connection") == nil)
        #expect(hit.header("X-Kept") == "yes")
    }

    @Test(arguments: CacheServer.backends)
    func noCacheNamingFieldsReusesTheResponseWithoutThem(_ kind: ConformingBackend) async throws {
        let resource = try ScriptedResource(
            kind,
            headers: [#"Cache-Control: max-age=600, no-cache="X-Secret""#, "X-Secret: s", "X-Public: p"])
        let first = try await resource.get()
        #expect(first.header("X-Secret") == "s", "the network's answer is whole")
        let hit = try await resource.get()
        #expect(hit.source == .cache && hit.header("X-Secret") == nil && hit.header("X-Public") == "p")
    }

    @Test(arguments: CacheServer.backends)
    func publicAllowsHeuristicFreshnessForAnyStatus(_ kind: ConformingBackend) async throws {
        for (control, reused) in [("public", true), ("private", false)] {
            // 202 is not among the statuses heuristically cacheable by default.
            let resource = try ScriptedResource(
                kind, headers: ["Cache-Control: \(control)", "Last-Modified: @now-100000"],
                options: ["status": "202"])
            _ = try await resource.get()
            #expect(try await resource.get().source == (reused ? .cache : .network), "\(control)")
        }
    }

    @Test(arguments: CacheServer.backends)
    func varyMatchesRequestValuesThatDifferOnlyInListSpacing(_ kind: ConformingBackend) async throws {
        let resource = try ScriptedResource(
            kind, headers: ["Cache-Control: max-age=600", "Vary: Accept-Language"])
        _ = try await resource.get(["Accept-Language": "en,fr"])
        #expect(try await resource.get(["Accept-Language": "en ,  fr"]).source == .cache)
        #expect(try await resource.get(["Accept-Language": "de"]).source == .network)
    }
}
