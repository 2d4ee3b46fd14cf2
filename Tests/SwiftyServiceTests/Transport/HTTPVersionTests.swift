import Foundation
import Testing

@testable import SwiftyService

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The version of HTTP a realm speaks, against the HTTP/2 server scripts/test starts (Tests/Servers/
/// http2_server.py: HTTP/2 and HTTP/1.1 over TLS by ALPN, and in cleartext HTTP/1.1 or h2c with prior
/// knowledge). Each answer says in which version the server heard it (`X-HTTP-Version`) and on which
/// connection (`X-Client-Port`).
@Suite("HTTP versions", .timeLimit(.minutes(5)), .tags(.realServer))
struct HTTPVersionTests {
    static func url(_ variable: String) throws -> URL {
        guard let value = ProcessInfo.processInfo.environment[variable], let url = URL(string: value) else {
            throw SetupError(description: "\(variable) is not set: run the tests with scripts/test, which starts it")
        }
        return url
    }

    /// http2_server.py in cleartext: HTTP/1.1, and h2c for one request per connection only (see below).
    static func cleartextURL() throws -> URL { try url("H2C_URL") }

    func tlsRealm() throws -> ServiceRealm {
        uniqueRealm("h2").setBaseURL(try HTTP2Server.url()).use(try CurlBackend())
            .setTLSPolicy(TLSPolicy(trustedRoots: try TLSFixtures.caRoots())).collectMetrics()
    }

    func cleartextRealm() throws -> ServiceRealm {
        uniqueRealm("h2c").setBaseURL(try Self.cleartextURL()).use(try CurlBackend()).collectMetrics()
    }

    struct Echo: Decodable, Equatable {
        let length: Int
        let sha256: String
    }

    /// Eight requests, each with a body, at once or one after another: the versions and connections the server
    /// saw, and the echoes.
    func eightUploads(_ realm: ServiceRealm, atOnce: Bool = true) async throws
        -> (versions: Set<String>, ports: Set<String>, metrics: Set<String>)
    {
        let body = Data((0..<300_000).map { UInt8($0 % 253) })
        let upload = TestEndpoint(realm, "echo", method: .post, body: .data(body))
        var responses: [Response] = []
        if atOnce {
            responses = try await withThrowingTaskGroup(of: Response.self) { group in
                for _ in 0..<8 { group.addTask { try await upload.request() } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        } else {
            for _ in 0..<8 { responses.append(try await upload.request()) }
        }
        let expected = Echo(length: body.count, sha256: sha256Hex(body))
        for response in responses { #expect(try response.decode(Echo.self) == expected) }
        return (
            Set(responses.compactMap { $0.header("X-HTTP-Version") }),
            Set(responses.compactMap { $0.header("X-Client-Port") }),
            Set(responses.compactMap { $0.metrics.last?.httpVersion }))
    }

    @Test func overTLSEightRequestsWithBodiesShareOneHTTP2Connection() async throws {
        let (versions, ports, metrics) = try await eightUploads(try tlsRealm())
        #expect(versions == ["2"])
        #expect(ports.count == 1, "one connection: \(ports)")
        #expect(metrics == ["HTTP/2"])
    }

    @Test func http1OnlySpeaksHTTP1WhereTheServerOffersHTTP2() async throws {
        let (versions, _, metrics) = try await eightUploads(try tlsRealm().setHTTPVersion(.http1_1))
        #expect(versions == ["1.1"])
        #expect(metrics == ["HTTP/1.1"])
    }

    @Test func cleartextIsHTTP1UnlessTheRealmKnowsTheServerSpeaksH2C() async throws {
        let plain = try await eightUploads(try cleartextRealm())
        #expect(plain.versions == ["1.1"])
        // hypercorn's h2c breaks the framing of a connection's second stream (curl's own command line fails the
        // same way, exit 16; over TLS both multiplex): nginx, started by scripts/test, speaks h2c only.
        let backend = try CurlBackend()
        let realm = uniqueRealm("h2c").setBaseURL(try Self.url("NGINX_H2C_URL")).use(backend)
            .collectMetrics().setHTTPVersion(.http2PriorKnowledge)
        // GETs: nginx answers `return` without reading a body and resets the stream, which libcurl 7 reports
        // as an error (curl 92); uploads over HTTP/2 are checked over TLS, against hypercorn.
        let responses = try await withThrowingTaskGroup(of: Response.self) { group in
            for _ in 0..<8 { group.addTask { try await TestEndpoint(realm, "get").request() } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(Set(responses.compactMap { $0.header("X-HTTP-Version") }) == ["HTTP/2.0"])
        // libcurl 7 (Debian 12's 7.88.1) breaks an h2c connection's second stream: a connection per request there.
        let ports = Set(responses.compactMap { $0.header("X-Client-Port") })
        let shared = backend.loops[0].reusesH2CConnections
        #expect(ports.count == (shared ? 1 : 8), "eight at once: \(ports.count) connections")
        #expect(Set(responses.compactMap { $0.metrics.last?.httpVersion }) == ["HTTP/2"])
        // The automatic version speaks HTTP/1.1 in cleartext, which an h2c-only server cannot read.
        let automatic = uniqueRealm("h2c").setBaseURL(try Self.url("NGINX_H2C_URL")).use(try CurlBackend())
        await #expect(throws: ServiceError.self) { _ = try await TestEndpoint(automatic, "x").request() }
    }

    @Test func aStreamOverH2CArrivesAsItIsSent() async throws {
        // One stream on its connection: hypercorn's h2c holds for that.
        let realm = try cleartextRealm().setHTTPVersion(.http2PriorKnowledge)
        let stream = try await TestEndpoint(realm, "ticks", parameters: ["count": 5, "every": 0.05]).stream()
        #expect(stream.response.header("X-HTTP-Version") == "2")
        var ids: [String] = []
        for try await event in stream.serverSentEvents { ids.append(event.id) }
        #expect(ids == ["1", "2", "3", "4", "5"])
    }

    @Test func aBackendThatCannotSpeakTheVersionRefusesBeforeSending() async throws {
        let realm = uniqueRealm("h2c-urlsession").setBaseURL(try Self.cleartextURL()).use(URLSessionBackend())
            .setHTTPVersion(.http2PriorKnowledge)
        await #expect {
            _ = try await TestEndpoint(realm, "echo", method: .post, body: .data(Data("x".utf8))).request()
        } throws: { error in
            guard case let .invalidRequest(.unsupportedHTTPVersion(backend, version), _, url)? = error as? ServiceError
            else { return false }
            return backend == "URLSessionBackend" && version == .http2PriorKnowledge && url.contains("/echo")
                && "\(error)".contains("HTTP/2 with prior knowledge (h2c)")
        }
        #expect(URLSessionBackend().supportedHTTPVersions == [.automatic])
        #expect(try CurlBackend().supportedHTTPVersions == Set(HTTPVersionPreference.allCases))
    }

    @Test func aRealmsVersionReachesTheBackendAndAnOverrideWins() async throws {
        /// Keeps the version of each request; speaks them all.
        final class VersionSpy: NetworkBackend, @unchecked Sendable {
            let stub = StubBackend()
            let seen = Locked.make([HTTPVersionPreference]())
            var supportedHTTPVersions: Set<HTTPVersionPreference> { Set(HTTPVersionPreference.allCases) }
            var requests: [HTTPVersionPreference] { seen.withLock { $0 } }
            func send(
                _ request: BackendRequest, completion: @escaping @Sendable (Result<Response, any Error>) -> Void
            ) -> BackendTask {
                seen.withLock { $0.append(request.httpVersion) }
                return stub.send(request, completion: completion)
            }
        }
        let spy = VersionSpy()
        let realm = uniqueRealm("versions").setBaseURL(URL(string: "https://api.example.com")!).use(spy)
            .setHTTPVersion(.http1_1)
        #expect(realm.configuration.httpVersion == .http1_1)
        _ = try await TestEndpoint(realm, "a").request()
        _ = try await TestEndpoint(realm, "b").override { $0.setHTTPVersion(.http2PriorKnowledge) }.request()
        _ = try await TestEndpoint(realm.setHTTPVersion(nil), "c").request()
        #expect(spy.requests == [.http1_1, .http2PriorKnowledge, .automatic])
        // A backend that says nothing speaks only the automatic version: asked for another, it is not called.
        let silent = SpyBackend(StubBackend())
        await #expect(throws: ServiceError.self) {
            _ = try await TestEndpoint(realm.use(silent).setHTTPVersion(.http1_1), "d").request()
        }
        #expect(silent.requests.isEmpty)
    }
}
