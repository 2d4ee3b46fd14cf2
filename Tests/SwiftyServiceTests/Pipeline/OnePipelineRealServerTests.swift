import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A stream is a call like any other: the realm's cache stores its body whole or not at all, coalescing never
/// hands a stream out twice, and retries happen before its first body byte. Against the cache server
/// (Tests/Servers/cache_server.py: /script/<id> with `chunks`, `pace`, `cut` and `first`; /count/<id>), on
/// every backend (the legacy one does not stream: its body reaches the chain whole, as one chunk).
@Suite("One pipeline: streams with the cache, coalescing and retries", .timeLimit(.minutes(5)), .tags(.realServer))
struct OnePipelineRealServerTests {
    static let events = (1...40).map { "event \($0)" }
    static let eventBody = events.map { "data: \($0)\n\n" }.joined()

    /// A resource of its own on the cache server, answering `body` in `chunks` pieces `pace` seconds apart.
    struct Resource {
        let id = UUID().uuidString
        let realm: ServiceRealm
        var options: [String: any Sendable]

        init(
            _ realm: ServiceRealm, headers: [String], body: String = OnePipelineRealServerTests.eventBody,
            chunks: Int = 8, pace: Double = 0.01, options: [String: String] = [:]
        ) {
            self.realm = realm
            var parameters: [String: any Sendable] = [
                "h": headers + ["Content-Type: text/event-stream"], "body": body, "chunks": "\(chunks)",
                "pace": "\(pace)",
            ]
            for (name, value) in options { parameters[name] = value }
            self.options = parameters
        }

        var endpoint: TestEndpoint { TestEndpoint(realm, "script/\(id)", parameters: options) }

        /// How many requests reached the server.
        func count() async throws -> Int {
            let realm = uniqueRealm("count").setBaseURL(try CacheServer.url()).use(StubBackend())
            let counter = TestEndpoint(realm, "count/\(id)").override { $0.use(URLSessionBackend.shared) }
            struct Count: Decodable { let count: Int }
            return try await counter.request().decode(Count.self).count
        }
    }

    func realm(_ kind: ConformingBackend) throws -> ServiceRealm {
        uniqueRealm("one-pipeline").setBaseURL(try CacheServer.url()).use(try kind.make())
    }

    func events(of stream: ResponseStream) async throws -> [String] {
        var events: [String] = []
        for try await event in stream.serverSentEvents { events.append(event.data) }
        return events
    }

    // MARK: The cache

    @Test(arguments: ConformingBackend.allCases)
    func aCacheableStreamIsStoredWholeAndServedWholeToStreamsAndRequests(_ kind: ConformingBackend) async throws {
        let cache = try HTTPCache()
        let resource = Resource(try realm(kind).useCache(cache), headers: ["Cache-Control: max-age=60"])

        let first = try await resource.endpoint.stream()
        #expect(first.response.source == .network)
        #expect(try await events(of: first) == Self.events)

        let second = try await resource.endpoint.stream()
        #expect(second.response.source == .cache)
        #expect(try await events(of: second) == Self.events, "the stored body is the whole body")

        let whole = try await resource.endpoint.request()
        #expect(whole.source == .cache && whole.data == Data(Self.eventBody.utf8))
        #expect(try await resource.count() == 1)
    }

    /// The backends that stream (the legacy one has the whole body before the reader starts, which is then
    /// rightly stored). The server sends a third of the body, then waits 20 s: the body cannot end whole
    /// however slow the machine.
    @Test(arguments: CacheServer.backends)
    func aStreamItsReaderLeavesEarlyIsNotStored(_ kind: ConformingBackend) async throws {
        let cache = try HTTPCache()
        let resource = Resource(
            try realm(kind).useCache(cache), headers: ["Cache-Control: max-age=60"], chunks: 3, pace: 20)

        for try await _ in try await resource.endpoint.stream() { break }
        try await Task.sleep(for: .milliseconds(300))
        #expect(cache.memoryUsage == 0, "a body the reader left is not whole: nothing is stored")

        let again = try await resource.endpoint.stream()
        #expect(again.response.source == .network)
        #expect(try await resource.count() == 2)
    }

