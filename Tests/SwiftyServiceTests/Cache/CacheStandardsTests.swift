import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Rules of RFC 9111, RFC 9110 and RFC 8246 that the http-tests/cache-tests suite asks of an optimal cache,
/// one by one against the cache server on each backend.
@Suite(.tags(.realServer), .timeLimit(.minutes(5)))
struct CacheStandardsTests {
    @Test(arguments: CacheServer.backends)
    func anExpiresInAnyCaseKeepsAResponseFresh(_ kind: ConformingBackend) async throws {
        // RFC 9111 §4.2: although HTTP dates are case-sensitive, a cache recipient should match them in any case.
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let inAnHour = formatter.string(from: Date() + 3_600)
        for expires in [inAnHour.lowercased(), inAnHour.uppercased()] {
            let resource = try ScriptedResource(kind, headers: ["Expires: \(expires)"])
            _ = try await resource.get()
            #expect(try await resource.get().source == .cache, "Expires: \(expires)")
        }
    }

    @Test(arguments: CacheServer.backends)
    func aReloadServesAFreshImmutableResponseAndRevalidatesTheRestAskingCachesOnTheWayToo(
        _ kind: ConformingBackend
    ) async throws {
        let immutable = try ScriptedResource(
            kind, headers: ["Cache-Control: max-age=600, immutable", "ETag: \"i\""])
        _ = try await immutable.get()
        immutable.realm.overrideGlobalCachePolicy(.reloadRevalidatingCacheData)
        #expect(
            try await immutable.get().source == .cache, "RFC 8246: fresh and immutable, a reload does not ask"
        )
        #expect(immutable.sent == 1)
        immutable.clock.advance(900)
        #expect(
            try await immutable.get().source == .revalidated, "stale, even an immutable response is asked for"
        )

        let plain = try ScriptedResource(kind, headers: ["Cache-Control: max-age=600", "ETag: \"p\""])
        _ = try await plain.get()
        plain.realm.overrideGlobalCachePolicy(.reloadRevalidatingCacheData)
        #expect(try await plain.get().source == .revalidated)
        for resource in [immutable, plain] {
            let reload = try #require(resource.spy.requests.last)
            #expect(
                reload.value(forHTTPHeaderField: "Cache-Control") == "max-age=0", "as a browser's reload asks"
            )
        }
    }

    @Test(arguments: CacheServer.backends)
    func mustUnderstandStoresAStatusTheCacheKnowsDespiteNoStore(_ kind: ConformingBackend) async throws {
        // RFC 9111 §5.2.2.3: a cache that implements the status's rules ignores no-store beside must-understand.
        for (status, reused) in [("200", true), ("599", false)] {
            let resource = try ScriptedResource(
                kind, headers: ["Cache-Control: max-age=600, no-store, must-understand"],
                options: ["status": status])
            var first = try await resource.get()
            #expect(first.statusCode == Int(status))
            first = try await resource.get()
            #expect(first.source == (reused ? .cache : .network), "status \(status)")
        }
    }

    @Test(arguments: CacheServer.backends)
    func acceptLanguageSelectsTheSameVariantWhateverItsOrderAndCase(_ kind: ConformingBackend) async throws {
        let resource = try ScriptedResource(
            kind, headers: ["Cache-Control: max-age=600", "Vary: Accept-Language"])
        _ = try await resource.get(["Accept-Language": "en, de;q=0.5"])
        #expect(try await resource.get(["Accept-Language": "DE;q=0.5,EN"]).source == .cache)
        #expect(try await resource.get(["Accept-Language": "en, de"]).source == .network, "another weight")
    }

    @Test(arguments: CacheServer.backends)
    func aPOSTAnswerThatNamesItsURLAnsweresLaterGETs(_ kind: ConformingBackend) async throws {
        // RFC 9110 §9.3.3: explicit freshness and a Content-Location equal to the URL posted to.
        for (location, reused) in [("@self", true), ("/elsewhere", false)] {
            let resource = try ScriptedResource(
                kind, headers: ["Cache-Control: max-age=600", "Content-Location: \(location)"])
            let post = try await TestEndpoint(
                resource.realm, resource.path, method: .post, parameters: resource.parameters,
                encoding: .query,
                body: .data(Data("12345".utf8), contentType: "text/plain")
            ).request()
            #expect(post.source == .network)
            #expect(
                try await resource.get().source == (reused ? .cache : .network),
                "Content-Location: \(location)")
        }
    }
}
