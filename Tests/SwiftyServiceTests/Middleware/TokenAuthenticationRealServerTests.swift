import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// httpbin's `/bearer` answer to an accepted token.
struct BearerEcho: Decodable {
    let authenticated: Bool
    let token: String
}

/// `TokenAuthentication` against httpbin's `/bearer` and `/status/401`: proactive and reactive refreshes,
/// their sharing and their limit.
@Suite("Token authentication against a real server", .timeLimit(.minutes(5)), .tags(.realServer))
struct TokenAuthenticationRealServerTests {

    @Test("TokenAuthentication puts the refreshed token on the request: /bearer answers 200 with it")
    func bearerAccepted() async throws {
        // httpbin /bearer: 200 with {"authenticated": true, "token": …} for any bearer token, 401 without.
        let refreshes = CallbackRecorder<Int>()
        let auth = TokenAuthentication {
            refreshes.record(1)
            return AccessToken("token-1")
        }
        let realm = try HTTPBin.realm(backend: URLSessionBackend()).addMiddleware(auth)

        let bearer = try await TestEndpoint(realm, "bearer").request(as: BearerEcho.self)

        #expect(bearer.authenticated)
        #expect(bearer.token == "token-1")
        #expect(refreshes.calls.count == 1)
        #expect(auth.currentToken == AccessToken("token-1"))
    }

    @Test("Without TokenAuthentication, /bearer answers 401 as .unacceptableStatusCode")
    func bearerRefusedWithoutToken() async throws {
        // httpbin /bearer: 401 without an Authorization header.
        let realm = try HTTPBin.realm(backend: URLSessionBackend())

        let error = try await #require(throws: ServiceError.self) {
            try await TestEndpoint(realm, "bearer").request()
        }

