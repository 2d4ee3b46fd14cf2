import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The HTTP cache against httpbin, with a wrapper that counts what reaches the network.
@Suite(.tags(.realServer)) struct CacheRealServerTests {
    let temporaryFiles = TemporaryFiles()

    func realm(_ cache: HTTPCache) throws -> (ServiceRealm, SpyBackend) {
        let spy = SpyBackend(URLSessionBackend())
        return (try HTTPBin.realm(backend: spy).useCache(cache), spy)
    }

    @Test func cache60IsServedFromTheCacheTheSecondTime() async throws {
        // httpbin /cache/3600: Cache-Control: public, max-age=3600; an hour, so that the entry is still
        // fresh the second time however long a loaded machine stalls between the two requests.
        let (realm, spy) = try realm(HTTPCache())
        let first = try await TestEndpoint(realm, "cache/3600").request()
        let second = try await TestEndpoint(realm, "cache/3600").request()
        #expect(first.source == .network && second.source == .cache)
        #expect(second.data == first.data)
        #expect(spy.requests.count == 1)
    }

    @Test func etagAndCacheAreRevalidatedWith304AndServedFromTheCache() async throws {
        // httpbin /etag/{etag} and /cache: 304 when the request carries the validators they sent.
        let (realm, spy) = try realm(HTTPCache())
        for path in ["etag/abc123", "cache"] {
            let first = try await TestEndpoint(realm, path).request()
            let second = try await TestEndpoint(realm, path).request()
            #expect(first.source == .network)
            #expect(second.source == .revalidated, "\(path)")
            #expect(second.statusCode == 200 && second.data == first.data)
        }
        #expect(spy.requests[1].value(forHTTPHeaderField: "If-None-Match") == "abc123")
        #expect(spy.requests[3].value(forHTTPHeaderField: "If-Modified-Since") != nil)
        #expect(spy.requests.count == 4)
    }

    @Test func noStoreIsNeverStored() async throws {
        // httpbin /response-headers sets the headers its query names.
        let (realm, spy) = try realm(HTTPCache())
        let endpoint = TestEndpoint(
            realm, "response-headers", parameters: ["Cache-Control": "no-store, max-age=600"])
        _ = try await endpoint.request()
        #expect(try await endpoint.request().source == .network)
        #expect(spy.requests.count == 2)
    }

    @Test func varyKeepsTwoVariantsApart() async throws {
        // httpbin /response-headers?Vary=X-Variant: the stored variant depends on the request's X-Variant.
        let (realm, spy) = try realm(HTTPCache())
        func get(_ variant: String) async throws -> Response {
            try await TestEndpoint(
                realm, "response-headers", parameters: ["Cache-Control": "max-age=600", "Vary": "X-Variant"],
                headers: ["X-Variant": variant]
            ).request()
        }
        #expect(try await get("a").source == .network)
        #expect(try await get("b").source == .network)
        #expect(try await get("a").source == .cache)
        #expect(try await get("b").source == .cache)
        #expect(spy.requests.count == 2)
    }

    @Test func aPOSTToAURLInvalidatesItsCachedGET() async throws {
        // httpbin /response-headers answers GET and POST alike.
        let (realm, spy) = try realm(HTTPCache())
        let get = TestEndpoint(realm, "response-headers", parameters: ["Cache-Control": "max-age=600"])
        _ = try await get.request()
        #expect(try await get.request().source == .cache)
        let url = try get.urlRequest().url!
        let post = TestEndpoint(realm, "", method: .post).override { $0.setBaseURL(url) }
        #expect(try post.urlRequest().url == url)
        _ = try await post.request()
        #expect(try await get.request().source == .network)
        #expect(spy.requests.count == 3)
    }

    @Test func returnCacheDataDontLoadAnswersWithNoServerRunning() async throws {
        // An httpbin of the test's own, stopped half-way: /cache/60, then nothing.
        let server = try await OwnHTTPBin.start()
        var stopped = false
        defer { if !stopped { Task { try? await server.stop() } } }
        let cache = try HTTPCache()
        let realm = uniqueRealm().setBaseURL(server.url).useCache(cache)
        let online = try await TestEndpoint(realm, "cache/60").request()
        try await server.stop()
        stopped = true
        realm.overrideGlobalCachePolicy(.returnCacheDataDontLoad)
        let offline = try await TestEndpoint(realm, "cache/60").request()
        #expect(offline.source == .cache && offline.data == online.data)
        await #expect {
            try await TestEndpoint(realm, "cache/30").request()
        } throws: { error in
            guard case let ServiceError.transport(_, underlying, _) = error else { return false }
            return (underlying as? URLError)?.code == .resourceUnavailable
        }
    }

    @Test func theDiskCacheSurvivesANewCacheAndACorruptedFile() async throws {
        // httpbin /cache/3600 (max-age=3600: fresh throughout the test, however long a loaded machine
        // stalls it), stored on disk, read back by a cache made afresh from the directory.
        let directory = temporaryFiles.uniquePath("cache")
        let (realm, spy) = try realm(try HTTPCache(directory: directory))
        _ = try await TestEndpoint(realm, "cache/3600").request()
        realm.useCache(try HTTPCache(directory: directory))
        #expect(try await TestEndpoint(realm, "cache/3600").request().source == .cache)
        #expect(spy.requests.count == 1)

        for file in try FileManager.default.contentsOfDirectory(
            at: directory, includingPropertiesForKeys: nil)
        {
            try Data("{ not a cache entry".utf8).write(to: file)
        }
        realm.useCache(try HTTPCache(directory: directory))
        #expect(try await TestEndpoint(realm, "cache/3600").request().source == .network)
        #expect(try await TestEndpoint(realm, "cache/3600").request().source == .cache)
        #expect(spy.requests.count == 2)
    }

    @Test func theRealmsPerCRUDPolicyIsHonouredForAServiceAndAnEndpoint() async throws {
        // httpbin /cache: Last-Modified is now, so the entry is stale at once; only the retrieve policy
        // (.returnCacheDataElseLoad) lets it be served without asking the server.
        let (realm, spy) = try realm(HTTPCache())
        realm.overrideCachePolicy(.returnCacheDataElseLoad, forCrudMethod: .retrieve)
        let service = Service(baseURL: try HTTPBin.url().appendingPathComponent("cache"))
        realm.register(service)
        _ = try await service.retrieve().value
        #expect(try await service.retrieve().value.source == .cache)
        _ = try await TestEndpoint(realm, "etag/per-crud").request()
        #expect(try await TestEndpoint(realm, "etag/per-crud").request().source == .cache)
        #expect(spy.requests.count == 2)

        realm.overrideCachePolicy(.useProtocolCachePolicy, forCrudMethod: .retrieve)
        #expect(try await service.retrieve().value.source == .revalidated)
        #expect(spy.requests.count == 3)
    }
}
