import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite struct LoggingTests {
    @Test func noSecretThatWasSentReachesTheLogOrTheCURLCommand() async throws {
        let lines = Trail()
        let stub = StubBackend { _ in
            .init(headers: ["Set-Cookie": "session=secret-cookie-4"], data: Data("ok".utf8))
        }
        let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com/v1")!).use(stub)
            .addHeaders([
                "Authorization": "Bearer secret-token-1", "X-Api-Key": "secret-key-2",
                "Cookie": "id=secret-cookie-3",
            ])
            .declareSecrets(headers: ["X-Api-Key"], queryKeys: ["access_token"])
            .addMiddleware(LoggingMiddleware(to: { lines.add($0) }, curl: true))
        _ = try await TestEndpoint(realm, "users", parameters: ["access_token": "secret-query-5", "page": 2])
            .request()
        _ = try await TestEndpoint(
            realm, "users", method: .post, parameters: ["echo": "secret-key-2", "name": "Ann"]
        )
        .request()
        let log = lines.all.joined(separator: "\n")
        for secret in [
            "secret-token-1", "secret-key-2", "secret-cookie-3", "secret-cookie-4", "secret-query-5",
        ] {
            #expect(!log.contains(secret), "\(secret) leaked: \(log)")
        }
        #expect(lines.all.count == 4)
        #expect(
            lines.all[0].hasPrefix("curl 'https://api.example.com/v1/users?access_token=REDACTED&page=2'"))
        #expect(lines.all[0].contains("-H 'Authorization: <redacted>'"))
        #expect(lines.all[0].contains("-H 'Accept-Language") == false)
        #expect(
            lines.all[1].hasPrefix(
                "GET https://api.example.com/v1/users?access_token=REDACTED&page=2 → 200 ("))
        #expect(lines.all[1].hasSuffix("ms, attempt 1)"))
        #expect(
            lines.all[2].contains("-X POST")
                && lines.all[2].contains(#"--data-binary '{"echo":"<redacted>","name":"Ann"}'"#))
    }

    @Test func failuresAreLoggedWithWhatWentWrong() async throws {
        let lines = Trail()
        var policy = RetryPolicy.default
        policy.clock = RecordingClock().clock
        let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!)
            .use(StubBackend.failing(URLError(.timedOut)))
            .addMiddleware(LoggingMiddleware(to: { lines.add($0) }))
            .addMiddleware(.retry(policy))
        _ = try? await TestEndpoint(realm, "slow").request()
        #expect(lines.all.count == 1)
        #expect(lines.all.first?.hasPrefix("GET https://api.example.com/slow → timed out (") == true)
        #expect(lines.all.first?.hasSuffix("attempt 3)") == true)
    }

    @Test func nothingIsLoggedUnlessALoggerIsAdded() async throws {
        // The only output channel is the sink; with none, there is nothing to collect: this guards the API
        // shape (a sink is required) rather than stdout.
        let lines = Trail()
        let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!).use(.stub)
        _ = try await TestEndpoint(realm, "x").request()
        realm.addMiddleware(LoggingMiddleware(to: { lines.add($0) }))
        _ = try await TestEndpoint(realm, "x").request()
        #expect(lines.all.count == 1)
    }
}

@Suite struct CoalescingTests {
    @Test func twentyConcurrentIdenticalGETsReachTheBackendOnce() async throws {
        let spy = SpyBackend(StubBackend(.delayed(0.2)) { _ in .json(#"{"n": 1}"#) })
        let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!).use(spy)
            .coalesceIdenticalRequests()
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<20 { group.addTask { try await TestEndpoint(realm, "same").request().statusCode } }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses == Array(repeating: 200, count: 20))
        #expect(spy.requests.count == 1)
        _ = try await TestEndpoint(realm, "same").request()
        #expect(spy.requests.count == 2, "a later request is not served from the finished flight")
    }

    @Test func differentURLsHeadersOrMethodsAreNotShared() async throws {
        let spy = SpyBackend(StubBackend(.delayed(0.1)))
        let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!).use(spy)
            .coalesceIdenticalRequests()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { _ = try await TestEndpoint(realm, "a").request() }
            group.addTask { _ = try await TestEndpoint(realm, "b").request() }
            group.addTask { _ = try await TestEndpoint(realm, "a", headers: ["X-User": "2"]).request() }
            group.addTask { _ = try await TestEndpoint(realm, "a", method: .post).request() }
            group.addTask { _ = try await TestEndpoint(realm, "a", method: .post).request() }
            try await group.waitForAll()
        }
        #expect(spy.requests.count == 5)
    }

    @Test func oneCallerCancellingLeavesTheOthersTheirAnswer() async throws {
        let spy = SpyBackend(StubBackend(.delayed(0.3)))
        let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!).use(spy)
            .coalesceIdenticalRequests()
        let quitter = Task { try await TestEndpoint(realm, "same").request() }
        let stayers = (0..<3).map { _ in Task { try await TestEndpoint(realm, "same").request().statusCode } }
        try await Task.sleep(nanoseconds: 50_000_000)
        quitter.cancel()
        await #expect { try await quitter.value } throws: { ($0 as? ServiceError)?.kind == .cancelled }
        for stayer in stayers { #expect(try await stayer.value == 200) }
        #expect(spy.requests.count == 1)
    }
}
