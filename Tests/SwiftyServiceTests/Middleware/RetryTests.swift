import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A clock that never sleeps: it records the waits asked for and always picks the top of the jitter range.
final class RecordingClock: @unchecked Sendable {
    private let lock = NSLock()
    private var waits: [TimeInterval] = []
    let now = Date(timeIntervalSince1970: 1_700_000_000)

    var slept: [TimeInterval] {
        lock.lock()
        defer { lock.unlock() }
        return waits
    }

    private func record(_ seconds: TimeInterval) {
        lock.lock()
        waits.append(seconds)
        lock.unlock()
    }

    var clock: RetryClock {
        RetryClock(
            sleep: { [self] seconds in record(seconds) },
            now: { [now] in now },
            random: { $0.upperBound })
    }
}

@Suite struct RetryTests {
    let stub = StubBackend()
    let realm: ServiceRealm
    let time = RecordingClock()

    init() {
        realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!).use(stub)
    }

    func policy(_ change: (inout RetryPolicy) -> Void = { _ in }) -> RetryPolicy {
        var policy = RetryPolicy.default
        policy.clock = time.clock
        change(&policy)
        return policy
    }

    @Test func retryableStatusesAreRetriedTwiceWithExponentialBackoffThenSurfaceWithTheirAttemptCount()
        async throws
    {
        stub.on(.any, answer: .status(503))
        realm.addMiddleware(.retry(policy()))
        do {
            _ = try await TestEndpoint(realm, "x").request()
            Issue.record("expected the 503")
        } catch let error as ServiceError {
            #expect(error.kind == .unacceptableStatusCode)
            #expect(error.response?.statusCode == 503)
            #expect(error.attempts == 3)
            #expect(error.description.hasSuffix("(3 attempts)"))
        }
        #expect(stub.received.count == 3)
        #expect(time.slept == [0.5, 1.0])
    }

    @Test func aRecoveredRequestSaysHowManyAttemptsItTook() async throws {
        stub.on(.any, answer: .status(502), .status(200))
        realm.addMiddleware(.retry(policy()))
        let response = try await TestEndpoint(realm, "x").request()
        #expect(response.statusCode == 200 && response.attempts == 2)
        #expect(try await TestEndpoint(realm, "y").request().attempts == 1)
    }

    @Test func everyRetryableStatusIsRetriedAndOthersAreNot() async throws {
        for status in [408, 429, 500, 502, 503, 504, 400, 401, 404, 501] {
            let stub = StubBackend().on(.any, answer: .status(status), .status(200))
            let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!).use(stub)
                .addMiddleware(.retry(policy()))
            _ = try? await TestEndpoint(realm, "x").request()
            let expected = [408, 429, 500, 502, 503, 504].contains(status) ? 2 : 1
            #expect(stub.received.count == expected, "status \(status)")
        }
    }

    @Test func backoffIsCappedAndJittered() async throws {
        stub.on(.any, answer: .status(500))
        realm.addMiddleware(
            .retry(
                policy {
                    $0.maxRetries = 6; $0.maxDelay = 3
                }))
        _ = try? await TestEndpoint(realm, "x").request()
        #expect(time.slept == [0.5, 1, 2, 3, 3, 3])

        let jitter = Trail()
        var jittered = RetryPolicy.default
        jittered.clock = RetryClock(
            sleep: { jitter.add("\($0)") }, now: { Date() },
            random: { range in
                jitter.add("0...\(range.upperBound)")
                return range.lowerBound
            })
        let other = uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!)
            .use(StubBackend.failing(statusCode: 503)).addMiddleware(.retry(jittered))
        _ = try? await TestEndpoint(other, "x").request()
        #expect(jitter.all == ["0...0.5", "0.0", "0...1.0", "0.0"])
    }

    @Test func retryAfterInSecondsIsHonouredAndCapped() async throws {
        stub.on(
            .any, answer: .init(statusCode: 429, headers: ["Retry-After": "7"]),
            .init(statusCode: 503, headers: ["Retry-After": "3600"]), .status(200))
        realm.addMiddleware(.retry(policy { $0.maxRetryAfter = 120 }))
        #expect(try await TestEndpoint(realm, "x").request().attempts == 3)
        #expect(time.slept == [7, 120])
    }

    @Test("Delays set to infinity, NaN or less than 0 wait at most a day, or not at all, and never trap")
    func delaysOfAnyValueAreBounded() async throws {
        let cases: [(String, (inout RetryPolicy) -> Void, [TimeInterval])] = [
            ("NaN base", { $0.baseDelay = .nan }, [0, 0]),
            ("negative base", { $0.baseDelay = -1 }, [0, 0]),
            (
                "infinite ceiling",
                {
                    $0.baseDelay = 1e300; $0.maxDelay = .infinity
                }, [86_400, 86_400]
            ),
            ("NaN ceiling", { $0.maxDelay = .nan }, [0.5, 1]),
        ]
        for (name, change, waits) in cases {
            let time = RecordingClock()
            var policy = RetryPolicy.default
            policy.clock = time.clock
            change(&policy)
            let stub = StubBackend().on(.any, answer: .status(503))
            let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!).use(stub)
                .addMiddleware(.retry(policy))
            await #expect(throws: ServiceError.self) { try await TestEndpoint(realm, "x").request() }
            #expect(time.slept == waits, "\(name)")
        }
        stub.on(
            .any, answer: .init(statusCode: 503, headers: ["Retry-After": "99999999999999999999"]),
            .status(200))
        realm.addMiddleware(.retry(policy { $0.maxRetryAfter = .infinity }))
        _ = try await TestEndpoint(realm, "x").request()
        #expect(time.slept == [86_400])
        // The system clock's sleep takes what a custom policy clock might hand it.
        try await RetryClock.system.sleep(.nan)
        try await RetryClock.system.sleep(-5)
    }

    @Test func retryAfterAsAnHTTPDateIsHonoured() async throws {
        // `time.now` is 2023-11-14 22:13:20 GMT; each date is 42 s later, in the three formats RFC 9110 allows.
        for date in [
            "Tue, 14 Nov 2023 22:14:02 GMT", "Tuesday, 14-Nov-23 22:14:02 GMT", "Tue Nov 14 22:14:02 2023",
        ] {
            let time = RecordingClock()
            var policy = RetryPolicy.default
            policy.clock = time.clock
            let stub = StubBackend().on(
                .any, answer: .init(statusCode: 503, headers: ["Retry-After": date]), .status(200))
            let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!).use(stub)
                .addMiddleware(.retry(policy))
            _ = try await TestEndpoint(realm, "x").request()
            #expect(time.slept == [42], "\(date)")
        }
    }

    @Test func aRetryAfterInThePastOrUnreadableFallsBackSensibly() async throws {
        stub.on(
            .any, answer: .init(statusCode: 503, headers: ["Retry-After": "Mon, 01 Jan 2001 00:00:00 GMT"]),
            .init(statusCode: 503, headers: ["Retry-After": "soon"]), .status(200))
        realm.addMiddleware(.retry(policy()))
        _ = try await TestEndpoint(realm, "x").request()
        #expect(time.slept == [0, 1.0])
    }

    @Test func postAndPatchAreRetriedOnlyWithAnIdempotencyKey() async throws {
        stub.on(.any, answer: .status(503))
        realm.addMiddleware(.retry(policy()))
        _ = try? await TestEndpoint(realm, "x", method: .post).request()
        #expect(stub.received.count == 1)
        _ = try? await TestEndpoint(realm, "x", method: .patch).request()
        #expect(stub.received.count == 2)
        _ = try? await TestEndpoint(realm, "x", method: .post, headers: ["Idempotency-Key": "k-1"]).request()
        #expect(stub.received.count == 5)
        _ = try? await TestEndpoint(realm, "x", method: .put).request()
        #expect(stub.received.count == 8)
    }

    @Test func transportFailuresAreRetriedButNotEveryError() async throws {
        stub.on(.path("/refused"), answer: .connectionRefused)
            .on(.path("/timeout"), answer: .timeout)
            .on(.path("/lost"), answer: .failure(URLError(.networkConnectionLost)))
            .on(.path("/dns"), answer: .failure(URLError(.cannotFindHost)))
            .on(.path("/tls"), answer: .failure(URLError(.serverCertificateUntrusted)))
        realm.addMiddleware(.retry(policy()))
        for (path, sends) in [("refused", 3), ("timeout", 3), ("lost", 3), ("dns", 3), ("tls", 1)] {
            let before = stub.received.count
            do {
                _ = try await TestEndpoint(realm, path).request()
            } catch let error as ServiceError {
                #expect(error.attempts == sends, "\(path)")
            }
            #expect(stub.received.count - before == sends, "\(path)")
        }
    }

    @Test func aCancelledRequestIsNeverRetried() async throws {
        // The answer an hour away, and a timeout past it (a timeout would be retried): only the cancel can
        // end the request, however long a loaded machine stalls before it.
        realm.use(StubBackend(.delayed(3600)))
        let spy = SpyBackend(StubBackend(.delayed(3600)))
        realm.use(spy).setTimeout(7200).addMiddleware(.retry(.default))
        let task = Task { try await TestEndpoint(realm, "x").request() }
        try await spy.waitForRequests(1)
        task.cancel()
        await #expect { try await task.value } throws: { ($0 as? ServiceError)?.kind == .cancelled }
        try await Task.sleep(nanoseconds: 100_000_000)
        #expect(spy.requests.count == 1)
    }

    @Test func cancellingDuringTheBackoffStopsAtOnce() async throws {
        stub.on(.any, answer: .status(503))
        // A backoff of exactly 60 s (real sleep, the top of the jitter range): with the default's full jitter
        // the first wait may be a few milliseconds, and the retry then went out before the cancel; 60 s
        // outlasts a loaded machine's stalls (a CI run resumed a test's caller 26 s late).
        var policy = RetryPolicy()
        policy.baseDelay = 60
        policy.maxDelay = 60
        policy.clock = RetryClock(
            sleep: RetryClock.system.sleep, now: RetryClock.system.now, random: { $0.upperBound })
        realm.addMiddleware(.retry(policy))
        let recorder = CallbackRecorder<Result<Response, ServiceError>>()
        let handle = TestEndpoint(realm, "x").request { recorder.record($0) }
        let sent = ContinuousClock.now
        while stub.received.isEmpty, ContinuousClock.now - sent < .seconds(30) {
            try await Task.sleep(nanoseconds: 5_000_000)
        }
        handle.cancel()
        guard case .failure(.cancelled) = try await recorder.first(within: 30) else {
            Issue.record("expected .cancelled"); return
        }
        try await Task.sleep(nanoseconds: 1_200_000_000)
        #expect(stub.received.count == 1, "no retry after the cancel")
    }
}
