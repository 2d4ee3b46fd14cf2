import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Which redirects a ``URLSessionBackend`` follows.
public enum RedirectPolicy: Sendable {
    /// Follow up to `max` redirects; one more fails with `URLError(.httpTooManyRedirects)` (a transport error).
    case follow(max: Int)
    /// Follow none: the 3xx response is the answer.
    case never
    /// Decide per redirect: return the request to send (already stripped of secrets when it leaves the
    /// origin), or `nil` to stop and answer with the 3xx response.
    case custom(@Sendable (_ response: HTTPURLResponse, _ next: URLRequest) -> URLRequest?)

    /// At most 10 redirects.
    public static let `default` = RedirectPolicy.follow(max: 10)
}

/// Applies a ``RedirectPolicy`` to a session's tasks, dropping credentials when a redirect leaves the origin.
final class RedirectGuard: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    enum Outcome: Equatable {
        case followed
        case tooMany
    }

    private struct Tracked {
        let original: URLRequest
        let secrets: Redaction
        var redirects = 0
        var tooMany = false
    }

    private let policy: RedirectPolicy
    private let tracked = Locked<[Int: Tracked]>.make([:])

    init(_ policy: RedirectPolicy) {
        self.policy = policy
    }

    func track(_ task: URLSessionTask, request: URLRequest, secrets: Redaction) {
        tracked.withLock { $0[task.taskIdentifier] = Tracked(original: request, secrets: secrets) }
    }

    /// Forgets the task; says whether it ended for having too many redirects.
    func finish(_ task: URLSessionTask) -> Outcome {
        let entry = tracked.withLock { $0.removeValue(forKey: task.taskIdentifier) }
        return entry?.tooMany == true ? .tooMany : .followed
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        let entry = tracked.withLock { table -> Tracked? in
            table[task.taskIdentifier]?.redirects += 1
            return table[task.taskIdentifier]
        }
        guard let entry else { return completionHandler(request) }
        var next = Self.redirect(
            request, from: task.currentRequest?.url ?? response.url, secrets: entry.secrets)
        if response.statusCode == 307 || response.statusCode == 308 {
            next.httpMethod = entry.original.httpMethod
            if next.httpBody == nil { next.httpBody = entry.original.httpBody }
        }
        switch policy {
        case .never:
            completionHandler(nil)
        case let .follow(max) where entry.redirects > max:
            tracked.withLock { $0[task.taskIdentifier]?.tooMany = true }
            completionHandler(nil)
        case .follow:
            completionHandler(next)
        case let .custom(decide):
            completionHandler(decide(response, next))
        }
    }

    /// `request` without secret headers when it goes to another origin than `previous`.
    static func redirect(_ request: URLRequest, from previous: URL?, secrets: Redaction) -> URLRequest {
        guard let previous, let next = request.url, !sameOrigin(previous, next) else { return request }
        var stripped = request
        for name in (request.allHTTPHeaderFields ?? [:]).keys where secrets.isSecret(header: name) {
            stripped.setValue(nil, forHTTPHeaderField: name)
        }
        return stripped
    }

    static func sameOrigin(_ a: URL, _ b: URL) -> Bool {
        a.scheme?.lowercased() == b.scheme?.lowercased() && a.host?.lowercased() == b.host?.lowercased()
            && effectivePort(a) == effectivePort(b)
    }

    private static func effectivePort(_ url: URL) -> Int? {
        url.port
            ?? (url.scheme?.lowercased() == "https" ? 443 : url.scheme?.lowercased() == "http" ? 80 : nil)
    }
}
