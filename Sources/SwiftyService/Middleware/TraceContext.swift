import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A W3C Trace Context (https://www.w3.org/TR/trace-context/): the trace a call belongs to, and the span
/// that made it. Supply one to continue your trace, through the task-local ``current`` or a `traceparent`
/// header on the request; otherwise ``TraceContextMiddleware`` starts a new trace per call.
public struct TraceContext: Sendable, Hashable {
    /// The trace: 32 lower-case hex digits, not all zero.
    public let traceID: String
    /// The caller's span, which the call's spans are children of: 16 lower-case hex digits.
    public let parentSpanID: String?
    /// Whether the trace is sampled (the `01` flag).
    public var sampled: Bool
    /// Vendor data passed along unchanged as `tracestate`.
    public var state: String?

    /// The context the current task's calls continue (`TraceContext.$current.withValue(context) { … }`).
    @TaskLocal public static var current: TraceContext?

    /// A new trace, with no parent span.
    public static func newTrace(sampled: Bool = true) -> TraceContext {
        TraceContext(traceID: randomHex(bytes: 16), parentSpanID: nil, sampled: sampled, state: nil)
    }

    /// The context a `traceparent` header (and its `tracestate`) carry; `nil` when the trace must be
    /// restarted instead.
    ///
    /// Version `00` is read exactly: 55 characters, `00-<trace-id>-<parent-id>-<flags>`. A later version is
    /// read as the specification says for versions it does not know yet (W3C Trace Context, "Versioning of
    /// traceparent"): at least 55 characters, the trace-id, parent-id and flags where version 00 has them,
    /// and after the flags either the end or a `-` that starts fields of that version, which are ignored.
    /// Version `ff`, upper-case hex, and a trace-id or parent-id of zeros are invalid in every version.
    public init?(traceparent: String, tracestate: String? = nil) {
        let characters = Array(traceparent.utf8)
        let dash = UInt8(ascii: "-")
        guard characters.count >= 55, Self.isHex(characters[0..<2]), characters[2] == dash,
            !(characters[0] == UInt8(ascii: "f") && characters[1] == UInt8(ascii: "f"))
        else { return nil }
        let isVersionZero = characters[0] == UInt8(ascii: "0") && characters[1] == UInt8(ascii: "0")
        guard isVersionZero ? characters.count == 55 : (characters.count == 55 || characters[55] == dash),
            Self.isHex(characters[3..<35]), characters[35] == dash, Self.isHex(characters[36..<52]),
            characters[52] == dash, Self.isHex(characters[53..<55]),
            characters[3..<35].contains(where: { $0 != UInt8(ascii: "0") }),
            characters[36..<52].contains(where: { $0 != UInt8(ascii: "0") }),
            let flags = UInt8(String(decoding: characters[53..<55], as: UTF8.self), radix: 16)
        else { return nil }
        self.init(
            traceID: String(decoding: characters[3..<35], as: UTF8.self),
            parentSpanID: String(decoding: characters[36..<52], as: UTF8.self), sampled: flags & 1 == 1,
            state: tracestate)
    }

    private init(traceID: String, parentSpanID: String?, sampled: Bool, state: String?) {
        self.traceID = traceID
        self.parentSpanID = parentSpanID
        self.sampled = sampled
        self.state = state
    }

    /// The `traceparent` value of a span of this trace.
    func traceparent(span: String) -> String {
        "00-\(traceID)-\(span)-\(sampled ? "01" : "00")"
    }

    static func randomHex(bytes: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        while true {
            let values = (0..<bytes).map { _ in UInt8.random(in: 0...255, using: &generator) }
            guard values.contains(where: { $0 != 0 }) else { continue }
            return values.map { String($0, radix: 16).leftPadded(to: 2) }.joined()
        }
    }

    /// Whether every character is a lower-case hex digit, as the specification's `HEXDIGLC`.
    private static func isHex(_ characters: ArraySlice<UInt8>) -> Bool {
        characters.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }
}

/// One attempt as a span of a trace, for ``TraceContextMiddleware``'s `onSpan` hook: bridge it to your
/// tracing system there.
public struct TraceSpan: Sendable {
    /// The trace the span belongs to.
    public let trace: TraceContext
    /// This span: 16 lower-case hex digits, the one sent in `traceparent`.
    public let spanID: String
    /// Which attempt of the call the span covers.
    public let attempt: Int
    /// The request as it was sent.
    public let request: URLRequest
    /// When the attempt started.
    public let start: Date
    /// When it ended.
    public let end: Date
    /// Its status code, when a response came.
    public let statusCode: Int?
    /// Its failure, when none did.
    public let error: ServiceError?
}

/// Adds W3C `traceparent` (and `tracestate`) to each request: continuing ``TraceContext/current``, or the
/// `traceparent` the request carries, or a new trace that every attempt of the call shares.
///
/// The `tracestate` sent is the continued trace's: a `tracestate` the request carries goes with its
/// `traceparent`, so when that one is not continued (it is invalid, or ``TraceContext/current`` wins) the
/// request's `tracestate` is not sent either, as the specification says for a restarted trace.
///
/// Added after (inside) ``RetryMiddleware``, each attempt is a span of its own with the same trace:
/// ```swift
/// realm.addMiddleware(.retry())
///      .addMiddleware(TraceContextMiddleware { span in tracer.record(span) })
/// ```
public struct TraceContextMiddleware: Middleware {
    private let onSpan: (@Sendable (TraceSpan) -> Void)?

    /// Traces each request; `onSpan` gets each attempt's span when it ends.
    public init(onSpan: (@Sendable (TraceSpan) -> Void)? = nil) {
        self.onSpan = onSpan
    }

    /// Sends the request with its span's `traceparent`; reports the span.
    public func intercept(_ request: URLRequest, context: RequestContext, next: MiddlewareNext) async throws
        -> Response
    {
        let trace = context.call.trace {
            TraceContext.current
                ?? request.value(forHTTPHeaderField: "traceparent").flatMap {
                    TraceContext(traceparent: $0, tracestate: request.value(forHTTPHeaderField: "tracestate"))
                } ?? .newTrace()
        }
        let span = TraceContext.randomHex(bytes: 8)
        var traced = request
        traced.setValue(trace.traceparent(span: span), forHTTPHeaderField: "traceparent")
        traced.setValue(trace.state, forHTTPHeaderField: "tracestate")
        let start = Date()
        func report(_ statusCode: Int?, _ error: ServiceError?) {
            onSpan?(
                TraceSpan(
                    trace: trace, spanID: span, attempt: context.attempts, request: traced, start: start,
                    end: Date(), statusCode: statusCode, error: error))
        }
        do {
            let response = try await next(traced)
            report(response.statusCode, nil)
            return response
        } catch {
            report(nil, ServiceError(error, request: traced, attempts: context.attempts))
            throw error
        }
    }
}

extension String {
    fileprivate func leftPadded(to length: Int) -> String {
        count >= length ? self : String(repeating: "0", count: length - count) + self
    }
}
