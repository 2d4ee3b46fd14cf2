import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// W3C Trace Context on outgoing requests: the format, a new trace per call, one span per attempt, and
/// continuing the app's trace.
@Suite struct TraceContextTests {
    static var traceparent: Regex<(Substring, Substring, Substring)> {
        #/^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/#
    }

    func realm(_ stub: StubBackend, spans: SpanLog? = nil, retries: Int = 0) -> ServiceRealm {
        var policy = RetryPolicy.maxRetries(retries)
        policy.clock = RetryClock(sleep: { _ in }, now: { Date() }, random: { $0.upperBound })
        var onSpan: (@Sendable (TraceSpan) -> Void)?
        if let spans { onSpan = { span in spans.record(span) } }
        return uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!).use(stub)
            .addMiddleware(.retry(policy))
            .addMiddleware(TraceContextMiddleware(onSpan: onSpan))
    }

    func traceparents(_ stub: StubBackend) throws -> [(trace: String, span: String)] {
        try stub.received.map { request in
            let value = try #require(request.urlRequest.value(forHTTPHeaderField: "traceparent"))
            let match = try #require(value.wholeMatch(of: Self.traceparent), "\(value)")
            return (String(match.1), String(match.2))
        }
    }

    @Test func eachCallStartsATraceOfItsOwn() async throws {
        let stub = StubBackend()
        let realm = realm(stub)
        _ = try await TestEndpoint(realm, "a").request()
        _ = try await TestEndpoint(realm, "b").request()
        let sent = try traceparents(stub)
        #expect(sent.count == 2)
        #expect(Set(sent.map(\.trace)).count == 2)
        #expect(stub.received.allSatisfy { $0.urlRequest.value(forHTTPHeaderField: "tracestate") == nil })
    }

    @Test func eachAttemptIsASpanOfTheSameTrace() async throws {
        let stub = StubBackend().on(.any, answer: .status(503), .status(503), .status(200))
        let spans = SpanLog()
        _ = try await TestEndpoint(realm(stub, spans: spans, retries: 2), "flaky").request()
        let sent = try traceparents(stub)
        #expect(sent.count == 3)
        #expect(Set(sent.map(\.trace)).count == 1, "one trace for the call")
        #expect(Set(sent.map(\.span)).count == 3, "a span per attempt")
        #expect(spans.calls.map(\.attempt) == [1, 2, 3])
        #expect(spans.calls.map(\.statusCode) == [503, 503, 200])
        #expect(spans.calls.map(\.spanID) == sent.map(\.span))
        #expect(spans.calls.allSatisfy { $0.end >= $0.start && $0.trace.traceID == sent[0].trace })
    }

    @Test func theTaskLocalTraceIsContinued() async throws {
        let stub = StubBackend()
        let spans = SpanLog()
        let parent = try #require(
            TraceContext(
                traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", tracestate: "vendor=1"
            ))
        try await TraceContext.$current.withValue(parent) {
            _ = try await TestEndpoint(realm(stub, spans: spans), "child").request()
        }
        let sent = try traceparents(stub)
        #expect(sent.first?.trace == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(sent.first?.span != "00f067aa0ba902b7", "a span of its own, child of the caller's")
        #expect(spans.calls.first?.trace.parentSpanID == "00f067aa0ba902b7")
        #expect(stub.received.first?.urlRequest.value(forHTTPHeaderField: "tracestate") == "vendor=1")
    }

    @Test func aTraceparentOnTheRequestIsContinued() async throws {
        let stub = StubBackend()
        let endpoint = TestEndpoint(
            realm(stub), "child",
            headers: ["traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"])
        _ = try await endpoint.request()
        #expect(try traceparents(stub).first?.trace == "0af7651916cd43dd8448eb211c80319c")
    }

    @Test(arguments: [
        "", "00-00000000000000000000000000000000-b7ad6b7169203331-01",
        "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
        "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",
        "00-0af7651916cd43dd8448eb211c80319-b7ad6b7169203331-01",
        // Version 00 is exactly 55 characters; ff is no version; a later one needs its fields in place.
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra",
        "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        "cc-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01.what-the-future-will-be-like",
        "cc-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0",
        "c-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-future",
        ".0-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    ])
    func anInvalidTraceparentIsNotContinued(_ value: String) {
        #expect(TraceContext(traceparent: value) == nil)
    }

    @Test(arguments: [
        "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        "cc-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        "cc-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-what-the-future-will-be-like",
    ])
    func aLaterVersionIsReadByTheRulesForFutureVersions(_ value: String) throws {
        let context = try #require(TraceContext(traceparent: value))
        #expect(context.traceID == "0af7651916cd43dd8448eb211c80319c")
        #expect(context.parentSpanID == "b7ad6b7169203331" && context.sampled)
    }

    @Test func aLaterVersionContinuesTheTraceAsVersion00() async throws {
        let stub = StubBackend()
        let future = "cc-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-what-the-future-will-be-like"
        _ = try await TestEndpoint(
            realm(stub), "child", headers: ["traceparent": future, "tracestate": "v=1"]
        )
        .request()
        let sent = try #require(stub.received.first?.urlRequest)
        let traceparent = try #require(sent.value(forHTTPHeaderField: "traceparent"))
        #expect(traceparent.hasPrefix("00-0af7651916cd43dd8448eb211c80319c-") && traceparent.count == 55)
        #expect(sent.value(forHTTPHeaderField: "tracestate") == "v=1", "it goes with the continued trace")
    }

    @Test func aRestartedTraceDropsTheTracestate() async throws {
        let stub = StubBackend()
        let invalid = "00-00000000000000000000000000000000-b7ad6b7169203331-01"
        _ = try await TestEndpoint(
            realm(stub), "child", headers: ["traceparent": invalid, "tracestate": "v=1"]
        )
        .request()
        let sent = try #require(stub.received.first?.urlRequest)
        #expect(sent.value(forHTTPHeaderField: "traceparent")?.contains("0000000000000000000000") == false)
        #expect(sent.value(forHTTPHeaderField: "tracestate") == nil, "a new trace carries no old vendor data")
    }

    @Test func aFailedAttemptIsASpanWithItsError() async throws {
        let stub = StubBackend().on(.any, answer: .connectionRefused)
        let spans = SpanLog()
        await #expect(throws: ServiceError.self) {
            try await TestEndpoint(realm(stub, spans: spans), "x").request()
        }
        #expect(spans.calls.count == 1)
        #expect(spans.calls.first?.error?.kind == .transport && spans.calls.first?.statusCode == nil)
    }
}

