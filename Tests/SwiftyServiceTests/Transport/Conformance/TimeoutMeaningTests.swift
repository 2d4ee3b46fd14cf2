import Foundation
import SwiftyService
import SwiftyServiceCurl
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `setTimeout` is the longest silence, fractional or whole, on every shipped backend: a server that keeps
/// talking never trips it, one that falls silent does, at the timeout. (The legacy example's adapter has its
/// library's meaning, which is why it is not among these.)
@Suite("What a timeout means", .timeLimit(.minutes(5)), .tags(.realServer))
struct TimeoutMeaningTests {
    enum Shipped: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case urlSession, curl
        var testDescription: String { rawValue }
        func make() throws -> any NetworkBackend {
            switch self {
            case .urlSession: URLSessionBackend()
            case .curl: try CurlBackend()
            }
        }
    }

    @Test(arguments: Shipped.allCases)
    func aByteEveryHalfSecondNeverTripsATimeoutOfOneAndAHalf(_ kind: Shipped) async throws {
        // httpbin /drip: 8 bytes over 4 s, one every 0.5 s. Before, a fractional timeout bounded the whole
        // transfer: .timedOut at 1.5 s.
        try await measuringPromptness {
            let realm = try HTTPBin.realm(backend: try kind.make()).setTimeout(1.5)
            let response = try await TestEndpoint(
                realm, "drip", parameters: ["numbytes": 8, "duration": 4, "delay": 0]
            ).request()
            #expect(response.data.count == 8, "\(kind)")
        }
    }

    @Test(arguments: Shipped.allCases)
    func aByteEveryTwoSecondsNeverTripsATimeoutOfThree(_ kind: Shipped) async throws {
        // httpbin /drip: 3 bytes over 6 s, one every 2 s. Before, CurlBackend's whole-second timeout was
        // libcurl's average speed over that time: .timedOut at 3–5 s.
        try await measuringPromptness {
            let realm = try HTTPBin.realm(backend: try kind.make()).setTimeout(3)
            let response = try await TestEndpoint(
                realm, "drip", parameters: ["numbytes": 3, "duration": 6, "delay": 0]
            ).request()
            #expect(response.data.count == 3, "\(kind)")
        }
    }

    /// When the request's callback ran, measured in the callback: on the backend's thread, so that two
    /// threads busy with other suites' tasks cannot make the timeout look late.
    func timeToAnswer(_ endpoint: TestEndpoint) async throws -> (ServiceError.Kind?, Double) {
        let recorder = CallbackRecorder<(Result<Response, ServiceError>, ContinuousClock.Instant)>()
        let start = ContinuousClock.now
        endpoint.request { recorder.record(($0, ContinuousClock.now)) }
        let (result, answered) = try await recorder.first(within: 15)
        let elapsed = answered - start
        return (
            result.serviceError?.kind,
            Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        )
    }

    @Test(arguments: Shipped.allCases)
    func aFourSecondSilenceEndsATimeoutOfOneAndAHalfOnTime(_ kind: Shipped) async throws {
        // httpbin /drip with delay 4: nothing at all for 4 s.
        try await measuringPromptness {
            let realm = try HTTPBin.realm(backend: try kind.make()).setTimeout(1.5)
            let (error, elapsed) = try await timeToAnswer(
                TestEndpoint(realm, "drip", parameters: ["numbytes": 1, "duration": 0, "delay": 4]))
            #expect(error == .timedOut, "\(kind)")
            #expect(elapsed >= 1.45 && elapsed < 2, "\(kind): \(elapsed) s")
        }
    }

    @Test func aStubThatAnswersAfterTheTimeoutTimesOutAtTheTimeout() async throws {
        try await measuringPromptness {
            let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!).use(
                .stub(.delayed(4))
            )
            .setTimeout(1.5)
            let (error, elapsed) = try await timeToAnswer(TestEndpoint(realm, "x"))
            #expect(error == .timedOut)
            #expect(elapsed >= 1.45 && elapsed < 2, "\(elapsed) s")
        }
    }
}