    @Test(arguments: ConformingBackend.allCases)
    func aStreamCutShortIsNotStored(_ kind: ConformingBackend) async throws {
        let cache = try HTTPCache()
        let resource = Resource(
            try realm(kind).useCache(cache), headers: ["Cache-Control: max-age=60"], options: ["cut": "1"])

        await #expect(throws: ServiceError.self) { _ = try await events(of: try await resource.endpoint.stream()) }
        try await Task.sleep(for: .milliseconds(200))
        #expect(cache.memoryUsage == 0, "a truncated body is never stored")
    }

    @Test(arguments: ConformingBackend.allCases)
    func aStreamLargerThanTheCacheIsReadWholeAndNotStored(_ kind: ConformingBackend) async throws {
        let cache = try HTTPCache(memoryLimit: 512)
        let resource = Resource(try realm(kind).useCache(cache), headers: ["Cache-Control: max-age=60"])

        #expect(try await events(of: try await resource.endpoint.stream()) == Self.events)
        try await Task.sleep(for: .milliseconds(200))
        #expect(cache.memoryUsage == 0)
        #expect(try await resource.endpoint.request().source == .network)
    }

    // MARK: Coalescing

    @Test(arguments: ConformingBackend.allCases)
    func identicalStreamsAtOnceEachGetTheWholeBodyOfTheirOwn(_ kind: ConformingBackend) async throws {
        let resource = Resource(try realm(kind).coalesceIdenticalRequests(), headers: [], chunks: 5, pace: 0.1)
        let endpoint = resource.endpoint

        async let first = events(of: try await endpoint.stream())
        async let second = events(of: try await endpoint.stream())
        let (one, two) = try await (first, second)

        #expect(one == Self.events && two == Self.events, "neither reader gets an empty stream")
        #expect(try await resource.count() == 2, "a stream is never shared")
    }

    // MARK: Retries

    @Test(arguments: ConformingBackend.allCases)
    func aRefusedHeadIsRetriedBeforeAnyBodyByte(_ kind: ConformingBackend) async throws {
        var policy = RetryPolicy()
        policy.clock = RetryClock(sleep: { _ in }, now: { Date() }, random: { $0.lowerBound })
        let resource = Resource(
            try realm(kind).addMiddleware(.retry(policy)), headers: [], options: ["first": "503"])

        let stream = try await resource.endpoint.stream()
        #expect(stream.response.statusCode == 200 && stream.response.attempts == 2)
        #expect(try await events(of: stream) == Self.events)
        #expect(try await resource.count() == 2)
    }

    @Test(arguments: ConformingBackend.allCases)
    func aBodyThatBreaksAfterItsHeadIsNotRetried(_ kind: ConformingBackend) async throws {
        var policy = RetryPolicy()
        policy.clock = RetryClock(sleep: { _ in }, now: { Date() }, random: { $0.lowerBound })
        let resource = Resource(try realm(kind).addMiddleware(.retry(policy)), headers: [], options: ["cut": "1"])

        let error = await #expect(throws: ServiceError.self) {
            _ = try await events(of: try await resource.endpoint.stream())
        }
        #expect(error?.kind == .transport)
        #expect(try await resource.count() == 1, "after the first body byte, nothing is sent again")
    }
}

/// Wraps a backend and holds every request until released: two calls are in flight together for as long
/// as a test needs, so that one would join the other's trip if coalescing let it.
final class HoldingBackend: NetworkBackend, @unchecked Sendable {
    private let inner: any NetworkBackend
    private let lock = NSLock()
    private var held: [@Sendable () -> Void] = []
    private var released = false
    private var sent = 0

    init(_ inner: any NetworkBackend) { self.inner = inner }

