import Foundation
import SwiftyService
import ProcessProbes
import SwiftyServiceCurl
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Where the time went, per backend, against real servers: what each backend can see it reports, the rest
/// is `nil` (not guessed).
@Suite("Transfer metrics", .timeLimit(.minutes(5)), .tags(.realServer))
struct MetricsRealServerTests {
    func realm(_ kind: ConformingBackend) throws -> ServiceRealm {
        try HTTPBin.realm(backend: try kind.make()).collectMetrics()
    }

    @Test func curlReportsEveryPhaseAndAReusedConnection() async throws {
        let realm = try realm(.curl)
        let first = try await TestEndpoint(realm, "get").request()
        let fresh = try #require(first.metrics.first)
        // httpbin's gunicorn drops idle connections when its threads are all busy (the suite runs beside
        // this test): up to five more requests for one that rides on an open connection.
        var later: [TransferMetrics] = []
        for _ in 0..<5 where !later.contains(where: { $0.reusedConnection == true }) {
            later.append(try #require(try await TestEndpoint(realm, "get").request().metrics.first))
        }
        let reused = try #require(later.first { $0.reusedConnection == true }, "no request reused: \(later)")
        #expect(later.allSatisfy { $0.reusedConnection == true || $0.dnsLookup != nil })
        #expect(first.metrics.count == 1 && fresh.attempt == 1)
        #expect(fresh.reusedConnection == false)
        #expect(fresh.dnsLookup != nil && fresh.connect != nil)
        #expect(fresh.tlsHandshake == nil, "plain HTTP has no TLS phase")
        #expect(reused.reusedConnection == true)
        #expect(
            reused.dnsLookup == 0 && reused.connect == 0 && reused.tlsHandshake == nil,
            "a reused connection has no set-up phase (and plain HTTP no TLS at all): \(reused)")
        let httpbin = try HTTPBin.url()
        for metrics in [fresh, reused] {
            let firstByte = try #require(metrics.firstByte)
            let total = try #require(metrics.total)
            #expect(firstByte > 0 && total >= firstByte)
            #expect(try #require(metrics.requestSent) <= firstByte)
            #expect(metrics.remoteAddress == "127.0.0.1")
            #expect(metrics.remotePort == httpbin.port)
            #expect(metrics.httpVersion == "HTTP/1.1")
            #expect(try #require(metrics.bytesSent) > 0)
            #expect(try #require(metrics.bytesReceived) > Int64(first.data.count))
        }
    }

    @Test(arguments: [ConformingBackend.curl, .urlSession])
    func aSlowServerShowsInTheTimeToFirstByte(_ kind: ConformingBackend) async throws {
        let response = try await TestEndpoint(try realm(kind), "delay/1").request()
        let metrics = try #require(response.metrics.first)
        let firstByte = try #require(metrics.firstByte)
        #expect(firstByte >= 1, "\(kind): \(metrics)")
        #expect(try #require(metrics.total) >= firstByte)
    }

    /// FoundationNetworking reports no task metrics: what the delegate cannot see stays `nil`.
    @Test func urlSessionOnLinuxReportsOnlyWhatItSees() async throws {
        let response = try await TestEndpoint(try realm(.urlSession), "get").request()
        let metrics = try #require(response.metrics.first)
        #expect(metrics.firstByte != nil && metrics.total != nil)
        #if !canImport(Darwin)
        #expect(metrics.dnsLookup == nil)
        #expect(metrics.connect == nil)
        #expect(metrics.tlsHandshake == nil)
        #expect(metrics.requestSent == nil)
        #expect(metrics.reusedConnection == nil)
        #expect(metrics.remoteAddress == nil && metrics.remotePort == nil)
        #expect(metrics.httpVersion == nil)
        #expect(metrics.bytesSent == nil && metrics.bytesReceived == nil)
        #endif
    }

    @Test(arguments: [ConformingBackend.curl, .urlSession])
    func aRedirectShowsItsHops(_ kind: ConformingBackend) async throws {
        let log = EventLog()
        let realm = try realm(kind).addObserver(log)
        let response = try await TestEndpoint(realm, "redirect/2").request()
        let metrics = try #require(response.metrics.first)
        #expect(metrics.redirects == 2, "\(kind): \(metrics)")
        if kind == .curl { #expect(try #require(metrics.redirectTime) > 0) }
        let hops = log.all.compactMap { event -> String? in
            guard case let .redirected(from, to, status) = event.kind else { return nil }
            return "\(status) \(from.path) → \(to.path)"
        }
        #expect(
            hops == ["302 /redirect/2 → /relative-redirect/1", "302 /relative-redirect/1 → /get"], "\(kind)")
    }

