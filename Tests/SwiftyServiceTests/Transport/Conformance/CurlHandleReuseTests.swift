import Foundation
import SwiftyService
import Testing

/// CurlBackend keeps a pooled handle's options for the next request set up just like it (same URL, method and
/// header fields, no body, TLS policy or stream); these requests alternate between kept and fresh options on
/// one backend, whose loop reuses the one handle a sequential caller gives back.
@Suite("CurlBackend handles kept set up between requests", .timeLimit(.minutes(5)), .tags(.realServer))
struct CurlHandleReuseTests {
    @Test func aKeptHandleSendsEachRequestAsItWasBuilt() async throws {
        let realm = try HTTPBin.realm(backend: try CurlBackend())
        for _ in 0..<3 {
            let echo = try await TestEndpoint(realm, "anything/kept").request().echo()
            #expect(echo.method == "GET" && echo.header("X-Trace") == nil)
        }
        // HEAD sets CURLOPT_NOBODY: the GET after it must get a body again.
        let head = try await TestEndpoint(realm, "anything/kept", method: .head).request()
        #expect(head.statusCode == 200 && head.data.isEmpty)
        #expect(try await TestEndpoint(realm, "anything/kept").request().echo().method == "GET")
        // Other header fields mean another header list, and back.
        let traced = try await TestEndpoint(realm, "anything/kept", headers: ["X-Trace": "2"]).request()
            .echo()
        #expect(traced.header("X-Trace") == "2")
        #expect(try await TestEndpoint(realm, "anything/kept").request().echo().header("X-Trace") == nil)
        // A body after the bodiless requests, then a bodiless one again on the handle the body used.
        let post = try await TestEndpoint(realm, "anything/kept", method: .post, parameters: ["n": 1])
            .request()
            .echo()
        #expect(post.method == "POST" && post.json == .object(["n": .number(1)]))
        #expect(try await TestEndpoint(realm, "anything/kept").request().echo().method == "GET")
    }

    @Test func aCompressedBodyIsDecodedEveryTimeOnAKeptHandle() async throws {
        let realm = try HTTPBin.realm(backend: try CurlBackend())
        for _ in 0..<2 {
            let response = try await TestEndpoint(realm, "gzip").request()
            let object = try JSONSerialization.jsonObject(with: response.data) as? [String: Any]
            #expect(object?["gzipped"] as? Bool == true)
        }
    }
}