    var supportsStreaming: Bool { inner.supportsStreaming }
    var supportedTLSFeatures: TLSFeatures { inner.supportedTLSFeatures }
    var supportedHTTPVersions: Set<HTTPVersionPreference> { inner.supportedHTTPVersions }

    /// How many requests reached this backend.
    var count: Int { lock.withLock { sent } }

    func send(
        _ request: BackendRequest, completion: @escaping @Sendable (Result<Response, any Error>) -> Void
    ) -> BackendTask {
        let go: @Sendable () -> Void = { [inner] in _ = inner.send(request, completion: completion) }
        let now = lock.withLock {
            sent += 1
            if !released { held.append(go) }
            return released
        }
        if now { go() }
        return .uncancellable
    }

    /// Lets every held request go, and every later one at once.
    func release() {
        let waiting = lock.withLock {
            released = true
            defer { held = [] }
            return held
        }
        for go in waiting { go() }
    }

    /// Waits until `count` requests have reached this backend.
    func waitFor(_ count: Int, within seconds: TimeInterval = 10) async throws -> Bool {
        try await waitUntil(every: 5_000_000, for: seconds) { self.count >= count }
    }
}

/// Coalescing joins only calls that would send the same bytes under the same rules: a call that differs in
/// its TLS policy, cookie jar, backend or anything it sends gets a trip and an answer of its own.
@Suite("Coalescing only what is the same", .timeLimit(.minutes(5)), .tags(.realServer))
struct CoalescingRulesTests {
    /// Starts `a`, waits until it reached the backend, starts `b`, and expects `b` to reach a backend of its
    /// own (`backends` together see 2 requests) before anything is answered.
    func bothSent<A: Sendable, B: Sendable>(
        _ backends: [HoldingBackend], _ a: @escaping @Sendable () async throws -> A,
        _ b: @escaping @Sendable () async throws -> B
    ) async throws -> (Result<A, any Error>, Result<B, any Error>) {
        let total: @Sendable () -> Int = { backends.reduce(0) { $0 + $1.count } }
        let first = Task { try await a() }
        #expect(try await waitUntil(every: 5_000_000, for: 10) { total() >= 1 })
        let second = Task { try await b() }
        let separate = try await waitUntil(every: 5_000_000, for: 5) { total() >= 2 }
        for backend in backends { backend.release() }
        #expect(separate, "the second call joined the first one's trip")
        return (await first.result, await second.result)
    }

    func tlsRealm(_ backend: HoldingBackend) throws -> ServiceRealm {
        let base = try TLSFixtures.value("TLS_VALID_URL")
        return uniqueRealm("coalescing-tls").setBaseURL(URL(string: base)!).use(backend)
            .setTLSPolicy(try TLSFixtures.trustingCA()).coalesceIdenticalRequests()
    }

    @Test func identicalCallsStillShareOneTrip() async throws {
        let backend = HoldingBackend(try CurlBackend())
        let endpoint = TestEndpoint(try tlsRealm(backend), "same")
        let first = Task { try await endpoint.request().statusCode }
        #expect(try await backend.waitFor(1))
        let second = Task { try await endpoint.request().statusCode }
        try await Task.sleep(for: .milliseconds(300))
        backend.release()
        let statuses = [try await first.value, try await second.value]
        #expect(statuses == [200, 200])
        #expect(backend.count == 1, "the control: the same call under the same rules is shared")
    }

    @Test func aCallWithAnotherPinGetsItsOwnTripAndItsOwnFailure() async throws {
        let backend = HoldingBackend(try CurlBackend())
        let endpoint = TestEndpoint(try tlsRealm(backend), "pinned")
        let wrongPin = try TLSFixtures.trustingCA { $0.pinnedPublicKeys = [try TLSFixtures.otherPin()] }
        let (plain, pinned) = try await bothSent(
            [backend], { try await endpoint.request().statusCode },
            { try await endpoint.override { $0.setTLSPolicy(wrongPin) }.request().statusCode })
        #expect(try plain.get() == 200)
        #expect((pinned.failure as? ServiceError)?.tlsFailure != nil, "the stricter policy is applied: \(pinned)")
    }

