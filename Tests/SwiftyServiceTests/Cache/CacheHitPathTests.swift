import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A fresh hit is answered before the middleware chain starts when the cache is first in it; these check
/// that every way of asking gets it, and that middleware added before the cache still sees every request.
@Suite struct CacheHitPathTests {
    let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!)
    let spy = SpyBackend(
        StubBackend { _ in .init(headers: ["Cache-Control": "max-age=600"], data: Data("v".utf8)) })

    @Test func aCallbackRequestGetsTheHitToo() async throws {
        realm.use(spy).useCache(try HTTPCache())
        _ = try await TestEndpoint(realm, "item").request()
        let source = await withCheckedContinuation { continuation in
            _ = TestEndpoint(realm, "item").request { result in
                continuation.resume(returning: (try? result.get())?.source)
            }
        }
        #expect(source == .cache)
        #expect(spy.requests.count == 1)
    }

    @Test func aTaskCancelledBeforeItAsksGetsCancelledNotTheHit() async throws {
        realm.use(spy).useCache(try HTTPCache())
        _ = try await TestEndpoint(realm, "item").request()
        let realm = realm
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await TestEndpoint(realm, "item").request()
        }
        let error = await #expect(throws: ServiceError.self) { try await task.value }
        #expect(error?.kind == .cancelled)
    }

    @Test func aHitOutsideTheValidStatusesFailsAsTheServersAnswerWould() async throws {
        let notFound = StubBackend { _ in
            .init(statusCode: 404, headers: ["Cache-Control": "max-age=600"], data: Data("gone".utf8))
        }
        realm.use(notFound).useCache(try HTTPCache())
        for _ in 0..<2 {
            let error = await #expect(throws: ServiceError.self) {
                try await TestEndpoint(realm, "item").request()
            }
            #expect(error?.response?.statusCode == 404)
        }
        let hit = try await TestEndpoint(realm, "item", validStatusCodes: [404]).request()
        #expect(hit.source == .cache)
    }

    @Test func middlewareBeforeTheCacheSeesEveryHit() async throws {
        let seen = CallbackRecorder<String>()
        realm.use(spy).addMiddleware(Watching(seen: seen)).useCache(try HTTPCache())
        for _ in 0..<3 { _ = try await TestEndpoint(realm, "item").request() }
        #expect(seen.calls.count == 3, "the middleware saw the two hits as well")
        #expect(spy.requests.count == 1)
    }
}

/// Records the path of each request it passes on.
private struct Watching: Middleware {
    let seen: CallbackRecorder<String>

    func intercept(_ request: URLRequest, context: RequestContext, next: MiddlewareNext) async throws
        -> Response
    {
        seen.record(request.url?.path ?? "")
        return try await next(request)
    }
}
