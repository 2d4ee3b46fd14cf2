import Foundation
import ProcessProbes
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `RetryMiddleware` against httpbin: which failures are retried, how often, after which waits, and the
/// attempt counts that responses and errors report.
@Suite("Retries against a real server", .timeLimit(.minutes(5)), .tags(.realServer))
struct RetryRealServerTests {

    @Test("A GET answered 503 is sent 3 times and fails with status 503 after 3 attempts")
    func retries503() async throws {
        // httpbin /status/503: always 503, no Retry-After.
        let spy = SpyBackend(URLSessionBackend())
        let waits = CallbackRecorder<TimeInterval>()
        let realm = try HTTPBin.realm(backend: spy).addMiddleware(.retry(.instant(recordingWaitsIn: waits)))

        let error = try await #require(throws: ServiceError.self) {
            try await TestEndpoint(realm, "status/503").request()
        }

        #expect(error.kind == .unacceptableStatusCode)
        #expect(error.response?.statusCode == 503)
        #expect(error.attempts == 3)
        #expect(error.description.contains("(3 attempts)"))
        #expect(spy.requests.count == 3)
        #expect(waits.calls == [0.5, 1.0])
    }

    @Test("A GET answered 200 at once counts one attempt")
    func successCountsOneAttempt() async throws {
        // httpbin /status/200: an empty 200.
        let spy = SpyBackend(URLSessionBackend())
        let waits = CallbackRecorder<TimeInterval>()
        let realm = try HTTPBin.realm(backend: spy).addMiddleware(.retry(.instant(recordingWaitsIn: waits)))

        let response = try await TestEndpoint(realm, "status/200").request()

        #expect(response.statusCode == 200)
        #expect(response.attempts == 1)
        #expect(spy.requests.count == 1)
        #expect(waits.calls.isEmpty)
    }

    @Test("The server's Retry-After, in seconds or as an HTTP date, sets the wait, capped at maxRetryAfter")
    func retryAfterFromTheServer() async throws {
        // httpbin /response-headers?Retry-After=…: a 200 carrying the header; 200 is made retryable here,
        // since no httpbin endpoint sends Retry-After with a 503.
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let inThirtySeconds = formatter.string(from: now.addingTimeInterval(30))

        for (header, expected) in [("7", 7.0), (inThirtySeconds, 30), ("3600", 60)] {
            let waits = CallbackRecorder<TimeInterval>()
            var policy = RetryPolicy()
            policy.retryableStatusCodes = [200]
            policy.maxRetries = 1
            policy.clock = RetryClock(sleep: { waits.record($0) }, now: { now }, random: { $0.upperBound })
            let realm = try HTTPBin.realm(backend: URLSessionBackend()).addMiddleware(.retry(policy))

            let response = try await TestEndpoint(
                realm, "response-headers", parameters: ["Retry-After": header]
            ).request()

            #expect(response.header("Retry-After") == header)
            #expect(response.attempts == 2)
            #expect(waits.calls == [expected], "Retry-After: \(header)")
        }
    }

    @Test("A 404 is not worth a retry")
    func clientErrorsAreNotRetried() async throws {
        // httpbin /status/404: an empty 404.
        let spy = SpyBackend(URLSessionBackend())
        let waits = CallbackRecorder<TimeInterval>()
        let realm = try HTTPBin.realm(backend: spy).addMiddleware(.retry(.instant(recordingWaitsIn: waits)))

        let error = try await #require(throws: ServiceError.self) {
            try await TestEndpoint(realm, "status/404").request()
        }

        #expect(error.response?.statusCode == 404)
        #expect(error.attempts == 1)
        #expect(spy.requests.count == 1)
    }

    @Test("A POST answered 503 is sent once, or three times when it carries an Idempotency-Key")
    func postRetriesOnlyWithIdempotencyKey() async throws {
        // httpbin /status/503 accepts POST and always answers 503.
        let plainSpy = SpyBackend(URLSessionBackend())
        let waits = CallbackRecorder<TimeInterval>()
        let plain = try HTTPBin.realm(backend: plainSpy).addMiddleware(
            .retry(.instant(recordingWaitsIn: waits)))
        let plainError = try await #require(throws: ServiceError.self) {
            try await TestEndpoint(plain, "status/503", method: .post)
                .request()
        }
        #expect(plainError.attempts == 1)
        #expect(plainSpy.requests.count == 1)

        let keyedSpy = SpyBackend(URLSessionBackend())
        let keyed = try HTTPBin.realm(backend: keyedSpy).addMiddleware(
            .retry(.instant(recordingWaitsIn: waits)))
        let keyedError = try await #require(throws: ServiceError.self) {
            try await TestEndpoint(
                keyed, "status/503", method: .post, headers: ["Idempotency-Key": UUID().uuidString]
            ).request()
        }
        #expect(keyedError.attempts == 3)
        #expect(keyedSpy.requests.count == 3)
        #expect(
            Set(keyedSpy.requests.compactMap { $0.value(forHTTPHeaderField: "Idempotency-Key") }).count == 1)
    }

    @Test("A refused connection is retried and fails with .transport after 3 attempts")
    func refusedConnectionIsRetried() async throws {
        // No server: a closed port on 127.0.0.1.
        let spy = SpyBackend(URLSessionBackend())
        let waits = CallbackRecorder<TimeInterval>()
        let realm = uniqueRealm()
            .setBaseURL(try #require(URL(string: "http://127.0.0.1:\(try closedPort())")))
            .use(spy)
            .addMiddleware(.retry(.instant(recordingWaitsIn: waits)))

        let error = try await #require(throws: ServiceError.self) {
            try await TestEndpoint(realm, "anything/refused").request()
        }

        #expect(error.kind == .transport)
        #expect((error.underlyingError as? URLError)?.code == .cannotConnectToHost)
        #expect(error.attempts == 3)
        #expect(spy.requests.count == 3)
    }

    @Test("A timeout is retried and fails with .timedOut after 3 attempts")
    func timeoutIsRetried() async throws {
        // /slow/60 (Tests/Servers/httpbin_app.py) with a 1 s timeout: every attempt times out, with room for
        // a timer that fires late on a loaded machine, even one stalled for tens of seconds (under
        // ThreadSanitizer, 1 s against /delay/2 once let an answer through). A sub-second timeout would not
        // do: URLSession on Linux truncates it to whole seconds.
        let spy = SpyBackend(URLSessionBackend())
        let waits = CallbackRecorder<TimeInterval>()
        // No deadline on the whole: the default one, 5 timeouts, is 5 s here, which three attempts of 1 s each
        // on a loaded machine may outlast.
        let realm = try HTTPBin.realm(backend: spy)
            .setTimeout(1).setResourceTimeout(.unlimited)
            .addMiddleware(.retry(.instant(recordingWaitsIn: waits)))

        let error = try await #require(throws: ServiceError.self) {
            try await TestEndpoint(realm, "slow/60").request()
        }

        #expect(error.kind == .timedOut)
        #expect(error.attempts == 3)
        #expect(spy.requests.count == 3)
    }

    @Test("A cancelled request is never retried")
    func cancelledIsNotRetried() async throws {
        // /slow/60 (Tests/Servers/httpbin_app.py): still in flight when the task is cancelled, even on a
        // loaded machine.
        let spy = SpyBackend(URLSessionBackend())
        let waits = CallbackRecorder<TimeInterval>()
        let realm = try HTTPBin.realm(backend: spy).addMiddleware(.retry(.instant(recordingWaitsIn: waits)))

        let task = Task { try await TestEndpoint(realm, "slow/60").request() }
        try await spy.waitForRequests(1)
        try await Task.sleep(for: .milliseconds(100))
        task.cancel()
        let error = try #require(await task.result.serviceError)
        try await Task.sleep(for: .milliseconds(300))

        #expect(error.kind == .cancelled)
        #expect(spy.requests.count == 1)
        #expect(waits.calls.isEmpty)
    }
}