        #expect(error.kind == .unacceptableStatusCode)
        #expect(error.response?.statusCode == 401)
    }

    @Test("A token about to expire is refreshed before the request is sent, and the request is sent once")
    func proactiveRefresh() async throws {
        // httpbin /bearer: echoes the token that arrived.
        let spy = SpyBackend(URLSessionBackend())
        let auth = TokenAuthentication(
            initial: AccessToken("expiring", expiresAt: Date().addingTimeInterval(5)), leeway: 30
        ) { AccessToken("fresh") }
        let realm = try HTTPBin.realm(backend: spy).addMiddleware(auth)

        let bearer = try await TestEndpoint(realm, "bearer").request(as: BearerEcho.self)

        #expect(bearer.token == "fresh")
        #expect(spy.requests.count == 1)
    }

    @Test("A 401 refreshes the token once, and the request replayed with the new token succeeds")
    func reactiveRefreshSucceeds() async throws {
        // httpbin /bearer: 401 (with `WWW-Authenticate: Bearer`) unless Authorization starts with "Bearer ".
        // The stale credential has no scheme, so the first try is refused and the refreshed one accepted.
        let spy = SpyBackend(URLSessionBackend())
        let refreshes = CallbackRecorder<Int>()
        let auth = TokenAuthentication(initial: AccessToken("stale-credential"), scheme: nil) {
            refreshes.record(1)
            return AccessToken("Bearer token-\(refreshes.calls.count)")
        }
        let realm = try HTTPBin.realm(backend: spy).addMiddleware(auth)

        let response = try await TestEndpoint(realm, "bearer").request()

        #expect(response.statusCode == 200)
        #expect(response.attempts == 2)
        #expect(try response.decode(BearerEcho.self).token == "token-1")
        #expect(refreshes.calls.count == 1)
        #expect(
            spy.requests.map { $0.value(forHTTPHeaderField: "Authorization") }
                == ["stale-credential", "Bearer token-1"])
        #expect(auth.currentToken == AccessToken("Bearer token-1"))
    }

    @Test("A 401 to the replayed request surfaces after exactly one refresh and two sends")
    func reactiveRefreshStillRefused() async throws {
        // httpbin /bearer: always 401 here, because the tokens go out as "Token …", not "Bearer …".
        let spy = SpyBackend(URLSessionBackend())
        let refreshes = CallbackRecorder<Int>()
        let auth = TokenAuthentication(initial: AccessToken("token-0"), scheme: "Token") {
            refreshes.record(1)
            return AccessToken("token-\(refreshes.calls.count)")
        }
        let realm = try HTTPBin.realm(backend: spy).addMiddleware(auth)

        let error = try await #require(throws: ServiceError.self) {
            try await TestEndpoint(realm, "bearer").request()
        }

        #expect(error.kind == .unacceptableStatusCode)
        #expect(error.response?.statusCode == 401)
        #expect(error.attempts == 2)
        #expect(refreshes.calls.count == 1)
        #expect(
            spy.requests.map { $0.value(forHTTPHeaderField: "Authorization") }
                == ["Token token-0", "Token token-1"])
    }

    @Test("20 concurrent 401s share one refresh, each request is sent exactly twice, and all succeed")
    func concurrentUnauthorizedShareOneRefresh() async throws {
        // httpbin /bearer?n=…: 401 for the stale credential, 200 for "Bearer …"; `n` tells the requests apart.
        let spy = SpyBackend(URLSessionBackend())
        let refreshes = CallbackRecorder<Int>()
        let auth = TokenAuthentication(initial: AccessToken("stale-credential"), scheme: nil) {
            refreshes.record(1)
            try await Task.sleep(for: .milliseconds(50))
            return AccessToken("Bearer token-\(refreshes.calls.count)")
        }
        let realm = try HTTPBin.realm(backend: spy).addMiddleware(auth)

        let tokens = try await withThrowingTaskGroup(of: String.self) { group in
            for n in 0..<20 {
                group.addTask {
                    try await TestEndpoint(realm, "bearer", parameters: ["n": n]).request(as: BearerEcho.self)
                        .token
                }
            }
            var tokens: [String] = []
            for try await token in group { tokens.append(token) }
            return tokens
        }

        #expect(tokens == Array(repeating: "token-1", count: 20))
        #expect(refreshes.calls.count <= 5)
        // Stricter than the rate limit, and what TokenAuthentication documents: concurrent 401s share one refresh.
        #expect(refreshes.calls.count == 1)
        let sends = Dictionary(grouping: spy.requests, by: { $0.url?.absoluteString ?? "" }).mapValues(
            \.count)
        #expect(sends.count == 20)
        #expect(sends.values.allSatisfy { $0 == 2 }, "\(sends.filter { $0.value != 2 })")
    }

    @Test("Past maxRefreshes refreshes in the window, a further 401 fails with TokenRefreshLimitReached")
    func refreshLimit() async throws {
        // httpbin /bearer: always 401 here, because the tokens go out as "Token …", not "Bearer …".
        let spy = SpyBackend(URLSessionBackend())
        let refreshes = CallbackRecorder<Int>()
        let clock = ManualClock()  // the window must not pass on a slow machine
        let auth = TokenAuthentication(
            initial: AccessToken("token-0"), scheme: "Token", maxRefreshes: 1, per: 60, now: { clock.now }
        ) {
            refreshes.record(1)
            return AccessToken("token-\(refreshes.calls.count)")
        }
        let realm = try HTTPBin.realm(backend: spy).addMiddleware(auth)

        let first = try await #require(throws: ServiceError.self) {
            try await TestEndpoint(realm, "bearer").request()
        }
        let second = try await #require(throws: ServiceError.self) {
            try await TestEndpoint(realm, "bearer").request()
        }

        #expect(first.response?.statusCode == 401)
        #expect(second.kind == .transport)
        let limit = try #require(second.underlyingError as? TokenRefreshLimitReached)
        #expect(limit.limit == 1)
        #expect(refreshes.calls.count == 1)
        #expect(spy.requests.count == 3)
    }

    @Test("/status/401 with TokenAuthentication: one refresh, one replay, and the 401 surfaces")
    func reactiveRefreshOnStatus401() async throws {
        // httpbin /status/401: always 401, with `WWW-Authenticate: Basic realm="Fake Realm"`.
        let spy = SpyBackend(URLSessionBackend())
        let refreshes = CallbackRecorder<Int>()
        let auth = TokenAuthentication(initial: AccessToken("token-0")) {
            refreshes.record(1)
            return AccessToken("token-\(refreshes.calls.count)")
        }
        let realm = try HTTPBin.realm(backend: spy).addMiddleware(auth)
        let endpoint = TestEndpoint(realm, "status/401")

        // Never beside the load test: the 20 s allowed here are for the answer (a hang is the failure), not for a
        // stalled thread pool.
        let error = try await measuringPromptness {
            try await #require(throws: ServiceError.self) {
                try await answer(within: 20, "GET /status/401") { try await endpoint.request() }
            }
        }

        #expect(error.kind == .unacceptableStatusCode)
        #expect(error.response?.statusCode == 401)
        #expect(error.attempts == 2)
        #expect(refreshes.calls.count == 1)
        #expect(spy.requests.count == 2)
    }

    @Test("A 401 with a Basic challenge comes back as .unacceptableStatusCode, like any other status")
    func basicChallengeIsAnAnswer() async throws {
        // httpbin /status/401: a 401 with `WWW-Authenticate: Basic realm="Fake Realm"`; no middleware at all.
        let realm = try HTTPBin.realm(backend: URLSessionBackend())
        let endpoint = TestEndpoint(realm, "status/401")

        // Never beside the load test: the 20 s allowed here are for the answer (a hang is the failure), not for a
        // stalled thread pool.
        let error = try await measuringPromptness {
            try await #require(throws: ServiceError.self) {
                try await answer(within: 20, "GET /status/401") { try await endpoint.request() }
            }
        }

        #expect(error.kind == .unacceptableStatusCode)
        #expect(error.response?.statusCode == 401)
    }

    @Test("A refresh that fails fails the request with TokenRefreshFailed, and nothing is sent")
    func failedRefresh() async throws {
        // httpbin /bearer would answer, but no token can be had.
        struct AuthServerDown: Error {}
        let spy = SpyBackend(URLSessionBackend())
        let realm = try HTTPBin.realm(backend: spy)
            .addMiddleware(TokenAuthentication { throw AuthServerDown() })

        let error = try await #require(throws: ServiceError.self) {
            try await TestEndpoint(realm, "bearer").request()
        }

        #expect(error.kind == .transport)
        let failure = try #require(error.underlyingError as? TokenRefreshFailed)
        #expect(failure.underlying is AuthServerDown)
        #expect(spy.requests.isEmpty)
    }
}
