import Foundation
import SwiftyService
import SwiftyServiceCurl
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite(.tags(.realServer)) struct CurlSmokeTests {
    @Test func aGETAndAPOSTGoThroughLibcurl() async throws {
        // httpbin /anything echoes method, query, headers and body.
        let realm = try HTTPBin.realm(backend: try CurlBackend())
        let get = try await TestEndpoint(
            realm, "anything/x", parameters: ["q": "a b"], headers: ["X-Trace": "1"]
        )
        .request().echo()
        #expect(get.method == "GET" && get.args["q"] == .one("a b") && get.header("X-Trace") == "1")
        let post = try await TestEndpoint(realm, "anything/y", method: .post, parameters: ["n": 1]).request()
            .echo()
        #expect(post.method == "POST" && post.json == .object(["n": .number(1)]))
    }
}