    @Test func aCallWithoutThePrivateCAGetsItsOwnTripAndItsOwnFailure() async throws {
        let backend = HoldingBackend(try CurlBackend())
        let endpoint = TestEndpoint(try tlsRealm(backend), "system-roots")
        let (trusting, system) = try await bothSent(
            [backend], { try await endpoint.request().statusCode },
            { try await endpoint.override { $0.setTLSPolicy(TLSPolicy()) }.request().statusCode })
        #expect(try trusting.get() == 200)
        #expect((system.failure as? ServiceError)?.tlsFailure != nil, "the private CA is not trusted: \(system)")
    }

    @Test func callsWithDifferentCookieJarsEachSendTheirOwnCookies() async throws {
        let backend = HoldingBackend(try CurlBackend())
        let first = CookieJar()
        let second = CookieJar()
        let base = try HTTPBin.url()
        first.store(setCookieHeaders: ["jar=first"], from: base)
        second.store(setCookieHeaders: ["jar=second"], from: base)
        let realm = uniqueRealm("coalescing-jars").setBaseURL(base).use(backend).useCookies(first)
            .coalesceIdenticalRequests()
        let endpoint = TestEndpoint(realm, "cookies")
        struct Cookies: Decodable { let cookies: [String: String] }
        let (one, two) = try await bothSent(
            [backend], { try await endpoint.request().decode(Cookies.self).cookies },
            { try await endpoint.override { $0.useCookies(second) }.request().decode(Cookies.self).cookies })
        #expect(try one.get() == ["jar": "first"])
        #expect(try two.get() == ["jar": "second"])
    }

    @Test func callsThroughDifferentBackendsEachReachTheirOwn() async throws {
        let curl = try CurlBackend()
        let first = HoldingBackend(curl)
        let second = HoldingBackend(curl)
        let realm = uniqueRealm("coalescing-backends").setBaseURL(try HTTPBin.url()).use(first)
            .coalesceIdenticalRequests()
        let endpoint = TestEndpoint(realm, "get")
        let (one, two) = try await bothSent(
            [first, second], { try await endpoint.request().statusCode },
            { try await endpoint.override { $0.use(second) }.request().statusCode })
        #expect(try one.get() == 200)
        #expect(try two.get() == 200)
        #expect(first.count == 1 && second.count == 1)
    }

    @Test(
        "Calls that differ in headers, timeout, size limit, metrics, HTTP version or one-off settings never share",
        arguments: [
            "header", "timeout", "size limit", "metrics", "HTTP version",
        ])
    func callsThatDifferInWhatTheySendOrAcceptDoNotShare(_ difference: String) async throws {
        let backend = HoldingBackend(try CurlBackend())
        let realm = uniqueRealm("coalescing-fields").setBaseURL(try HTTPBin.url()).use(backend)
            .coalesceIdenticalRequests()
        let endpoint = TestEndpoint(realm, "get")
        let other: OverriddenEndpoint<TestEndpoint> =
            switch difference {
            case "header": endpoint.override { $0.addHeader("X-Other", withValue: "1") }
            case "timeout": endpoint.override { $0.setTimeout(7) }
            case "size limit": endpoint.override { $0.setMaxResponseSize(10) }
            case "HTTP version": endpoint.override { $0.setHTTPVersion(.http1_1) }
            default: endpoint.override { $0.collectMetrics() }
            }
        let (one, two) = try await bothSent(
            [backend], { try await endpoint.request().statusCode }, { try await other.request() })
        #expect(try one.get() == 200)
        if difference == "size limit" {
            #expect((two.failure as? ServiceError)?.kind == .transport, "its own limit applies: \(two)")
        } else {
            #expect(try two.get().statusCode == 200)
        }
    }
}
