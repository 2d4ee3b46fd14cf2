import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A plain request (no parameters, body, download or settings of the endpoint's own) is made once per realm
/// configuration, method and path, and sent again as made. What httpbin's `/anything` echoes shows that
/// nothing of an earlier request leaks into a later one: not after the realm changed, not across methods, paths,
/// parameters or an endpoint's own base URL.
@Suite("Plain requests sent again", .timeLimit(.minutes(5)), .tags(.realServer))
struct PlainRequestReuseRealServerTests {
    /// What httpbin's `/anything` saw.
    struct Echo: Decodable, Equatable {
        let method: String
        let url: String
        let args: [String: String]
        let headers: [String: String]
    }

    func echo(_ endpoint: TestEndpoint) async throws -> Echo {
        try await endpoint.request().decode(Echo.self)
    }

    @Test(
        "After the realm changes, the same request goes to its new base URL with its new headers",
        arguments: ConformingBackend.allCases)
    func realmChanges(_ kind: ConformingBackend) async throws {
        let anything = try HTTPBin.anything()
        let realm = uniqueRealm("reuse").setBaseURL(anything.appendingPathComponent("one")).use(
            try kind.make())
        let endpoint = TestEndpoint(realm, "item")

        let first = try await echo(endpoint)
        let again = try await echo(endpoint)
        realm.setBaseURL(anything.appendingPathComponent("two")).addHeader("X-Reuse", withValue: "second")
        let changed = try await echo(endpoint)

        #expect(first.url == anything.absoluteString + "/one/item")
        #expect(again == first)
        #expect(changed.url == anything.absoluteString + "/two/item")
        #expect(changed.headers["X-Reuse"] == "second")
        #expect(first.headers["X-Reuse"] == nil)
    }

    @Test(
        "Methods, paths, parameters and an endpoint's own base URL each go out as declared, interleaved",
        arguments: ConformingBackend.allCases)
    func interleaved(_ kind: ConformingBackend) async throws {
        let anything = try HTTPBin.anything()
        let realm = uniqueRealm("reuse").setBaseURL(anything).use(try kind.make())
        let elsewhere = anything.appendingPathComponent("elsewhere")
        // More distinct requests than the realm keeps, sent twice over, so that kept and made ones alternate.
        let endpoints = [
            TestEndpoint(realm, "a"), TestEndpoint(realm, "a", method: .delete), TestEndpoint(realm, "b"),
            TestEndpoint(realm, "a", parameters: ["q": "1"]), TestEndpoint(realm, "c"),
            TestEndpoint(realm, "d"),
            TestEndpoint(realm, "a", baseURL: elsewhere), TestEndpoint(realm, "a", method: .put),
            TestEndpoint(realm, "e"),
        ]
        let expected: [(method: String, url: String, args: [String: String])] = [
            ("GET", "/a", [:]), ("DELETE", "/a", [:]), ("GET", "/b", [:]), ("GET", "/a?q=1", ["q": "1"]),
            ("GET", "/c", [:]), ("GET", "/d", [:]), ("GET", "/elsewhere/a", [:]), ("PUT", "/a", [:]),
            ("GET", "/e", [:]),
        ]
        for round in 1...2 {
            for (endpoint, expected) in zip(endpoints, expected) {
                let echo = try await echo(endpoint)
                #expect(echo.method == expected.method, "round \(round)")
                #expect(echo.url == anything.absoluteString + expected.url, "round \(round)")
                #expect(echo.args == expected.args, "round \(round)")
            }
        }
    }
}