/// Reaches the server: httpbin echoes the header it got.
@Suite(.tags(.realServer))
struct TraceContextRealServerTests {
    @Test func theServerReceivesTheTraceparent() async throws {
        let spans = SpanLog()
        let realm = try HTTPBin.realm().addMiddleware(TraceContextMiddleware { spans.record($0) })
        let echo = try await TestEndpoint(realm, "headers").request().decode([String: [String: String]].self)
        let received = try #require(echo["headers"]?["Traceparent"])
        let span = try #require(spans.calls.first)
        #expect(received == "00-\(span.trace.traceID)-\(span.spanID)-01")
    }
}

/// What the server receives on every backend: a restarted trace without the old `tracestate`, and a later
/// version's trace continued (httpbin's /headers echoes the request's headers).
@Suite(.tags(.realServer))
struct TraceContextConformanceTests {
    func received(_ kind: ConformingBackend, traceparent: String) async throws -> [String: String] {
        let realm = try HTTPBin.realm(backend: try kind.make()).addMiddleware(TraceContextMiddleware())
        let endpoint = TestEndpoint(
            realm, "headers", headers: ["traceparent": traceparent, "tracestate": "v=1"])
        let echo = try await endpoint.request().decode([String: [String: String]].self)
        return try #require(echo["headers"])
    }

    @Test(arguments: ConformingBackend.allCases)
    func aRestartedTraceReachesTheServerWithoutTheOldTracestate(_ kind: ConformingBackend) async throws {
        let headers = try await received(
            kind, traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01.bad")
        #expect(headers["Traceparent"]?.contains("0af7651916cd43dd8448eb211c80319c") == false, "\(kind)")
        #expect(headers["Tracestate"] == nil, "\(kind)")
    }

    @Test(arguments: ConformingBackend.allCases)
    func aLaterVersionsTraceReachesTheServerContinued(_ kind: ConformingBackend) async throws {
        let headers = try await received(
            kind, traceparent: "cc-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-future-fields")
        #expect(headers["Traceparent"]?.hasPrefix("00-0af7651916cd43dd8448eb211c80319c-") == true, "\(kind)")
        #expect(headers["Tracestate"] == "v=1", "\(kind)")
    }
}

/// Spans, collected.
typealias SpanLog = CallbackRecorder<TraceSpan>
