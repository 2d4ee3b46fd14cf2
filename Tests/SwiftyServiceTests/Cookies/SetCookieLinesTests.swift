import Foundation
import Testing

@testable import SwiftyService

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A response's `Set-Cookie` lines reach a realm's jar as the server sent them, and what the jar keeps is what
/// it keeps when fed the same lines one by one. CurlBackend reads each header line alone and hands the lines
/// over apart; URLSession on Linux offers them only joined with ", ", split again by a guess that commas inside
/// cookies defeat (the Cookies article says so). Against misbehaving_server.py's `/cookies`, which sets the lines it is
/// given and answers with the `Cookie` header it received.
@Suite("Set-Cookie lines", .timeLimit(.minutes(5)), .tags(.realServer))
struct SetCookieLinesTests {
    /// Lines a careful user met: commas in quoted and unquoted values, in a date, lines without `name=`.
    static let awkward = [
        #"foo="bar, baz=qux""#,
        "a=b, c",
        "=x",
        "bare",
        "d=e; Expires=Wed, 09 Jun 2100 10:18:14 GMT; Path=/",
        "g=h, i=j",
        "k=l; Path=/, m=n",
    ]
    /// Many cookies in one response.
    static let many = (0..<40).map { "n\($0)=v\($0); Max-Age=3600" }

    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    /// A GET of `/cookies` setting `lines`, on `realm`: the response, and the URL it went to.
    func setting(_ lines: [String], on realm: ServiceRealm, redirect: String? = nil) async throws -> Response
    {
        var parameters: [String: any Sendable] = [:]
        for (index, line) in lines.enumerated() { parameters[String(format: "l%02d", index)] = line }
        if let redirect { parameters["redirect"] = redirect }
        return try await TestEndpoint(realm, "cookies", parameters: parameters).request()
    }

    /// What a jar keeps, fed `lines` one by one as if from `url`.
    func lineByLine(_ lines: [String], from url: URL) -> CookieJar {
        let jar = CookieJar(now: { Self.now })
        jar.store(setCookieHeaders: lines, from: url)
        return jar
    }

    /// The `Cookie` header `jar` sends to `url`.
    func header(_ jar: CookieJar, for url: URL) -> String {
        jar.cookies(for: url).map { "\($0.name)=\($0.value)" }.joined(separator: "; ")
    }

    @Test(arguments: [awkward, many, awkward + many])
    func curlBackendHandsTheJarEachLineAsTheServerSentIt(_ lines: [String]) async throws {
        let jar = CookieJar(now: { Self.now })
        let realm = uniqueRealm("set-cookie").setBaseURL(try MisbehavingServer.url()).use(try CurlBackend())
            .useCookies(jar)
        let response = try await setting(lines, on: realm)
        let url = try #require(response.request.url)
        let expected = lineByLine(lines, from: url)
        #expect(jar.cookies == expected.cookies)
        // "=x" and "bare" are no cookies: a name and an `=` are needed (RFC 6265 §5.2).
        #expect(jar.cookies.count == (lines == Self.awkward ? 5 : lines == Self.many ? 40 : 45))
        // Sent back as the jar would send them.
        let echoed = try await TestEndpoint(realm, "cookies").request().mapString()
        #expect(echoed == header(expected, for: url))
    }

