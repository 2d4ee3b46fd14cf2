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

/// The delegate of a ``URLSessionBackend``'s own session: applies its ``RedirectPolicy`` and turns
/// credential challenges into plain 401 answers.
final class SessionDelegate: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    /// How a task ended, as far as redirects and challenges go.
    enum Ending {
        case finished
        case tooManyRedirects
        /// A 307/308 to follow by sending this request anew (URLSession on Linux drops the body).
        case resend(URLRequest, redirects: Int)
        /// The server challenged for credentials: its 401 is the answer.
        case challenged(HTTPURLResponse)
    }

    private struct Tracked {
        let sent: URLRequest
        let secrets: Redaction
        var redirects: Int
        var ending = Ending.finished
    }

    private let policy: RedirectPolicy
    private let tracked = Locked<[Int: Tracked]>.make([:])

    init(_ policy: RedirectPolicy) {
        self.policy = policy
    }

    func track(_ task: URLSessionTask, request: URLRequest, secrets: Redaction, redirects: Int) {
        tracked.withLock {
            $0[task.taskIdentifier] = Tracked(sent: request, secrets: secrets, redirects: redirects)
        }
    }

    /// Forgets the task and says how it ended.
    func finish(_ task: URLSessionTask) -> Ending {
        tracked.withLock { $0.removeValue(forKey: task.taskIdentifier)?.ending } ?? .finished
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
        var next = Self.redirect(request, from: entry.sent.url ?? response.url, secrets: entry.secrets)
        let keepsBody = response.statusCode == 307 || response.statusCode == 308
        if keepsBody {
            next.httpMethod = entry.sent.httpMethod
            next.httpBody = entry.sent.httpBody
        }
        let decision: URLRequest?
        switch policy {
        case .never:
            decision = nil
        case let .follow(max) where entry.redirects > max:
            tracked.withLock { $0[task.taskIdentifier]?.ending = .tooManyRedirects }
            decision = nil
        case .follow:
            decision = next
        case let .custom(decide):
            decision = decide(response, next)
        }
        if let decision, keepsBody, decision.httpBody != nil {
            // Stop here and send the request again ourselves: following it, Linux would drop the body.
            tracked.withLock {
                $0[task.taskIdentifier]?.ending = .resend(decision, redirects: entry.redirects)
            }
            return completionHandler(nil)
        }
        completionHandler(decision)
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        let httpMethods = [
            NSURLAuthenticationMethodDefault, NSURLAuthenticationMethodHTTPBasic,
            NSURLAuthenticationMethodHTTPDigest,
            NSURLAuthenticationMethodNTLM, NSURLAuthenticationMethodNegotiate,
        ]
        guard httpMethods.contains(challenge.protectionSpace.authenticationMethod),
            let head = challenge.failureResponse as? HTTPURLResponse
        else { return completionHandler(.performDefaultHandling, nil) }
        // Credentials belong in the request (or a middleware); the challenge's 401 is the answer. Left to
        // its default handling, URLSession on Linux never finishes the task.
        tracked.withLock { $0[task.taskIdentifier]?.ending = .challenged(head) }
        completionHandler(.cancelAuthenticationChallenge, nil)
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
