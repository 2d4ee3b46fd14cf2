import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Counts calls, for refreshes.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0

    func next() -> Int {
        lock.lock()
        defer { lock.unlock() }
        count += 1
        return count
    }

    var value: Int {
        lock.lock()
        defer { lock.unlock() }
        return count
    }
}

@Suite struct AuthenticationTests {
    /// A server that accepts only `Bearer <accepted>`.
    func server(accepting accepted: @escaping @Sendable () -> String) -> StubBackend {
        StubBackend(.delayed(0.01)) { request in
            request.urlRequest.value(forHTTPHeaderField: "Authorization") == "Bearer \(accepted())"
                ? .json(#"{"ok": true}"#) : .status(401)
        }
    }

    @Test func fiftyConcurrent401sCauseOneRefreshAndEachRequestIsReplayedOnce() async throws {
        let refreshes = Counter()
        let spy = SpyBackend(server { "fresh" })
        let auth = TokenAuthentication(initial: AccessToken("stale")) {
            _ = refreshes.next()
            try await Task.sleep(nanoseconds: 50_000_000)
            return AccessToken("fresh")
        }
        let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!).use(spy).addMiddleware(
            auth)
        try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<50 {
                group.addTask { try await TestEndpoint(realm, "item/\(index)").request().statusCode }
            }
            for try await status in group { #expect(status == 200) }
        }
        #expect(refreshes.value == 1)
        let byPath = Dictionary(grouping: spy.requests, by: { $0.url!.path })
        #expect(byPath.count == 50)
        for (path, sent) in byPath {
            #expect(sent.count <= 2, "\(path) was sent \(sent.count) times")
            #expect(sent.last?.value(forHTTPHeaderField: "Authorization") == "Bearer fresh")
        }
        #expect(auth.currentToken == AccessToken("fresh"))
    }

    @Test func anExpiredTokenIsRefreshedBeforeItIsSent() async throws {
        let refreshes = Counter()
        let now = Date()
        let spy = SpyBackend(server { "renewed" })
        let auth = TokenAuthentication(
            initial: AccessToken("old", expiresAt: now.addingTimeInterval(10)), leeway: 30,
            now: { now }
        ) {
            _ = refreshes.next()
            return AccessToken("renewed", expiresAt: now.addingTimeInterval(3600))
        }
        let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!).use(spy).addMiddleware(
            auth)
        #expect(try await TestEndpoint(realm, "x").request().statusCode == 200)
        #expect(try await TestEndpoint(realm, "y").request().statusCode == 200)
        #expect(refreshes.value == 1)
        #expect(spy.requests.count == 2, "no request went out with the expiring token")
    }

    @Test func withNoTokenYetTheFirstRequestFetchesOne() async throws {
        let auth = TokenAuthentication(header: "X-Token", scheme: nil) { AccessToken("t-1") }
        let stub = StubBackend()
        let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!).use(stub).addMiddleware(
            auth)
        _ = try await TestEndpoint(realm, "x").request()
        #expect(stub.received.first?.urlRequest.value(forHTTPHeaderField: "X-Token") == "t-1")
    }

    @Test func aFailedRefreshFailsEveryWaitingRequestWithAClearError() async throws {
        struct AuthServerDown: Error {}
        let refreshes = Counter()
        let auth = TokenAuthentication(initial: AccessToken("stale")) {
            _ = refreshes.next()
            try await Task.sleep(nanoseconds: 50_000_000)
            throw AuthServerDown()
        }
        let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!).use(server { "fresh" })
            .addMiddleware(auth)
        let failures = try await withThrowingTaskGroup(of: ServiceError?.self) { group in
            for index in 0..<10 {
                group.addTask {
                    do {
                        _ = try await TestEndpoint(realm, "\(index)").request()
                        return nil
                    } catch let error as ServiceError {
                        return error
                    }
                }
            }
            return try await group.reduce(into: [ServiceError]()) { if let error = $1 { $0.append(error) } }
        }
        #expect(failures.count == 10)
        #expect(refreshes.value == 1)
        for failure in failures {
            guard case let .transport(_, underlying, _) = failure,
                let refresh = underlying as? TokenRefreshFailed
            else {
                Issue.record("expected TokenRefreshFailed, got \(failure)"); continue
            }
            #expect(refresh.underlying is AuthServerDown)
            #expect(failure.description.contains("refreshing the access token failed"))
        }
    }

    @Test func aServerThatRefusesEveryTokenIsNotRefreshedForeverButCutOff() async throws {
        let refreshes = Counter()
        // The test's own clock: a loaded machine may take longer than the window to run eight requests.
        let clock = ManualClock()
        let auth = TokenAuthentication(
            initial: AccessToken("t-0"), maxRefreshes: 5, per: 30, now: { clock.now }
        ) {
            AccessToken("t-\(refreshes.next())")
        }
        let spy = SpyBackend(StubBackend.failing(statusCode: 401))
        let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!).use(spy).addMiddleware(
            auth)
        var outcomes: [ServiceError.Kind] = []
        for _ in 0..<8 {
            do {
                _ = try await TestEndpoint(realm, "x").request()
            } catch let error as ServiceError {
                outcomes.append(error.kind)
                if case let .transport(_, underlying, _) = error {
                    #expect(underlying is TokenRefreshLimitReached)
                }
            }
        }
        #expect(refreshes.value == 5)
        #expect(
            outcomes == Array(repeating: .unacceptableStatusCode, count: 5)
                + Array(repeating: .transport, count: 3))
        #expect(spy.requests.count == 5 * 2 + 3)

        clock.advance(30)
        await #expect(throws: ServiceError.self) { try await TestEndpoint(realm, "x").request() }
        #expect(refreshes.value == 6, "once the window has passed, a refresh is allowed again")
        #expect(spy.requests.count == 15, "the refused request and its replay with the fresh token")
    }

    @Test("A refresh limit over an unbounded window cuts off, and says so, like any other")
    func aRefreshLimitOverAnUnboundedWindow() async throws {
        let refreshes = Counter()
        let auth = TokenAuthentication(initial: AccessToken("t-0"), maxRefreshes: 1, per: .infinity) {
            AccessToken("t-\(refreshes.next())")
        }
        let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!)
            .use(StubBackend.failing(statusCode: 401)).addMiddleware(auth)
        _ = try? await TestEndpoint(realm, "x").request()
        do {
            _ = try await TestEndpoint(realm, "x").request()
            Issue.record("expected the refresh limit")
        } catch let error as ServiceError {
            #expect(
                error.description.hasSuffix(
                    "refreshed 1 times in inf s and is still refused; not refreshing again"))
        }
        #expect(refreshes.value == 1)
    }

    @Test func aRequestRefusedAgainWithTheFreshTokenIsReturnedNotLooped() async throws {
        let refreshes = Counter()
        let spy = SpyBackend(StubBackend.failing(statusCode: 401))
        let auth = TokenAuthentication(initial: AccessToken("a")) { AccessToken("b-\(refreshes.next())") }
        let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!).use(spy).addMiddleware(
            auth)
        await #expect(throws: ServiceError.self) { try await TestEndpoint(realm, "x").request() }
        #expect(spy.requests.count == 2)
        #expect(refreshes.value == 1)
    }
}