    @Test func aRedirectHopsLinesReachTheJarApartToo() async throws {
        // CurlBackend follows redirects itself: the 302's lines go to the jar as they came, and the next hop
        // carries them.
        let jar = CookieJar(now: { Self.now })
        let realm = uniqueRealm("set-cookie").setBaseURL(try MisbehavingServer.url()).use(try CurlBackend())
            .useCookies(jar)
        let lines = [#"q="x, y=z""#, "r=1, s"]
        let response = try await setting(lines, on: realm, redirect: "/cookies")
        let url = try #require(response.request.url)
        let expected = lineByLine(lines, from: url)
        #expect(jar.cookies == expected.cookies)
        #expect(try response.mapString() == header(expected, for: url))
    }

    @Test(arguments: [ConformingBackend.urlSession, .legacy])
    func aBackendWithJoinedLinesKeepsTheGuessForLinesWithoutCommasInValues(_ kind: ConformingBackend)
        async throws
    {
        // Joined with ", " by FoundationNetworking, split again where a comma starts another `name=`: right for
        // dates and many cookies, wrong for commas inside values (the Cookies article).
        let lines = ["d=e; Expires=Wed, 09 Jun 2100 10:18:14 GMT; Path=/"] + Self.many
        let jar = CookieJar(now: { Self.now })
        let realm = uniqueRealm("set-cookie").setBaseURL(try MisbehavingServer.url()).use(try kind.make())
            .useCookies(jar)
        let response = try await setting(lines, on: realm)
        let url = try #require(response.request.url)
        #expect(jar.cookies == lineByLine(lines, from: url).cookies, "\(kind)")
    }

    @Test(arguments: ConformingBackend.allCases)
    func cookiesWithControlCharactersAreIgnoredAndNeverSentBack(_ kind: ConformingBackend) async throws {
        // RFC 6265bis: a Set-Cookie line with a control character other than a tab is ignored whole. They were
        // stored, and sent back on every later request.
        let jar = CookieJar()
        let realm = uniqueRealm("ctl").setBaseURL(try MisbehavingServer.url()).use(try kind.make())
            .useCookies(jar)
        _ = try await setting(["a=b\u{1}c", "d\u{7F}=e", "f=g\u{B}h", "ok=1"], on: realm)
        #expect(jar.cookies.map(\.name) == ["ok"], "\(kind)")
        let echoed = try await TestEndpoint(realm, "cookies").request().mapString()
        #expect(echoed == "ok=1", "\(kind)")
    }
}

/// The jar's side of control characters, and the `Cookie` header's check.
@Suite struct CookieControlCharacterTests {
    let url = URL(string: "https://api.example.com/v1/session")!

    @Test func aControlCharacterAnywhereInTheLineIgnoresItButATabDoesNot() {
        let jar = CookieJar()
        jar.store(
            setCookieHeaders: [
                "a=b\u{1}c", "d\u{7F}=e", "f=g\u{B}h", "n\u{0}=1", "p=1; Path=/\u{1F}", "t=a\tb", "ok=1",
            ], from: url)
        #expect(jar.cookies.map(\.name).sorted() == ["ok", "t"])
        #expect(jar.cookies.first { $0.name == "t" }?.value == "a\tb")
    }

    @Test func aJarFileWithAControlCharacterInACookieLoadsWithoutIt() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(
            "jar-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        let written = try CookieJar(file: file)
        written.store(setCookieHeaders: ["good=1; Max-Age=3600", "edited=plain; Max-Age=3600"], from: url)
        // As an older version, or a hand, may have left it.
        let text = try String(contentsOf: file, encoding: .utf8)
        #expect(text.contains("\"plain\""))
        try text.replacingOccurrences(of: "\"plain\"", with: "\"pl\\u0001ain\"").write(
            to: file, atomically: true, encoding: .utf8)
        #expect(try CookieJar(file: file).cookies.map(\.name) == ["good"])
    }

    @Test func theCookieHeaderGoesThroughTheSameCheckAsEveryHeader() throws {
        let request = URLRequest(url: url)
        #expect(throws: ServiceError.self) {
            try BackendRequest.checkCookieHeader("a=1; b=2\u{1}", of: request)
        }
        do {
            try BackendRequest.checkCookieHeader("a=1; b=2\r\nX-Injected: 1", of: request)
            Issue.record("a CR LF went through")
        } catch {
            guard case let .invalidRequest(reason, _, requestURL) = error else {
                Issue.record("\(error)")
                return
            }
            #expect(reason == .invalidHeaderValue(name: "Cookie"))
            #expect(requestURL == url.absoluteString)
            #expect(!error.description.contains("X-Injected"), "a refused value is never repeated")
        }
        try BackendRequest.checkCookieHeader("a=1; t=x\ty; é=ü", of: request)
        try BackendRequest.checkCookieHeader(nil, of: request)
    }
}
