import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// RFC 5861 against the cache server: stale-while-revalidate serves at once and revalidates once behind
/// it; stale-if-error serves a stale response when the server fails.
@Suite(.tags(.realServer), .timeLimit(.minutes(5)))
struct CacheStaleServingTests {
    @Test(arguments: CacheServer.backends)
    func staleWhileRevalidateServesAtOnceAndRevalidatesOnceForManyCallers(_ kind: ConformingBackend)
        async throws
    {
        // Stale on arrival; every answer after the first takes the server 40 s, so the callers below all
        // come while the first revalidation is under way, even on a loaded machine (under ThreadSanitizer,
        // on 2 busy cores, three cache hits took over a second; a loaded CI run stalls a test for 10 to
        // 30 s). The realm's timeout is well past the 40 s, so that the revalidation is answered.
        let resource = try ScriptedResource(
            kind, headers: ["Cache-Control: max-age=0, stale-while-revalidate=600"], options: ["delay": "40"],
            cache: try HTTPCache())
        resource.realm.setTimeout(120)
        let first = try await resource.get()
        for _ in 0..<3 {
            let stale = try await resource.get()
            #expect(stale.source == .cache && stale.data == first.data)
        }
        try await resource.spy.waitForRequests(2)
        #expect(resource.sent == 2, "one revalidation for three callers")
        // The revalidation's answer comes 40 s after it was sent; until then every GET is a stale hit.
        let revalidated: Response? = try await poll(every: 100_000_000, for: 60) {
            let latest = try await resource.get()
            return latest.data == first.data ? nil : latest
        }
        #expect(try revalidated?.mapString().hasSuffix("#2") == true, "the revalidation's answer is stored")
    }

    @Test(arguments: CacheServer.backends)
    func staleWhileRevalidateGoesThroughTheRealmsMiddleware(_ kind: ConformingBackend) async throws {
        let resource = try ScriptedResource(
            kind, headers: ["Cache-Control: max-age=0, stale-while-revalidate=600"], cache: try HTTPCache())
        let passes = PassCounter()
        resource.realm.addMiddleware(passes)
        _ = try await resource.get()
        _ = try await resource.get()
        try await resource.spy.waitForRequests(2)
        #expect(
            resource.spy.requests[1].value(forHTTPHeaderField: "X-Pass") == "3",
            "the middleware saw the first call, the second and then the revalidation")
    }

    @Test(arguments: CacheServer.backends)
    func staleIfErrorServesTheStoredResponseWhenTheServerFails(_ kind: ConformingBackend) async throws {
        for failure in ["503", "close"] {
            let resource = try ScriptedResource(
                kind, headers: ["Cache-Control: max-age=1, stale-if-error=600", #"ETag: "e""#],
                options: ["then": failure])
            let first = try await resource.get()
            resource.clock.advance(60)
            let fallback = try await resource.get()
            #expect(fallback.source == .cache && fallback.statusCode == 200, "\(failure)")
            #expect(fallback.data == first.data)
            #expect(resource.sent == 2)
            resource.clock.advance(600)
            let tooLate = try? await resource.get()
            #expect(tooLate?.source != .cache, "past the window: \(failure)")
        }
    }

    @Test(arguments: CacheServer.backends)
    func withoutStaleIfErrorOrWithMustRevalidateTheFailureComesThrough(_ kind: ConformingBackend) async throws
    {
        for control in ["max-age=1", "max-age=1, stale-if-error=600, must-revalidate"] {
            let resource = try ScriptedResource(
                kind, headers: ["Cache-Control: \(control)"], options: ["then": "503"])
            _ = try await resource.get()
            resource.clock.advance(60)
            #expect(try await resource.get().statusCode == 503, "\(control)")
        }
    }
}

/// Stamps each request it sees with how many it has seen.
private final class PassCounter: Middleware, @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0

    func intercept(_ request: URLRequest, context: RequestContext, next: MiddlewareNext) async throws
        -> Response
    {
        let pass = lock.withLock {
            count += 1
            return count
        }
        var request = request
        request.setValue(String(pass), forHTTPHeaderField: "X-Pass")
        return try await next(request)
    }
}
