import Foundation
import ProcessProbes
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `CurlBackend.executor`: tasks that prefer it run on the backend's libcurl thread, where their awaited
/// requests are begun and answered; nothing is lost when the backend goes.
@Suite("CurlBackend's executor", .timeLimit(.minutes(5)), .tags(.realServer))
struct CurlExecutorTests {
    @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)
    @Test func tasksThatPreferTheExecutorRunOnTheBackendsThreadThroughTheirRequests() async throws {
        let backend = try CurlBackend()
        let realm = try HTTPBin.realm(backend: backend)
        let loopThread = String(backend.threadName.prefix(15))
        let threadsSeen = try await withThrowingTaskGroup(of: Set<String>.self) { group in
            for worker in 0..<8 {
                group.addTask(executorPreference: backend.executor) {
                    var seen: Set<String> = [currentThreadName()]
                    for index in 0..<25 {
                        let echo = try await TestEndpoint(realm, "anything/\(worker)-\(index)").request()
                            .echo()
                        #expect(echo.url.hasSuffix("/anything/\(worker)-\(index)"))
                        seen.insert(currentThreadName())
                    }
                    return seen
                }
            }
            return try await group.reduce(into: Set<String>()) { $0.formUnion($1) }
        }
        #expect(threadsSeen == [loopThread], "every step of every task ran on \(loopThread): \(threadsSeen)")
        #expect(try await waitUntil(for: 30) { backend.transfersInFlight == 0 })
    }

    @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)
    @Test func aStreamReadBySuchATaskArrivesWholeThroughPausesAndResumesOnTheSameThread() async throws {
        let backend = try CurlBackend()
        let realm = uniqueRealm("stream").setBaseURL(try StreamServer.url()).use(backend)
        let loopThread = String(backend.threadName.prefix(15))
        // 100,000 JSON lines (~3 MB): more than the reader's buffer holds, so the transfer pauses while the
        // reader, on the very thread that would resume it, catches up.
        let (lines, threadsSeen) = try await Task(executorPreference: backend.executor) {
            () -> (Int, Set<String>) in
            struct Line: Decodable, Sendable { let n: Int }
            let stream = try await TestEndpoint(realm, "jsonl", parameters: ["count": 100_000]).stream()
            var (expected, seen) = (0, Set([currentThreadName()]))
            for try await line in stream.jsonLines(as: Line.self) {
                if line.n != expected { Issue.record("line \(expected) is \(line.n)") }
                expected += 1
                if expected.isMultiple(of: 10_000) { seen.insert(currentThreadName()) }
            }
            return (expected, seen)
        }.value
        #expect(lines == 100_000)
        #expect(threadsSeen == [loopThread], "the reader ran on \(loopThread) throughout: \(threadsSeen)")
    }

    @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)
    @Test func aRequestFromSuchATaskIsCancelledPromptlyAndTheTaskGoesOn() async throws {
        let backend = try CurlBackend()
        let realm = try HTTPBin.realm(backend: backend)
        let task = Task(executorPreference: backend.executor) { () -> (Bool, Int) in
            // /slow/60 (Tests/Servers/httpbin_app.py): only the cancellation can end it within 60 s.
            let slow = Task { try await TestEndpoint(realm, "slow/60").request() }
            try await Task.sleep(for: .milliseconds(100))
            slow.cancel()
            let cancelled: Bool
            do {
                _ = try await slow.value
                cancelled = false
            } catch {
                cancelled = (error as? ServiceError)?.kind == .cancelled
            }
            return (cancelled, try await TestEndpoint(realm, "get").request().statusCode)
        }
        try await measuringPromptness {
            let start = ContinuousClock.now
            let (cancelled, next) = try await task.value
            #expect(cancelled, "the slow request ended as cancelled")
            let elapsed = seconds(since: start)
            #expect(elapsed < 45, "far sooner than the server's answer at 60 s: \(elapsed) s")
            #expect(next == 200, "the task's next request is answered")
        }
    }

    @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)
    @Test func tasksOnTheExecutorOfABackendThatIsGoneStillRun() async throws {
        let realm = try HTTPBin.realm()
        var backend: CurlBackend? = try CurlBackend()
        realm.use(backend!)
        let executor = try #require(backend?.executor)
        let threadName = try #require(backend?.threadName)
        #expect(await Task(executorPreference: executor) { currentThreadName() }.value == threadName)
        realm.use(.stub)
        backend = nil
        try await waitUntil(every: 20_000_000, for: 10) { threads(named: threadName) == 0 }
        #expect(threads(named: threadName) == 0, "the backend's thread ended with it")
        let ranOn = try await Task(executorPreference: executor) { () -> String in
            try await Task.sleep(for: .milliseconds(10))
            return currentThreadName()
        }.value
        #expect(ranOn != threadName && !ranOn.isEmpty, "ran on another thread: \(ranOn)")
    }
}
