import Foundation
import SwiftyService
import SwiftyServiceTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Cookies are a realm's, never a backend's: a realm keeps none unless it asks, a jar serves only the realms
/// given it, an explicit `Cookie` header is never dropped, and every backend behaves alike — redirects
/// included. Against httpbin's `/cookies` (echoes the request's cookies) and `/cookies/set` (sets them, then
/// redirects to `/cookies`).
@Suite("Cookies", .timeLimit(.minutes(5)), .tags(.realServer))
struct CookieTests {
    let temporaryFiles = TemporaryFiles()

    struct Cookies: Decodable {
        let cookies: [String: String]
    }

    func cookies(_ endpoint: TestEndpoint) async throws -> [String: String] {
        try await endpoint.request().decode(Cookies.self).cookies
    }

    @Test(arguments: ConformingBackend.allCases)
    func aRealmKeepsNoCookiesUnlessItAsks(_ kind: ConformingBackend) async throws {
        // Before, URLSessionBackend kept them process-wide: the redirect to /cookies carried a=1, and so
        // did a request of another realm on another backend instance.
        let a = try HTTPBin.realm(backend: try kind.make())
        #expect(try await cookies(TestEndpoint(a, "cookies/set", parameters: ["a": "1"])) == [:], "\(kind)")
        #expect(try await cookies(TestEndpoint(a, "cookies")) == [:], "\(kind)")
        let b = try HTTPBin.realm(backend: try kind.make())
        #expect(try await cookies(TestEndpoint(b, "cookies")) == [:], "\(kind)")
        let shared = try HTTPBin.realm(backend: URLSessionBackend.shared)
        _ = try await cookies(TestEndpoint(shared, "cookies/set", parameters: ["s": "1"]))
        #expect(try await cookies(TestEndpoint(shared, "cookies")) == [:], "the shared URLSession backend")
    }

    @Test(arguments: ConformingBackend.allCases)
    func aJarServesItsRealmAndTheRealmsSharingIt(_ kind: ConformingBackend) async throws {
        let jar = CookieJar()
        let a = try HTTPBin.realm(backend: try kind.make()).useCookies(jar)
        // Set on the 302, sent again on the hop it redirects to: cookies are evaluated at every hop.
        let afterRedirect = try await cookies(TestEndpoint(a, "cookies/set", parameters: ["session": "abc1"]))
        #expect(afterRedirect == ["session": "abc1"], "\(kind)")
        #expect(try await cookies(TestEndpoint(a, "cookies")) == ["session": "abc1"], "\(kind)")
        let sharing = try HTTPBin.realm(backend: try kind.make()).useCookies(jar)
        #expect(try await cookies(TestEndpoint(sharing, "cookies")) == ["session": "abc1"], "\(kind)")
        let own = try HTTPBin.realm(backend: try kind.make()).useCookies()
        #expect(try await cookies(TestEndpoint(own, "cookies")) == [:], "\(kind)")
        #expect(jar.cookies.map(\.name) == ["session"])
    }

    @Test(arguments: ConformingBackend.allCases)
    func anExplicitCookieHeaderIsNeverDropped(_ kind: ConformingBackend) async throws {
        let withJar = try HTTPBin.realm(backend: try kind.make()).useCookies()
        _ = try await cookies(
            TestEndpoint(withJar, "cookies/set", parameters: ["session": "jar1", "other": "jar2"]))
        let explicit = TestEndpoint(withJar, "cookies", headers: ["Cookie": "mine=1; session=explicit"])
        #expect(
            try await cookies(explicit) == ["mine": "1", "session": "explicit", "other": "jar2"], "\(kind)")
        let withoutJar = try HTTPBin.realm(backend: try kind.make())
        #expect(
            try await cookies(TestEndpoint(withoutJar, "cookies", headers: ["Cookie": "mine=1"])) == [
                "mine": "1"
            ],
            "\(kind)")
    }

    @Test(arguments: ConformingBackend.allCases)
    func cookiesStayWithTheHostThatSetThem(_ kind: ConformingBackend) async throws {
        // 127.0.0.1 set it; localhost is the same server under another host name.
        let jar = CookieJar()
        let here = try HTTPBin.realm(backend: try kind.make()).useCookies(jar)
        _ = try await cookies(TestEndpoint(here, "cookies/set", parameters: ["host": "only"]))
        let port = try HTTPBin.url().port!
        let there = uniqueRealm().setBaseURL(URL(string: "http://localhost:\(port)")!).use(try kind.make())
            .useCookies(jar)
        #expect(try await cookies(TestEndpoint(there, "cookies")) == [:], "\(kind)")
    }

    @Test func aStubBackendGetsTheJarsCookiesToo() async throws {
        // No backend handles cookies itself: the pipeline does, so a stub sees what a server would.
        let stub = StubBackend()
            .on(.path("/login"), answer: StubBackend.Answer(headers: ["Set-Cookie": "sid=s1; Path=/"]))
        let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!).use(stub).useCookies()
        _ = try await TestEndpoint(realm, "login").request()
        _ = try await TestEndpoint(realm, "me", headers: ["Cookie": "theme=dark"]).request()
        #expect(stub.received.last?.urlRequest.value(forHTTPHeaderField: "Cookie") == "theme=dark; sid=s1")
    }

    @Test func aPersistedJarIsPrivateAndOutlivesItsRealm() async throws {
        // httpbin /response-headers sets a persistent cookie.
        let directory = temporaryFiles.uniquePath("cookies")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let file = directory.appendingPathComponent("cookies.json")
        let realm = try HTTPBin.realm().useCookies(try CookieJar(file: file))
        _ = try await TestEndpoint(
            realm, "response-headers", parameters: ["Set-Cookie": "kept=v1; Max-Age=600"]
        )
        .request()
        let mode = try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let later = try HTTPBin.realm().useCookies(try CookieJar(file: file))
        #expect(try await cookies(TestEndpoint(later, "cookies")) == ["kept": "v1"])
    }

    @Test func cookiesNeverReachACassetteOrALog() async throws {
        // httpbin /cookies/set sets the cookie and /cookies echoes it in its body.
        let file = temporaryFiles.uniquePath("cookies").appendingPathExtension("json")
        let log = Collected<String>()
        let realm = try HTTPBin.realm().useCookies().declareSecrets(queryKeys: ["token"])
            .addMiddleware(LoggingMiddleware(to: { log.add($0) }, curl: true))
        realm.use(try RecordingBackend(recording: URLSessionBackend(), to: file))
        _ = try await TestEndpoint(realm, "cookies/set", parameters: ["token": "c00kie-s3cret"]).request()
        _ = try await TestEndpoint(realm, "cookies").request()
        let cassette = try String(contentsOf: file, encoding: .utf8)
        #expect(!cassette.contains("c00kie-s3cret"))
        #expect(cassette.contains("/cookies"))
        #expect(!log.all.contains { $0.contains("c00kie-s3cret") }, "\(log.all)")
    }
}
