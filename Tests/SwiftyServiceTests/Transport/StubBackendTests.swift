import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite struct StubBackendTests {
    let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!)

    @Test func itAnswersEachEndpointsSampleDataWith200() async throws {
        realm.use(.stub)
        let response = try await TestEndpoint(realm, "x", sampleData: Data(#"{"id":1}"#.utf8)).request()
        #expect(response.statusCode == 200)
        #expect(response.data == Data(#"{"id":1}"#.utf8))
        #expect(response.request.url?.absoluteString == "https://api.example.com/x")
    }

    @Test("A delay of NaN or less than 0 answers at once; one of infinity times out at the request's timeout")
    func delaysOfAnyValueAnswer() async throws {
        for delay in [TimeInterval.nan, -1, -TimeInterval.infinity] {
            let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!)
                .use(StubBackend(.delayed(delay))).setTimeout(5)
            #expect(try await TestEndpoint(realm, "x").request().statusCode == 200, "\(delay)")
            let scripted = uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!)
                .use(StubBackend { _ in StubBackend.Answer.sampleData.delayed(delay) }).setTimeout(5)
            #expect(try await TestEndpoint(scripted, "x").request().statusCode == 200, "\(delay)")
        }
        let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!)
            .use(StubBackend(.delayed(.infinity))).setTimeout(0.2)
        await #expect {
            try await TestEndpoint(realm, "x").request()
        } throws: { ($0 as? ServiceError)?.kind == .timedOut }
    }

    @Test func anImmediateAnswerArrivesBeforeRequestReturns() {
        realm.use(StubBackend(.immediate))
        let recorder = CallbackRecorder<Int>()
        let handle = TestEndpoint(realm, "x").request { recorder.record((try? $0.get().statusCode) ?? -1) }
        #expect(recorder.calls == [200])
        #expect(handle.isFinished)
    }

    @Test func aClosureDecidesStatusHeadersAndBodyPerRequest() async throws {
        realm.use(
            StubBackend { request in
                request.urlRequest.url?.path == "/missing"
                    ? .init(statusCode: 404, headers: ["X-Reason": "gone"], data: Data("nope".utf8))
                    : .json(#"{"path":"\#(request.urlRequest.url!.path)"}"#)
            })
        let found = try await TestEndpoint(realm, "found").request()
        #expect(try found.mapString() == #"{"path":"/found"}"#)
        #expect(found.header("content-type") == "application/json")
        do {
            _ = try await TestEndpoint(realm, "missing").request()
            Issue.record("expected a failure")
        } catch let ServiceError.unacceptableStatusCode(response, _) {
            #expect(response.statusCode == 404)
            #expect(response.header("X-Reason") == "gone")
            #expect(response.data == Data("nope".utf8))
        }
    }

    @Test func theClosureSeesTheEndpointItAnswers() async throws {
        realm.use(
            StubBackend { request in
                let endpoint = request.endpoint as? TestEndpoint
                return .init(data: Data((endpoint?.path ?? "none").utf8))
            })
        #expect(try await TestEndpoint(realm, "who/am/i").request().mapString() == "who/am/i")
    }

    @Test func aFailingStatusIsAnUnacceptableStatusCode() async throws {
        realm.use(StubBackend.failing(statusCode: 503, data: Data("busy".utf8)))
        await #expect {
            try await TestEndpoint(realm, "x").request()
        } throws: { error in
            guard case let ServiceError.unacceptableStatusCode(response, _) = error else { return false }
            return response.statusCode == 503 && response.data == Data("busy".utf8)
        }
    }

    @Test func thrownErrorsBecomeTheMatchingServiceErrorCase() async throws {
        struct LibraryFailure: Error {}
        let cases: [(any Error, (ServiceError) -> Bool)] = [
            (URLError(.timedOut), { if case .timedOut = $0 { true } else { false } }),
            (URLError(.cannotConnectToHost), { if case .transport = $0 { true } else { false } }),
            (URLError(.networkConnectionLost), { if case .transport = $0 { true } else { false } }),
            (URLError(.cancelled), { if case .cancelled = $0 { true } else { false } }),
            (CancellationError(), { if case .cancelled = $0 { true } else { false } }),
            (
                LibraryFailure(),
                {
                    if case let .transport(_, underlying, _) = $0 {
                        underlying is LibraryFailure
                    } else {
                        false
                    }
                }
            ),
        ]
        for (thrown, matches) in cases {
            realm.use(StubBackend.failing(thrown))
            do {
                _ = try await TestEndpoint(realm, "x").request()
                Issue.record("expected \(thrown) to fail the request")
            } catch let error as ServiceError {
                #expect(matches(error), "\(thrown) became \(error)")
            }
        }
    }

    @Test func aDelayedAnswerTakesItsDelay() async throws {
        realm.use(.stub(.delayed(0.2)))
        let start = Date()
        _ = try await TestEndpoint(realm, "x").request()
        #expect(Date().timeIntervalSince(start) >= 0.19)
    }

    @Test func aDelayLongerThanTheTimeoutTimesOutAtTheTimeout() async throws {
        realm.use(.stub(.delayed(120))).setTimeout(0.2)
        try await measuringPromptness {
            let start = Date()
            await #expect {
                try await TestEndpoint(realm, "x").request()
            } throws: { error in
                if case ServiceError.timedOut = error { true } else { false }
            }
            // Well under the delay: the pool of the main test run, busy with everything starting at once,
            // resumed the caller of a 0.2 s timeout 12 s late here and 26 s late in a CI run.
            #expect(Date().timeIntervalSince(start) < 90, "at the timeout, not after the 120 s delay")
        }
    }

    @Test func aServiceIsAnsweredByTheStubToo() async throws {
        realm.use(StubBackend { request in .init(data: Data("\(request.crudMethod!)".utf8)) })
        let service = Service(baseURL: URL(string: "https://api.example.com/users")!)
        realm.register(service)
        #expect(try await service.retrieve("1").value.mapString() == "retrieve")
        #expect(try await service.destroy("1").value.mapString() == "destroy")
    }
}
