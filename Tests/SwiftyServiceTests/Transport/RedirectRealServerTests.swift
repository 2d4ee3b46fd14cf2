import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `URLSessionBackend`'s redirect policy against a real httpbin: which redirects are followed, and what
/// a followed redirect still carries. The second origin is the same server under `localhost:PORT`: another
/// host, so another origin.
@Suite("Redirects against a real server", .timeLimit(.minutes(5)), .tags(.realServer))
struct RedirectRealServerTests {

    /// A realm on httpbin with a session of its own (so that its redirect policy applies), carrying every
    /// kind of secret header and one that is not secret.
    private func realmWithSecrets(redirects: RedirectPolicy = .default) throws -> ServiceRealm {
        try HTTPBin.realm(backend: URLSessionBackend(redirects: redirects))
            .addHeaders([
                "Authorization": "Bearer redirect-secret-token",
                "Cookie": "session=redirect-secret-cookie",
                "Proxy-Authorization": "Basic cHJveHk6c2VjcmV0",
                "X-Api-Key": "redirect-secret-api-key",
                "X-Trace": "trace-123",
            ])
            .declareSecrets(headers: ["X-Api-Key"])
    }

    private func port() throws -> Int { try #require(try HTTPBin.url().port) }

    /// `/redirect-to` answering `status` towards `target`.
    private func redirect(
        _ realm: ServiceRealm, to target: String, status: Int = 302, method: HTTPMethod = .get,
        body: RequestBody? = nil, validStatusCodes: StatusCodes = .successful
    ) -> TestEndpoint {
        TestEndpoint(
            realm, "redirect-to", method: method, parameters: ["url": target, "status_code": status],
            encoding: .query, body: body, validStatusCodes: validStatusCodes)
    }

    // MARK: What a redirect carries

    @Test(
        "A redirect to another origin drops Authorization, Cookie, Proxy-Authorization and declared secrets")
    func crossOriginRedirectDropsSecrets() async throws {
        // httpbin /redirect-to (302) from 127.0.0.1 to localhost; localhost's /anything echoes the headers.
        let target = "http://localhost:\(try port())/anything/elsewhere"

        let echo = try await redirect(try realmWithSecrets(), to: target).request().echo()

        #expect(echo.url == target)
        #expect(echo.header("Authorization") == nil)
        #expect(echo.header("Cookie") == nil)
        #expect(echo.header("Proxy-Authorization") == nil)
        #expect(echo.header("X-Api-Key") == nil)
        #expect(echo.header("X-Trace") == "trace-123")
    }

    @Test("A redirect to a second httpbin on another port drops the secrets too; only the port differs")
    func otherPortRedirectDropsSecrets() async throws {
        // httpbin /redirect-to (302) from this server to a second httpbin of the test's own, on 127.0.0.1
        // too; the second one's /anything echoes what arrived.
        let second = try await OwnHTTPBin.start()
        defer { Task { try? await second.stop() } }
        let target = second.url.appendingPathComponent("anything/second").absoluteString
        let first = try HTTPBin.url()
        #expect(second.url.host == first.host && second.url.port != first.port)

        let echo = try await redirect(try realmWithSecrets(), to: target, status: 307).request().echo()

        #expect(echo.url == target)
        #expect(echo.header("Authorization") == nil && echo.header("Cookie") == nil)
        #expect(echo.header("Proxy-Authorization") == nil && echo.header("X-Api-Key") == nil)
        #expect(echo.header("X-Trace") == "trace-123")
    }

    @Test("A same-origin redirect keeps every header, secrets included")
    func sameOriginRedirectKeepsSecrets() async throws {
        // httpbin /redirect-to (302) from 127.0.0.1 to 127.0.0.1/anything, which echoes the headers. This is
        // also the control for the test above: every secret header does reach httpbin when not stripped.
        let target = try httpbinURL("anything/same-origin")

        let echo = try await redirect(try realmWithSecrets(), to: target).request().echo()

        #expect(echo.url == target)
        #expect(echo.header("Authorization") == "Bearer redirect-secret-token")
        #expect(echo.header("Cookie") == "session=redirect-secret-cookie")
        #expect(echo.header("Proxy-Authorization") == "Basic cHJveHk6c2VjcmV0")
        #expect(echo.header("X-Api-Key") == "redirect-secret-api-key")
        #expect(echo.header("X-Trace") == "trace-123")
    }

    @Test(
        "Secrets dropped when a redirect chain leaves the origin stay dropped on the new host's own redirects"
    )
    func secretsStayDroppedAlongTheChain() async throws {
        // httpbin /redirect-to twice: 127.0.0.1 → localhost/redirect-to (leaves the origin) → localhost/anything
        // (same origin as the hop before), which echoes the headers.
        let port = try port()
        let final = "http://localhost:\(port)/anything/second-hop"
        var components = try #require(URLComponents(string: "http://localhost:\(port)/redirect-to"))
        components.queryItems = [URLQueryItem(name: "url", value: final)]
        let hop = try #require(components.url?.absoluteString)

        let echo = try await redirect(try realmWithSecrets(), to: hop).request().echo()

        #expect(echo.url == final)
        #expect(echo.header("Authorization") == nil)
        #expect(echo.header("Cookie") == nil)
        #expect(echo.header("Proxy-Authorization") == nil)
        #expect(echo.header("X-Api-Key") == nil)
        #expect(echo.header("X-Trace") == "trace-123")
    }

    @Test("A 307 or 308 redirect of a POST keeps the method and the JSON body", arguments: [307, 308])
    func postBodySurvivesRedirect(status: Int) async throws {
        // httpbin /redirect-to with status_code 307/308 (it accepts POST) to /anything, which echoes method,
        // body and parsed JSON. PLATFORM.md: URLSession on Linux alone would drop the body.
        let realm = try HTTPBin.realm(backend: URLSessionBackend())
        let payload = ["name": "Zoë", "count": "3"]
        let target = try httpbinURL("anything/posted")

        let echo = try await redirect(realm, to: target, status: status, method: .post, body: .json(payload))
            .request().echo()

        #expect(echo.url == target)
        #expect(echo.method == "POST")
        #expect(echo.json == .object(["name": .string("Zoë"), "count": .string("3")]))
        #expect(echo.data == #"{"count":"3","name":"Zoë"}"#)
        #expect(echo.header("Content-Type") == "application/json")
    }

    @Test("A 307 POST to another origin keeps its body but not its secrets")
    func crossOriginPostRedirect() async throws {
        // httpbin /redirect-to with status_code 307 from 127.0.0.1 to localhost/anything.
        let target = "http://localhost:\(try port())/anything/posted"

        let echo = try await redirect(
            try realmWithSecrets(), to: target, status: 307, method: .post, body: .json(["id": 7])
        ).request().echo()

        #expect(echo.url == target)
        #expect(echo.method == "POST")
        #expect(echo.json == .object(["id": .number(7)]))
        #expect(echo.header("Authorization") == nil)
        #expect(echo.header("X-Api-Key") == nil)
        #expect(echo.header("X-Trace") == "trace-123")
    }

    // MARK: Which redirects are followed

    @Test(".never answers with the 302 itself: unacceptable by default, a success when every status is valid")
    func neverFollows() async throws {
        // httpbin /redirect-to: a 302 with a Location header.
        let realm = try HTTPBin.realm(backend: URLSessionBackend(redirects: .never))
        let target = try httpbinURL("anything/not-reached")

        let error = try await #require(throws: ServiceError.self) {
            try await redirect(realm, to: target).request()
        }
        #expect(error.kind == .unacceptableStatusCode)
        #expect(error.response?.statusCode == 302)
        #expect(error.response?.header("Location") == target)

        let response = try await redirect(realm, to: target, validStatusCodes: .all).request()
        #expect(response.statusCode == 302)
        #expect(response.header("Location") == target)
    }

