import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Reports each request — method, URL, status, duration, attempt — to a sink of your choice, optionally
/// with a cURL command that reproduces it. Nothing is printed unless you pass `print`.
///
/// ```swift
/// realm.addMiddleware(LoggingMiddleware(to: { print($0) }))        // GET https://… → 200 (12 ms, attempt 1)
/// realm.collectMetrics()     // … → 200 (92 ms, attempt 1) · dns 3 ms · connect 1 ms · tls 25 ms · ttfb 80 ms · …
/// realm.addMiddleware(LoggingMiddleware(to: { logger.debug("\($0)") }, curl: true))
/// ```
/// Secrets never reach the sink: the values of `Authorization`, `Proxy-Authorization`, `Cookie`,
/// `Set-Cookie` and the realm's declared secret headers and query keys are replaced, in the cURL command
/// too, and those values are scrubbed from the body shown. Added first, it logs each call once with its
/// final attempt count; added last, it logs every attempt. A stream gets a second line when its body ends,
/// with the bytes read; a request that waits for a connection to its host gets a line when the wait begins.
public struct LoggingMiddleware: Middleware {
    private let sink: @Sendable (String) -> Void
    private let curl: Bool
    private let now: @Sendable () -> Date

    /// Logs to `sink`; with `curl`, also a cURL command before each request.
    public init(
        to sink: @escaping @Sendable (String) -> Void, curl: Bool = false,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.sink = sink
        self.curl = curl
        self.now = now
    }

    /// Logs the request, passes it on, logs what came back.
    public func intercept(_ request: URLRequest, context: RequestContext, next: MiddlewareNext) async throws
        -> Response
    {
        let secrets = context.redaction.secretValues(in: request)
        let line = "\(request.httpMethod ?? "GET") \(Self.redactedURL(request, context.redaction, secrets))"
        if curl { sink(Self.curl(request, context.redaction, secrets)) }
        let start = now()
        @Sendable func elapsed() -> String { "\(Int((now().timeIntervalSince(start) * 1000).rounded())) ms" }
        // `GET https://… waiting for a connection to https://api.example.com:443 (all 8 in use)`: said when the
        // wait begins, since a stream can wait for as long as another one runs.
        context.whenWaitingForConnection { [sink] wait in sink("\(line) \(wait)") }
        do {
            let response = try await next(request)
            // With metrics collected, where the time went: `dns 3 ms · connect 1 ms · tls 25 ms · ttfb 80 ms`.
            let phases = response.metrics.last.map { " · \($0)" } ?? ""
            sink("\(line) → \(response.statusCode) (\(elapsed()), attempt \(context.attempts))\(phases)")
            if response.isStreamed {
                // `GET https://… → 200 streamed 5120 bytes (2004 ms)`, or how the stream ended early.
                response.whenBodyEnds { [sink] bytes, error in
                    let end =
                        error.map { "stream \(Self.outcome($0)) after \(bytes) bytes" }
                        ?? "streamed \(bytes) bytes"
                    sink("\(line) → \(response.statusCode) \(end) (\(elapsed()))")
                }
            }
            return response
        } catch {
            let failure = ServiceError(error, request: request, attempts: context.attempts)
            sink("\(line) → \(Self.outcome(failure)) (\(elapsed()), attempt \(context.attempts))")
            throw error
        }
    }

    private static func outcome(_ error: ServiceError) -> String {
        switch error {
        case .timedOut: "timed out"
        case .cancelled: "cancelled"
        case let .transport(_, underlying, _):
            "failed: \((underlying as? URLError).map { "URLError \($0.errorCode)" } ?? "\(type(of: underlying))")"
        default: "\(error.kind)"
        }
    }

    static func redactedURL(_ request: URLRequest, _ redaction: Redaction, _ secrets: [String]) -> String {
        scrub(request.url.map { redaction.redacting($0).absoluteString } ?? "?", secrets)
    }

    /// A shell command that sends the same request, secrets replaced.
    static func curl(_ request: URLRequest, _ redaction: Redaction, _ secrets: [String]) -> String {
        var parts = ["curl"]
        if let method = request.httpMethod, method != "GET" { parts.append("-X \(method)") }
        parts.append(quote(redactedURL(request, redaction, secrets)))
        for (name, value) in redaction.redacting(headers: request.allHTTPHeaderFields ?? [:]).sorted(by: {
            $0.key < $1.key
        }) {
            parts.append("-H \(quote("\(name): \(scrub(value, secrets))"))")
        }
        if let body = request.httpBody, !body.isEmpty {
            if let text = String(data: body, encoding: .utf8) {
                parts.append("--data-binary \(quote(scrub(text, secrets)))")
            } else {
                parts.append("--data-binary @- # \(body.count) bytes of binary data")
            }
        }
        return parts.joined(separator: " ")
    }

    private static func quote(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: #"'\''"#) + "'"
    }

    private static func scrub(_ text: String, _ secrets: [String]) -> String {
        secrets.filter { $0.count >= 4 }.sorted { $0.count > $1.count }.reduce(text) {
            $0.replacingOccurrences(of: $1, with: Redaction.headerPlaceholder)
        }
    }
}
