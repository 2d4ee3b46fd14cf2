import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a realm's observers are told: every event of every request, once, in order.
@Suite(.timeLimit(.minutes(5)))
struct RequestEventTests {
    @Test func aPlainRequestIsBuiltSentAnsweredAndCompleted() async throws {
        let log = EventLog()
        let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!).use(StubBackend())
            .addObserver(log)
        let response = try await TestEndpoint(realm, "users").request()
        #expect(log.only == ["built", "attempt 1", "head 1 200", "completed 200"])
        guard case let .built(request)? = log.all.first?.kind else { return #expect(Bool(false)) }
        #expect(request.url?.absoluteString == "https://api.example.com/users")
        // An observer turns metrics on.
        #expect(response.metrics.count == 1)
        #expect(Set(log.all.map(\.requestID)).count == 1)
        #expect(log.all.map(\.date) == log.all.map(\.date).sorted())
    }

    @Test func theCallbackFormTellsTheSameEventsBeforeItsCompletion() async throws {
        let log = EventLog()
        let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!).use(StubBackend())
            .addObserver(log)
        let seenByCompletion = await withCheckedContinuation { continuation in
            TestEndpoint(realm, "users").request { _ in continuation.resume(returning: log.only) }
        }
        #expect(seenByCompletion == ["built", "attempt 1", "head 1 200", "completed 200"])
    }

    @Test func aRetriedRequestTellsEachAttemptAndTheRetry() async throws {
        let log = EventLog()
        let stub = StubBackend().on(.any, answer: .status(503), .status(200))
        var policy = RetryPolicy.maxRetries(2)
        policy.clock = RetryClock(sleep: { _ in }, now: { Date() }, random: { $0.upperBound })
        let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!).use(stub)
            .addMiddleware(.retry(policy)).addObserver(log)
        let response = try await TestEndpoint(realm, "flaky").request()
        #expect(
            log.only == [
                "built", "attempt 1", "head 1 503", "retry after 1", "attempt 2", "head 2 200",
                "completed 200",
            ])
        #expect(response.metrics.map(\.attempt) == [1, 2])
        guard
            case let .retryScheduled(_, delay, reason)? = log.all.first(where: {
                $0.kind.name.hasPrefix("retry")
            })?.kind
        else { return }
        #expect(delay == policy.baseDelay)
        #expect(reason == "status 503")
    }

    @Test func aCancelledRequestEndsWithOneFailureAndNothingAfter() async throws {
        let log = EventLog()
        let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!)
            .use(StubBackend(.delayed(0.3))).addObserver(log)
        let handle = TestEndpoint(realm, "slow").request { _ in }
        handle.cancel()
        try await Task.sleep(nanoseconds: 500_000_000)  // past the stub's answer, which must tell nothing
        #expect(log.only == ["built", "attempt 1", "failed cancelled"])
    }

    @Test func aFailureCarriesTheMetricsOfItsAttempts() async throws {
        let log = EventLog()
        let stub = StubBackend().on(.any, answer: .status(503))
        var policy = RetryPolicy.maxRetries(1)
        policy.clock = RetryClock(sleep: { _ in }, now: { Date() }, random: { $0.upperBound })
        let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!).use(stub)
            .addMiddleware(.retry(policy)).addObserver(log)
        let error = await #expect(throws: ServiceError.self) {
            try await TestEndpoint(realm, "down").request()
        }
        #expect(error?.metrics.map(\.attempt) == [1, 2])
        guard case let .failed(_, metrics)? = log.all.last?.kind else { return #expect(Bool(false)) }
        #expect(metrics.map(\.attempt) == [1, 2])
    }

    @Test func tokenRefreshesAndCacheHitsAreTold() async throws {
        let log = EventLog()
        // max-age of an hour: the second request is a cache hit however long a loaded machine stalls
        // between the two.
        let stub = StubBackend().on(
            .any, answer: .status(401),
            StubBackend.Answer(
                statusCode: 200, headers: ["Cache-Control": "max-age=3600"], data: Data("{}".utf8)))
        let auth = TokenAuthentication(initial: AccessToken("old")) { AccessToken("new") }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("events-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!).use(stub)
            .addMiddleware(auth).useCache(try HTTPCache(directory: directory)).addObserver(log)
        _ = try await TestEndpoint(realm, "me").request()
        _ = try await TestEndpoint(realm, "me").request()
        let names = log.names.values.sorted { $0.count > $1.count }
        #expect(
            names.first == [
                "built", "attempt 1", "head 1 401", "refresh started", "refresh succeeded", "attempt 2",
                "head 2 200", "completed 200",
            ])
        #expect(names.last == ["built", "cache hit", "completed 200"])
    }

    @Test func anObserverMayCancelTheRequestItIsToldAbout() async throws {
        let log = EventLog()
        let box = HandleBox()
        // Cancelling from inside the observer queues the failure behind the event being told.
        let cancelling = EventHandler { event in
            if case .responseHead = event.kind { box.handle?.cancel() }
        }
        let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!)
            .use(StubBackend(.delayed(0.2))).addObserver(log).addObserver(cancelling)
        let outcome = await withCheckedContinuation { continuation in
            box.handle = TestEndpoint(realm, "slow").request { continuation.resume(returning: $0) }
        }
        // The head came at the commit point: the answer stands, the cancellation comes too late.
        #expect((try? outcome.get())?.statusCode == 200)
        #expect(log.only == ["built", "attempt 1", "head 1 200", "completed 200"])
    }

    /// 500 requests at once — answered, delayed, cancelled, retried — each tells its events once, in order.
    @Test func eventsStayInOrderUnderFiveHundredConcurrentRequests() async throws {
        let log = EventLog()
        let stub = StubBackend { request in
            var answer = StubBackend.Answer(
                statusCode: request.urlRequest.url!.path.hasSuffix("/3") ? 503 : 200)
            answer.delay = request.urlRequest.url!.path.hasSuffix("/0") ? nil : 0.01
            return answer
        }
        var policy = RetryPolicy.maxRetries(1)
        policy.clock = RetryClock(sleep: { _ in }, now: { Date() }, random: { $0.upperBound })
        let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!).use(stub)
            .addMiddleware(.retry(policy)).addObserver(log)
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<500 {
                group.addTask {
                    let endpoint = TestEndpoint(realm, "items/\(index % 5)")
                    if index % 7 == 0 {
                        let handle = endpoint.request { _ in }
                        handle.cancel()
                    } else {
                        _ = try? await endpoint.request()
                    }
                }
            }
        }
        try await Task.sleep(nanoseconds: 300_000_000)  // answers to cancelled requests, which tell nothing
        let byRequest = log.names
        #expect(byRequest.count == 500)
        for (id, names) in byRequest {
            let terminal = names.filter { $0.hasPrefix("completed") || $0.hasPrefix("failed") }
            #expect(terminal.count == 1, "\(id): \(names)")
            #expect(
                names.last.map { $0.hasPrefix("completed") || $0.hasPrefix("failed") } == true,
                "\(id): \(names)")
            #expect(names.first == "built", "\(id): \(names)")
            #expect(names.filter { $0 == "built" }.count == 1, "\(id): \(names)")
            // Attempts count up, each answered before the next starts.
            let attempts = names.filter { $0.hasPrefix("attempt") }
            #expect(attempts == (0..<attempts.count).map { "attempt \($0 + 1)" }, "\(id): \(names)")
        }
    }
}

/// A request's handle, for an observer to reach.
private final class HandleBox: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: RequestHandle?

    var handle: RequestHandle? {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}