    @Test(".follow(max: 2) follows two redirects and fails on the third with URLError.httpTooManyRedirects")
    func followMax() async throws {
        // httpbin /redirect/N: N relative redirects ending at /get.
        let realm = try HTTPBin.realm(backend: URLSessionBackend(redirects: .follow(max: 2)))

        let response = try await TestEndpoint(realm, "redirect/2").request()
        #expect(response.statusCode == 200)
        #expect(try response.echo().url == (try httpbinURL("get")))

        let error = try await #require(throws: ServiceError.self) {
            try await TestEndpoint(realm, "redirect/5").request()
        }
        #expect(error.kind == .transport)
        #expect((error.underlyingError as? URLError)?.code == .httpTooManyRedirects)
    }

    @Test("The default policy follows ten redirects and refuses the eleventh")
    func defaultFollowsTen() async throws {
        // httpbin /redirect/N: N relative redirects ending at /get.
        let realm = try HTTPBin.realm(backend: URLSessionBackend())

        let response = try await TestEndpoint(realm, "redirect/10").request()
        #expect(try response.echo().url == (try httpbinURL("get")))

        let error = try await #require(throws: ServiceError.self) {
            try await TestEndpoint(realm, "redirect/11").request()
        }
        #expect((error.underlyingError as? URLError)?.code == .httpTooManyRedirects)
    }

    @Test(".custom can stop at a redirect: nil answers with the 3xx response")
    func customStops() async throws {
        // httpbin /redirect-to: a 303 towards /anything, which is never reached.
        let seen = CallbackRecorder<Int>()
        let realm = try HTTPBin.realm(
            backend: URLSessionBackend(
                redirects: .custom { response, _ in
                    seen.record(response.statusCode)
                    return nil
                }))

        let response = try await redirect(
            realm, to: try httpbinURL("anything/not-reached"), status: 303, validStatusCodes: .all
        ).request()

        #expect(response.statusCode == 303)
        #expect(seen.calls == [303])
    }

    @Test(".custom can rewrite the next request, which it gets already stripped of secrets across origins")
    func customRewrites() async throws {
        // httpbin /redirect-to from 127.0.0.1 to localhost; the policy sends the follow-up to 127.0.0.1's
        // /anything/rewritten instead, which echoes what arrived.
        let seen = CallbackRecorder<(status: Int, url: String?, authorization: String?)>()
        let rewritten = try httpbinURL("anything/rewritten")
        let realm = try realmWithSecrets(
            redirects: .custom { response, next in
                seen.record(
                    (
                        response.statusCode, next.url?.absoluteString,
                        next.value(forHTTPHeaderField: "Authorization")
                    ))
                var request = next
                request.url = URL(string: rewritten)
                request.setValue("yes", forHTTPHeaderField: "X-Rewritten")
                return request
            })
        let target = "http://localhost:\(try port())/anything/elsewhere"

        let echo = try await redirect(realm, to: target, status: 302).request().echo()

        #expect(echo.url == rewritten)
        #expect(echo.header("X-Rewritten") == "yes")
        #expect(echo.header("X-Trace") == "trace-123")
        #expect(echo.header("Authorization") == nil)
        let calls = seen.calls
        #expect(calls.count == 1)
        #expect(calls.first?.status == 302)
        #expect(calls.first?.url == target)
        #expect(calls.first?.authorization == nil)
    }
}
