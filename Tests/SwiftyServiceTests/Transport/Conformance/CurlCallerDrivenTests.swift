import Foundation
import ProcessProbes
import SwiftyService
import SwiftyServiceCurl
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An awaited request on CurlBackend is carried out on the awaiting thread while the backend's own thread
/// has nothing in flight, for up to a millisecond, and handed to that thread after: these check the
/// hand-overs a user cannot see, by what they can see (answers, cancellations, the transfers in flight).
@Suite("CurlBackend: awaited requests on the awaiting thread", .timeLimit(.minutes(5)), .tags(.realServer))
struct CurlCallerDrivenTests {
    @Test func anAnswerSlowerThanTheCallersTurnArrivesThroughTheBackendsThread() async throws {
        let backend = try CurlBackend()
        let realm = try HTTPBin.realm(backend: backend)
        let slow = try await TestEndpoint(realm, "delay/0.3").request().echo()
        #expect(slow.url.hasSuffix("/delay/0.3"))
        // The requests right after a slow one go to the backend's thread at once; they are answered too.
        for index in 0..<40 {
            let echo = try await TestEndpoint(realm, "anything/\(index)").request().echo()
            #expect(echo.url.hasSuffix("/anything/\(index)"))
        }
        #expect(try await waitUntil(for: 30) { backend.transfersInFlight == 0 })
    }

    @Test func aRedirectChainIsFollowedToItsEnd() async throws {
        let realm = try HTTPBin.realm(backend: try CurlBackend())
        let response = try await TestEndpoint(realm, "redirect/3").request()
        #expect(response.statusCode == 200)
        #expect(response.response.url?.path == "/get")
    }

    @Test func requestsSentWhileOneIsUnderWayAllGetTheirOwnAnswers() async throws {
        let backend = try CurlBackend()
        let realm = try HTTPBin.realm(backend: backend)
        for _ in 0..<5 {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<12 {
                    group.addTask {
                        // Every third one is slow enough to be handed over while the others come and go.
                        let path = index % 3 == 0 ? "delay/0.05" : "anything/\(index)"
                        let echo = try await TestEndpoint(realm, path, parameters: ["i": index]).request()
                            .echo()
                        #expect(echo.url.hasSuffix("/\(path)?i=\(index)"))
                    }
                }
                try await group.waitForAll()
            }
        }
        #expect(try await waitUntil(for: 30) { backend.transfersInFlight == 0 })
    }

    @Test func cancellingARequestTheBackendsThreadTookOverEndsItPromptly() async throws {
        let backend = try CurlBackend()
        let realm = try HTTPBin.realm(backend: backend)
        try await measuringPromptness {
            // /slow/60 (Tests/Servers/httpbin_app.py): only the cancellation can end the request within 60 s.
            let request = Task { try await TestEndpoint(realm, "slow/60").request() }
            #expect(try await waitUntil(for: 30) { backend.transfersInFlight == 1 })
            try await Task.sleep(for: .milliseconds(50))
            let start = ContinuousClock.now
            request.cancel()
            await #expect {
                _ = try await request.value
            } throws: { error in
                if case ServiceError.cancelled = error { true } else { false }
            }
            // Far sooner than the server's answer at 60 s; the bound allows for a loaded machine.
            #expect(seconds(since: start) < 45)
        }
        #expect(try await waitUntil(for: 30) { backend.transfersInFlight == 0 })
        // The backend goes on: the next request is answered.
        #expect(try await TestEndpoint(realm, "get").request().statusCode == 200)
    }

    #if os(Linux)
    @Test func aCallbackIsNeverCalledOnTheThreadThatSentTheRequest() async throws {
        let backend = try CurlBackend()
        let realm = try HTTPBin.realm(backend: backend)
        for _ in 0..<20 {
            let recorder = CallbackRecorder<String>()
            let sender = currentThreadName()
            TestEndpoint(realm, "get").request { _ in recorder.record(currentThreadName()) }
            let answeredOn = try await recorder.first()
            #expect(answeredOn == String(backend.threadName.prefix(15)))
            #expect(answeredOn != sender)
        }
    }
    #endif
}
