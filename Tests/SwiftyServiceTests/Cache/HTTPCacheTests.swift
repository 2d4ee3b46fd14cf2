import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A clock a test moves by hand.
final class ManualClock: @unchecked Sendable {
    private let lock = NSLock()
    private var current: Date

    init(startingAt start: Date = Date(timeIntervalSince1970: 1_700_000_000)) {
        current = start
    }

    var now: Date {
        lock.lock()
        defer { lock.unlock() }
        return current
    }

    func advance(_ seconds: TimeInterval) {
        lock.lock()
        current += seconds
        lock.unlock()
    }

    /// An HTTP date for `now + offset`.
    func httpDate(_ offset: TimeInterval = 0) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: now + offset)
    }
}

@Suite struct HTTPCacheTests {
    let clock = ManualClock()
    let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!)
    let temporaryFiles = TemporaryFiles()

    func cache(directory: URL? = nil, memoryLimit: Int = 1 << 20) throws -> HTTPCache {
        let clock = clock
        return try HTTPCache(memoryLimit: memoryLimit, directory: directory, now: { clock.now })
    }

    /// A server whose answers the test scripts; it sees every request that reaches the network.
    func server(_ answer: @escaping @Sendable (URLRequest) -> StubBackend.Answer) -> SpyBackend {
        SpyBackend(StubBackend { answer($0.urlRequest) })
    }

    func get(_ path: String = "item", headers: HTTPHeaderDictionary? = nil) async throws -> Response {
        try await TestEndpoint(realm, path, headers: headers).request()
    }

    @Test func aFreshResponseIsServedFromTheCacheUntilItIsStale() async throws {
        let clock = clock
        let spy = server { _ in
            .init(headers: ["Cache-Control": "max-age=60", "Date": clock.httpDate()], data: Data("v1".utf8))
        }
        realm.use(spy).useCache(try cache())
        #expect(try await get().source == .network)
        clock.advance(30)
        let hit = try await get()
        #expect(hit.source == .cache)
        #expect(try hit.mapString() == "v1")
        #expect(spy.requests.count == 1)
        clock.advance(31)
        #expect(try await get().source == .network)
        #expect(spy.requests.count == 2)
    }

    @Test func aStaleResponseWithAnETagIsRevalidatedAndA304ServesTheStoredBody() async throws {
        let clock = clock
        let spy = server { request in
            if request.value(forHTTPHeaderField: "If-None-Match") == #""abc""# {
                return .init(
                    statusCode: 304,
                    headers: ["ETag": #""abc""#, "Cache-Control": "max-age=10", "X-Fresh": "yes"],
                    data: Data())
            }
            return .init(
                headers: ["ETag": #""abc""#, "Cache-Control": "max-age=10", "Date": clock.httpDate()],
                data: Data("body".utf8))
        }
        realm.use(spy).useCache(try cache())
        _ = try await get()
        clock.advance(20)
        let revalidated = try await get()
        #expect(revalidated.source == .revalidated)
        #expect(revalidated.statusCode == 200)
        #expect(try revalidated.mapString() == "body")
        #expect(revalidated.header("X-Fresh") == "yes")
        #expect(spy.requests.last?.value(forHTTPHeaderField: "If-None-Match") == #""abc""#)
        #expect(try await get().source == .cache, "the 304 made the entry fresh again")
        #expect(spy.requests.count == 2)
    }

    @Test func lastModifiedIsAValidatorToo() async throws {
        let clock = clock
        let modified = clock.httpDate(-1000)
        let spy = server { request in
            request.value(forHTTPHeaderField: "If-Modified-Since") == modified
                ? .init(statusCode: 304)
                : .init(
                    headers: ["Last-Modified": modified, "Cache-Control": "no-cache"], data: Data("doc".utf8))
        }
        realm.use(spy).useCache(try cache())
        _ = try await get()
        let again = try await get()
        #expect(again.source == .revalidated, "no-cache: always asked, but a 304 reuses the body")
        #expect(try again.mapString() == "doc")
    }

    @Test func noStoreIsNeverStoredAndVaryStarNeither() async throws {
        let spy = server { request in
            request.url?.path == "/private"
                ? .init(headers: ["Cache-Control": "no-store, max-age=600"])
                : .init(headers: ["Cache-Control": "max-age=600", "Vary": "*"])
        }
        realm.use(spy).useCache(try cache())
        for path in ["private", "private", "star", "star"] { _ = try await get(path) }
        #expect(spy.requests.count == 4)
    }

    @Test func varyKeepsVariantsApart() async throws {
        let spy = server { request in
            .init(
                headers: ["Cache-Control": "max-age=600", "Vary": "Accept-Language"],
                data: Data((request.value(forHTTPHeaderField: "Accept-Language") ?? "none").utf8))
        }
        realm.use(spy).useCache(try cache())
        #expect(try await get(headers: ["Accept-Language": "en"]).mapString() == "en")
        #expect(try await get(headers: ["Accept-Language": "fr"]).mapString() == "fr")
        let english = try await get(headers: ["Accept-Language": "en"])
        let french = try await get(headers: ["Accept-Language": "fr"])
        #expect(try english.mapString() == "en" && english.source == .cache)
        #expect(try french.mapString() == "fr" && french.source == .cache)
        #expect(spy.requests.count == 2)
    }

    @Test func freshnessComesFromExpiresAgeOrLastModifiedWhenThereIsNoMaxAge() async throws {
        let clock = clock
        let spy = server { request in
            switch request.url?.path {
            case "/expires": .init(headers: ["Date": clock.httpDate(), "Expires": clock.httpDate(100)])
            case "/aged":
                .init(headers: ["Date": clock.httpDate(), "Cache-Control": "max-age=100", "Age": "90"])
            default: .init(headers: ["Date": clock.httpDate(), "Last-Modified": clock.httpDate(-10_000)])
            }
        }
        realm.use(spy).useCache(try cache())
        for path in ["expires", "aged", "heuristic"] { _ = try await get(path) }
        clock.advance(50)
        #expect(try await get("expires").source == .cache)
        #expect(try await get("aged").source == .network, "90 s old on arrival, so 140 s old now")
        #expect(try await get("heuristic").source == .cache, "10% of 10,000 s is 1,000 s")
        clock.advance(1_000)
        #expect(try await get("heuristic").source == .network)
    }

    @Test func aSuccessfulUnsafeMethodInvalidatesTheURL() async throws {
        let spy = server { _ in .init(headers: ["Cache-Control": "max-age=600"]) }
        realm.use(spy).useCache(try cache())
        _ = try await get()
        #expect(try await get().source == .cache)
        _ = try await TestEndpoint(realm, "item", method: .post, parameters: ["a": 1]).request()
        #expect(try await get().source == .network)
        #expect(spy.requests.count == 3)
    }

    @Test func eachCachePolicyDoesWhatItSays() async throws {
        let clock = clock
        let spy = server { _ in
            .init(headers: ["Cache-Control": "max-age=10", "ETag": #""e""#, "Date": clock.httpDate()])
        }
        realm.use(spy).useCache(try cache())
        func sent(_ policy: URLRequest.CachePolicy) async throws -> (Response.Source, Int) {
            let before = spy.requests.count
            let response = try await TestEndpoint(realm, "item").override {
                $0.overrideGlobalCachePolicy(policy)
            }.request()
            return (response.source, spy.requests.count - before)
        }
        await #expect(throws: ServiceError.self, "nothing stored yet") {
            try await sent(.returnCacheDataDontLoad)
        }
        _ = try await get()
        clock.advance(60)
        #expect(try await sent(.returnCacheDataElseLoad) == (.cache, 0), "stale, but served")
        #expect(try await sent(.returnCacheDataDontLoad) == (.cache, 0))
        #expect(try await sent(.reloadIgnoringLocalCacheData) == (.network, 1))
        #expect(try await sent(.reloadRevalidatingCacheData).1 == 1)
        #expect(spy.requests.last?.value(forHTTPHeaderField: "If-None-Match") == #""e""#)
        _ = try await sent(.reloadIgnoringLocalAndRemoteCacheData)
        #expect(spy.requests.last?.value(forHTTPHeaderField: "Cache-Control") == "no-cache")
    }

    @Test func returnCacheDataDontLoadWithNothingStoredIsAnOfflineErrorAndSendsNothing() async throws {
        let spy = server { _ in .sampleData }
        realm.use(spy).useCache(try cache()).overrideGlobalCachePolicy(.returnCacheDataDontLoad)
        do {
            _ = try await get()
            Issue.record("expected an offline error")
        } catch let ServiceError.transport(_, underlying, _) {
            #expect((underlying as? URLError)?.code == .resourceUnavailable)
        }
        #expect(spy.requests.isEmpty)
    }

    @Test func theRealmsPerCRUDPolicyReachesServicesAndEndpoints() async throws {
        let clock = clock
        let spy = server { _ in .init(headers: ["Cache-Control": "max-age=1", "Date": clock.httpDate()]) }
        realm.use(spy).useCache(try cache()).overrideCachePolicy(
            .returnCacheDataElseLoad, forCrudMethod: .retrieve)
        let users = Service(baseURL: URL(string: "https://api.example.com/users")!)
        realm.register(users)
        _ = try await users.retrieve("1").value
        _ = try await get("thing")
        clock.advance(3_600)
        #expect(try await users.retrieve("1").value.source == .cache)
        #expect(try await get("thing").source == .cache)
        #expect(spy.requests.count == 2)
    }

    @Test func theMemoryLimitEvictsTheLeastRecentlyUsed() async throws {
        let spy = server { _ in
            .init(headers: ["Cache-Control": "max-age=600"], data: Data(repeating: 1, count: 400))
        }
        let cache = try cache(memoryLimit: 1_000)
        realm.use(spy).useCache(cache)
        _ = try await get("a")
        _ = try await get("b")
        _ = try await get("a")
        _ = try await get("c")
        #expect(cache.memoryUsage <= 1_000)
        #expect(try await get("a").source == .cache)
        #expect(try await get("b").source == .network, "b was used least recently")
    }

    @Test func theDiskCacheOutlivesTheCacheObjectAndShrugsOffCorruptFiles() async throws {
        let directory = temporaryFiles.uniquePath("cache")
        let spy = server { _ in .init(headers: ["Cache-Control": "max-age=600"], data: Data("kept".utf8)) }
        realm.use(spy).useCache(try cache(directory: directory))
        _ = try await get("a")
        _ = try await get("b")

        realm.useCache(try cache(directory: directory))
        let reborn = try await get("a")
        #expect(reborn.source == .cache)
        #expect(try reborn.mapString() == "kept")

        let files = try FileManager.default.contentsOfDirectory(
            at: directory, includingPropertiesForKeys: nil)
        #expect(files.count == 2)
        for file in files {
            let bytes = try Data(contentsOf: file)
            try bytes.prefix(bytes.count / 2).write(to: file)
        }
        realm.useCache(try cache(directory: directory))
        #expect(try await get("b").source == .network, "a truncated entry is no entry")
        #expect(try await get("b").source == .cache)
        try Data("garbage".utf8).write(to: files[0])
        realm.useCache(try cache(directory: directory))
        _ = try await get("a")
        _ = try await get("b")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).count == 2)
    }

    @Test func withoutACacheNothingIsCachedAndTheSourceIsAlwaysTheNetwork() async throws {
        let spy = server { _ in .init(headers: ["Cache-Control": "max-age=600"]) }
        realm.use(spy)
        #expect(try await get().source == .network)
        #expect(try await get().source == .network)
        #expect(spy.requests.count == 2)
    }

    @Test func twoCachesSharingADirectoryUnderConcurrentUseNeverFailOrServeAnotherURLsBody() async throws {
        // Two caches on one directory stand for two processes: each writes atomically, so whatever one
        // reads is a whole entry, of the URL it asked for.
        let directory = temporaryFiles.uniquePath("shared")
        let spy = SpyBackend(
            StubBackend { request in
                .init(
                    headers: ["Cache-Control": "max-age=600"], data: Data(request.urlRequest.url!.path.utf8))
            })
        let realms = try (0..<2).map { _ in
            uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!).use(spy)
                .useCache(try HTTPCache(memoryLimit: 2_000, directory: directory, diskLimit: 20_000))
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    for round in 0..<60 {
                        let path = "item/\((worker * 7 + round) % 25)"
                        let response = try await TestEndpoint(realms[round % 2], path).request()
                        #expect(try response.mapString() == "/" + path)
                        if round.isMultiple(of: 10) { await Task.yield() }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(spy.requests.count < 8 * 60, "the caches served some of it")
    }
}
