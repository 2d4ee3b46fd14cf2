import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Scripted stubs: per-request answers, sequences, failures, delays, the unmatched default and the log.
@Suite struct StubScriptingTests {
    let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com/v1")!)

    func status(_ endpoint: TestEndpoint) async -> String {
        do {
            return "\(try await endpoint.request().statusCode)"
        } catch let error as ServiceError {
            switch error {
            case let .unacceptableStatusCode(response, _): return "\(response.statusCode)"
            case .timedOut: return "timedOut"
            case .transport: return "transport"
            case .cancelled: return "cancelled"
            default: return "\(error)"
            }
        } catch {
            return "\(error)"
        }
    }

    @Test func aSequenceAnswersInTurnThenRepeatsTheLast() async throws {
        let stub = StubBackend().on(.path("/v1/flaky"), answer: .status(503), .status(502), .json("{}"))
        realm.use(stub)
        var seen: [String] = []
        for _ in 0..<5 { seen.append(await status(TestEndpoint(realm, "flaky"))) }
        #expect(seen == ["503", "502", "200", "200", "200"])
        stub.reset()
        #expect(await status(TestEndpoint(realm, "flaky")) == "503")
    }

    @Test func anEndpointRuleMatchesItsOwnMethodAndURLOnly() async throws {
        let info = TestEndpoint(realm, "user/info", parameters: ["uid": 42])
        realm.use(StubBackend().on(.endpoint(info), answer: .json(#"{"id": 42}"#, statusCode: 201)))
        #expect(await status(info) == "201")
        #expect(await status(TestEndpoint(realm, "user/info", parameters: ["uid": 7])) == "200")
        #expect(
            await status(TestEndpoint(realm, "user/info", method: .post, parameters: ["uid": 42])) == "200")
    }

    @Test func failuresAndDelaysArePerAnswer() async throws {
        realm.use(
            StubBackend()
                .on(.path("/v1/timeout"), answer: .timeout)
                .on(.path("/v1/refused"), answer: .connectionRefused)
                .on(.path("/v1/lost"), answer: .failure(URLError(.networkConnectionLost)))
                .on(.path("/v1/slow"), answer: StubBackend.Answer.json("{}").delayed(0.2)))
        #expect(await status(TestEndpoint(realm, "timeout")) == "timedOut")
        #expect(await status(TestEndpoint(realm, "refused")) == "transport")
        #expect(await status(TestEndpoint(realm, "lost")) == "transport")
        let start = Date()
        #expect(await status(TestEndpoint(realm, "slow")) == "200")
        #expect(Date().timeIntervalSince(start) >= 0.19)
        realm.setTimeout(0.05)
        #expect(await status(TestEndpoint(realm, "slow")) == "timedOut")
    }

    @Test func theNewestMatchingRuleWins() async throws {
        let stub = StubBackend().on(.any, answer: .status(500)).on(.path("/v1/ok"), answer: .status(204))
        realm.use(stub)
        #expect(await status(TestEndpoint(realm, "ok")) == "204")
        #expect(await status(TestEndpoint(realm, "other")) == "500")
        stub.on(.any, answer: .status(418))
        #expect(await status(TestEndpoint(realm, "ok")) == "418")
    }

    @Test func unmatchedRequestsGetSampleDataOrAFailureThatNamesThem() async throws {
        realm.use(StubBackend().on(.path("/v1/known"), answer: .status(204)))
        let sample = try await TestEndpoint(realm, "unknown", sampleData: Data("sample".utf8)).request()
        #expect(try sample.mapString() == "sample")

        realm.use(StubBackend(unmatched: .fail).on(.path("/v1/known", method: .post), answer: .status(204)))
        do {
            _ = try await TestEndpoint(realm, "unknown", parameters: ["a": 1]).request()
            Issue.record("expected a failure")
        } catch let ServiceError.transport(_, underlying, _) {
            let message = "\(underlying)"
            #expect(underlying is StubBackend.UnmatchedRequest)
            #expect(message.contains("GET https://api.example.com/v1/unknown?a=1"))
            #expect(message.contains("POST /v1/known"))
        }
    }

    @Test func crudCallsAreMatchedAndLoggedToo() async throws {
        let stub = StubBackend().on(.crud(.destroy), answer: .status(404))
        let users = Service(baseURL: URL(string: "https://api.example.com/v1/users")!)
        realm.use(stub).register(users)
        #expect(try await users.retrieve("1").value.statusCode == 200)
        await #expect(throws: ServiceError.self) { try await users.destroy("1").value }
        #expect(stub.received.map(\.crudMethod) == [.retrieve, .destroy])
        #expect(stub.received(matching: .crud(.destroy)).first?.urlRequest.url?.path == "/v1/users/1")
    }

    @Test func theLogKeepsMethodURLHeadersAndBodyOfEveryRequest() async throws {
        let stub = StubBackend()
        realm.use(stub).addHeader("X-Realm", withValue: "1")
        _ = try await TestEndpoint(realm, "a", method: .post, parameters: ["n": 1]).request()
        let logged = try #require(stub.received.first?.urlRequest)
        #expect(logged.httpMethod == "POST")
        #expect(logged.url?.absoluteString == "https://api.example.com/v1/a")
        #expect(logged.value(forHTTPHeaderField: "X-Realm") == "1")
        #expect(logged.httpBody == Data(#"{"n":1}"#.utf8))
    }

    @Test func theLogIsCompleteUnder500ConcurrentRequests() async throws {
        let stub = StubBackend(.delayed(0.001))
        realm.use(stub)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<500 {
                group.addTask { _ = try await TestEndpoint(realm, "n/\(index)").request() }
            }
            try await group.waitForAll()
        }
        let paths = Set(stub.received.compactMap { $0.urlRequest.url?.path })
        #expect(paths.count == 500)
        #expect(paths == Set((0..<500).map { "/v1/n/\($0)" }))
    }

    @Test func theLogKeepsOnlyTheLatestRequestsPastItsLimit() async throws {
        let stub = StubBackend(logLimit: 3)
        realm.use(stub)
        for index in 0..<5 { _ = try await TestEndpoint(realm, "\(index)").request() }
        #expect(stub.received.map { $0.urlRequest.url!.lastPathComponent } == ["2", "3", "4"])
    }
}
