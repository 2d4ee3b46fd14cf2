import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// When and how a failed request is sent again.
///
/// The default: at most 2 retries; idempotent methods only (GET, HEAD, OPTIONS, PUT, DELETE, TRACE), and
/// POST or PATCH only when they carry an `Idempotency-Key` header; statuses 408, 429, 500, 502, 503 and
/// 504, and timeouts, lost or refused connections and DNS failures; waits of `0.5 s × 2ⁿ` with full
/// jitter, at most 30 s, or what `Retry-After` says (seconds or an HTTP date), at most 60 s. A cancelled
/// request is never retried, nor a TLS failure (a certificate or handshake the server will refuse again),
/// whatever ``retryableErrors`` holds. Whatever the delays are set to, no wait is longer than a day. A body from
/// a stream (``RequestBody/stream(_:length:contentType:)``) is read once: its retry fails with
/// ``BodyStreamError/cannotResendForRetry(attempt:)`` rather than send it again.
public struct RetryPolicy: Sendable {
    /// How many times a request may be sent again after the first.
    public var maxRetries = 2
    /// Methods that are safe to send twice.
    public var idempotentMethods: Set<HTTPMethod> = [.get, .head, .options, .put, .delete, .trace]
    /// A header that makes any method safe to send twice, because the server deduplicates on it.
    public var idempotencyKeyHeader = "Idempotency-Key"
    /// Statuses worth another try.
    public var retryableStatusCodes: Set<Int> = [408, 429, 500, 502, 503, 504]
    /// Transport failures worth another try (timeouts are retried too); TLS failures never are.
    public var retryableErrors: Set<URLError.Code> = [
        .networkConnectionLost, .cannotConnectToHost, .cannotFindHost, .dnsLookupFailed,
        .notConnectedToInternet,
    ]
    /// The first backoff; the n-th retry waits a random time up to `baseDelay × 2ⁿ`.
    public var baseDelay: TimeInterval = 0.5
    /// The longest backoff.
    public var maxDelay: TimeInterval = 30
    /// The longest wait a `Retry-After` header may ask for.
    public var maxRetryAfter: TimeInterval = 60
    /// Where waits and the current time come from; tests replace it so retries take no wall time.
    public var clock: RetryClock = .system

    /// The defaults above.
    public init() {}

    /// The defaults.
    public static let `default` = RetryPolicy()

    /// The defaults with `retries` retries at most.
    public static func maxRetries(_ retries: Int) -> RetryPolicy {
        var policy = RetryPolicy()
        policy.maxRetries = retries
        return policy
    }

    /// Whether `request` may be sent twice.
    func allowsRetry(of request: URLRequest) -> Bool {
        idempotentMethods.contains(HTTPMethod(rawValue: request.httpMethod ?? "GET"))
            || request.value(forHTTPHeaderField: idempotencyKeyHeader) != nil
    }

    func shouldRetry(_ error: ServiceError) -> Bool {
        switch error {
        case .timedOut: return true
        case let .transport(_, underlying, _):
            guard let code = (underlying as? URLError)?.code, !TLSFailure.codes.contains(code) else {
                return false
            }
            return code == .timedOut || retryableErrors.contains(code)
        default: return false
        }
    }

    /// How long to wait before retry number `retry` (0 for the first), given what the server said.
    func delay(beforeRetry retry: Int, after response: Response?) -> TimeInterval {
        if let header = response?.header("Retry-After"),
            let seconds = HTTPDate.retryAfter(header, now: clock.now())
        {
            return Self.wait(seconds, atMost: maxRetryAfter)
        }
        let ceiling = Self.wait(baseDelay * pow(2, Double(retry)), atMost: maxDelay)
        return ceiling > 0 ? clock.random(0...ceiling) : 0
    }

    /// `seconds`, at most `limit` and at most a day; no wait for NaN or less than 0. A policy set to
    /// `.infinity`, NaN or a negative delay must not reach `0...ceiling` or `Task.sleep`, which trap.
    private static func wait(_ seconds: TimeInterval, atMost limit: TimeInterval) -> TimeInterval {
        var wait = min(seconds, 86_400)
        if limit < wait { wait = limit }
        return wait > 0 ? wait : 0
    }
}

/// Sleeping, the time and randomness, as retries use them; replaceable so tests run instantly.
public struct RetryClock: Sendable {
    /// Waits `seconds`; throws when the task is cancelled.
    public var sleep: @Sendable (_ seconds: TimeInterval) async throws -> Void
    /// The current time, for `Retry-After` dates.
    public var now: @Sendable () -> Date
    /// A random value in the range, for jitter.
    public var random: @Sendable (ClosedRange<Double>) -> Double

    /// A clock from its three parts.
    public init(
        sleep: @escaping @Sendable (TimeInterval) async throws -> Void, now: @escaping @Sendable () -> Date,
        random: @escaping @Sendable (ClosedRange<Double>) -> Double
    ) {
        self.sleep = sleep
        self.now = now
        self.random = random
    }

    /// Real sleeping, the system time and the system's random numbers.
    public static let system = RetryClock(
        sleep: { seconds in
            try await Task.sleep(nanoseconds: seconds > 0 ? UInt64(min(seconds, 86_400) * 1e9) : 0)
        },
        now: { Date() },
        random: { Double.random(in: $0) })
}

/// Sends a request again per a ``RetryPolicy``; the final response or error tells how many attempts it
/// took (``Response/attempts``, ``ServiceError/attempts``).
public struct RetryMiddleware: Middleware {
    /// The policy.
    public let policy: RetryPolicy

    /// Retries per `policy`.
    public init(_ policy: RetryPolicy = .default) {
        self.policy = policy
    }

    /// Sends, and sends again while the policy says so.
    public func intercept(_ request: URLRequest, context: RequestContext, next: MiddlewareNext) async throws
        -> Response
    {
        let mayRetry = policy.allowsRetry(of: request)
        var retry = 0
        while true {
            let response: Response
            do {
                response = try await next(request)
            } catch let error as ServiceError {
                guard mayRetry, retry < policy.maxRetries, policy.shouldRetry(error) else { throw error }
                try await wait(policy.delay(beforeRetry: retry, after: nil), context, reason: "\(error.kind)")
                retry += 1
                continue
            }
            guard mayRetry, retry < policy.maxRetries,
                policy.retryableStatusCodes.contains(response.statusCode)
            else { return response }
            try await wait(
                policy.delay(beforeRetry: retry, after: response), context,
                reason: "status \(response.statusCode)")
            retry += 1
        }
    }

    private func wait(_ seconds: TimeInterval, _ context: RequestContext, reason: String) async throws {
        context.events?.emit(.retryScheduled(attempt: context.attempts, delay: seconds, reason: reason))
        try Task.checkCancellation()
        try await policy.clock.sleep(seconds)
        try Task.checkCancellation()
    }
}

extension Middleware where Self == RetryMiddleware {
    /// Retries per `policy`: `.addMiddleware(.retry())`, `.addMiddleware(.retry(.maxRetries(4)))`.
    public static func retry(_ policy: RetryPolicy = .default) -> RetryMiddleware {
        RetryMiddleware(policy)
    }
}