    @Test(arguments: [ConformingBackend.curl, .urlSession])
    func aRetryShowsEachAttemptAndTheWaitBetween(_ kind: ConformingBackend) async throws {
        var policy = RetryPolicy.maxRetries(1)
        policy.baseDelay = 0.3
        policy.clock = RetryClock(
            sleep: RetryClock.system.sleep, now: { Date() }, random: { $0.upperBound })
        let realm = try realm(kind).addMiddleware(.retry(policy))
        let error = await #expect(throws: ServiceError.self) {
            try await TestEndpoint(realm, "status/503").request()
        }
        let metrics = try #require(error?.metrics)
        #expect(metrics.map(\.attempt) == [1, 2], "\(kind)")
        guard metrics.count == 2 else { return }
        let firstEnded = metrics[0].start.addingTimeInterval(try #require(metrics[0].total))
        #expect(metrics[1].start.timeIntervalSince(firstEnded) >= 0.3, "\(kind): the retry's wait")
    }

    @Test(arguments: [ConformingBackend.curl, .urlSession])
    func aRefusedConnectionRetriedReportsTheMetricsOfBothAttemptsToObservers(_ kind: ConformingBackend)
        async throws
    {
        // A closed port on loopback (ProcessProbes.closedPort): refused at once, retried once.
        var policy = RetryPolicy.maxRetries(1)
        policy.clock = RetryClock(sleep: { _ in }, now: { Date() }, random: { $0.lowerBound })
        let log = EventLog()
        let realm = uniqueRealm().setBaseURL(URL(string: "http://127.0.0.1:\(try closedPort())")!)
            .use(try kind.make()).addObserver(log).addMiddleware(.retry(policy))
        await #expect(throws: ServiceError.self) { try await TestEndpoint(realm, "refused").request() }
        let failed = try #require(
            log.all.compactMap { event -> [TransferMetrics]? in
                guard case let .failed(_, metrics) = event.kind else { return nil }
                return metrics
            }.first)
        #expect(failed.map(\.attempt) == [1, 2], "\(kind): the metrics of the attempts that were made")
        #expect(failed.allSatisfy { ($0.total ?? -1) >= 0 }, "\(kind)")
    }

    @Test(arguments: [ConformingBackend.curl, .urlSession])
    func aRefusedConnectionWithoutMiddlewareReportsItsAttemptToObservers(_ kind: ConformingBackend) async throws {
        let log = EventLog()
        let realm = uniqueRealm().setBaseURL(URL(string: "http://127.0.0.1:\(try closedPort())")!)
            .use(try kind.make()).addObserver(log)
        await #expect(throws: ServiceError.self) { try await TestEndpoint(realm, "refused").request() }
        let failed = log.all.compactMap { event -> [TransferMetrics]? in
            guard case let .failed(_, metrics) = event.kind else { return nil }
            return metrics
        }
        #expect(failed.first?.map(\.attempt) == [1], "\(kind)")
    }

    @Test func httpsShowsATLSPhaseOnCurl() async throws {
        let realm = uniqueRealm().setBaseURL(try TLSServers.url("TLS_VALID_URL")).use(try CurlBackend())
            .setTLSPolicy(TLSPolicy(trustedRoots: try TLSFixtures.caRoots())).collectMetrics()
        let first = try #require(try await TestEndpoint(realm, "").request().metrics.first)
        #expect(try #require(first.tlsHandshake) > 0, "\(first)")
        // Up to five more: on a busy machine a connection can sit idle past the server's limit before the next.
        var later: [TransferMetrics] = []
        for _ in 0..<5 where !later.contains(where: { $0.reusedConnection == true }) {
            later.append(try #require(try await TestEndpoint(realm, "").request().metrics.first))
        }
        let reused = try #require(later.first { $0.reusedConnection == true }, "no request reused: \(later)")
        #expect(reused.dnsLookup == 0 && reused.connect == 0 && reused.tlsHandshake == 0, "\(reused)")
    }

    @Test func nothingIsMeasuredUnlessAskedFor() async throws {
        let realm = try HTTPBin.realm(backend: try CurlBackend())
        let response = try await TestEndpoint(realm, "get").request()
        #expect(response.metrics.isEmpty)
    }

    @Test func theLogLineShowsWhereTheTimeWent() async throws {
        let lines = LineSink()
        let realm = try realm(.curl).addMiddleware(LoggingMiddleware(to: lines.record))
        _ = try await TestEndpoint(realm, "get").request()
        let line = try #require(lines.calls.first)
        #expect(line.contains(" · dns "), "\(line)")
        #expect(line.contains(" · connect "), "\(line)")
        #expect(line.contains(" · ttfb "), "\(line)")
    }
}

/// Log lines, collected.
typealias LineSink = CallbackRecorder<String>
