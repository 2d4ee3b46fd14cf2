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

    /// Whether a 3xx (with its body) may be the answer: a policy that stops at some redirects.
    var mayAnswerWithARedirect: Bool {
        if case .follow = self { return false }
        return true
    }
}

/// A redirect that SwiftyService does not follow: one to a scheme other than http or https (`file:`,
/// `gopher:`, `ftp:`…). It reaches the caller as ``ServiceError/transport(_:underlying:attempts:)``.
public struct RedirectRefused: Error, CustomStringConvertible {
    /// The `Location` the server sent (at most 1,000 characters of it).
    public let location: String
    /// The refused scheme, as written; `nil` when the location has none that can be read.
    public let scheme: String?

    init(location: String, scheme: String?) {
        self.location = location.abbreviatedURL
        self.scheme = scheme
    }

    /// `the redirect to 'file:///etc/passwd' was refused: only http and https are followed`
    public var description: String {
        "the redirect to '\(location)' was refused: only http and https are followed"
    }
}

/// Redirect decisions, for backends that follow redirects themselves (`CurlBackend`, an adapter for a
/// library that can be told not to follow): the same rules as ``URLSessionBackend``.
extension RedirectPolicy {
    /// What to do after a redirect.
    public enum Step: Sendable {
        /// Send this request next.
        case follow(URLRequest)
        /// Answer with the redirect response itself.
        case stop
        /// One redirect too many: fail with `URLError(.httpTooManyRedirects)`.
        case tooMany
        /// A redirect that is never followed (to a scheme other than http or https): fail with this.
        case refuse(RedirectRefused)
    }

    /// The step after `response` redirected `sent`, to the `proposed` next request (the platform's, or
    /// ``proposedRequest(after:sent:)``), as the `redirects`-th redirect. Secrets are dropped when the
    /// next request leaves the origin; a 307 or 308 keeps the method and the body.
    public func step(
        after response: HTTPURLResponse, sent: URLRequest, proposed: URLRequest, secrets: Redaction,
        redirects: Int
    ) -> Step {
        // The Location as the server wrote it: a platform may have rewritten a `file:` one into an http URL.
        let location = response.value(forHTTPHeaderField: "Location")
        if let location, let target = URL(string: location, relativeTo: sent.url ?? response.url),
            !TransportRules.allows(scheme: target.scheme)
        {
            return .refuse(RedirectRefused(location: location, scheme: target.scheme))
        }
        var next = Self.stripping(proposed, from: sent.url ?? response.url, secrets: secrets)
        if response.statusCode == 307 || response.statusCode == 308 {
            next.httpMethod = sent.httpMethod
            next.httpBody = sent.httpBody
        }
        let decided: URLRequest?
        switch self {
        case .never: return .stop
        case let .follow(max):
            guard redirects <= max else { return .tooMany }
            decided = next
        case let .custom(decide): decided = decide(response, next)
        }
        guard var decided else { return .stop }
        guard let url = decided.url, TransportRules.allows(scheme: url.scheme) else {
            return .refuse(
                RedirectRefused(
                    location: decided.url?.absoluteString ?? location ?? "", scheme: decided.url?.scheme))
        }
        if let scheme = url.scheme, scheme.contains(where: \.isUppercase),
            var components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        {
            components.scheme = scheme.lowercased()
            decided.url = components.url ?? url
        }
        return .follow(decided)
    }

    /// The step after `response` redirected `sent` as the `redirects`-th redirect of `request`: its secrets
    /// dropped across origins, its realm's cookies kept from the response and sent to the next URL.
    /// Backends that follow redirects themselves call this for every hop.
    public func step(
        after response: HTTPURLResponse, sent: URLRequest, proposed: URLRequest, for request: BackendRequest,
        redirects: Int
    ) -> Step {
        step(
            after: response, setCookieLines: nil, sent: sent, proposed: proposed, for: request,
            redirects: redirects)
    }

    /// ``step(after:sent:proposed:for:redirects:)`` for a backend that read the response's `Set-Cookie`
    /// lines one by one (`setCookieLines`), which the realm's jar then gets apart.
    func step(
        after response: HTTPURLResponse, setCookieLines: [String]?, sent: URLRequest, proposed: URLRequest,
        for request: BackendRequest, redirects: Int
    ) -> Step {
        request.cookieJar?.keep(
            lines: setCookieLines,
            orJoined: setCookieLines == nil ? response.value(forHTTPHeaderField: "Set-Cookie") : nil,
            from: response.url ?? sent.url)
        let step = step(
            after: response, sent: sent, proposed: proposed, secrets: request.redaction, redirects: redirects)
        if let reports = request.reports, case let .follow(next) = step, let from = sent.url ?? response.url,
            let to = next.url
        {
            reports.redirected(from: from, to: to, statusCode: response.statusCode)
        }
        guard case var .follow(next) = step, request.cookieJar != nil else { return step }
        next.setValue(request.cookieHeader(forHopTo: next, from: sent.url), forHTTPHeaderField: "Cookie")
        return .follow(next)
    }

    /// The request a browser sends after `response` to `sent`: to the resolved `Location`, as GET without a
    /// body after a 303 (or a 301/302 to a POST), as before after a 307/308; `nil` when it is no redirect.
    public static func proposedRequest(after response: HTTPURLResponse, sent: URLRequest) -> URLRequest? {
        guard [301, 302, 303, 307, 308].contains(response.statusCode),
            let location = response.value(forHTTPHeaderField: "Location"),
            let target = URL(string: location, relativeTo: sent.url)?.absoluteURL
        else { return nil }
        var next = sent
        next.url = target
        let method = sent.httpMethod ?? "GET"
        let becomesGET =
            (response.statusCode == 303 && method != "HEAD")
            || ((response.statusCode == 301 || response.statusCode == 302) && method == "POST")
        if becomesGET {
            next.httpMethod = "GET"
            next.httpBody = nil
            next.setValue(nil, forHTTPHeaderField: "Content-Type")
            next.setValue(nil, forHTTPHeaderField: "Content-Length")
        }
        return next
    }

    /// `request` without secret headers when it goes to another origin than `previous`.
    package static func stripping(_ request: URLRequest, from previous: URL?, secrets: Redaction)
        -> URLRequest
    {
        guard let previous, let next = request.url, !sameOrigin(previous, next) else { return request }
        var stripped = request
        for name in (request.allHTTPHeaderFields ?? [:]).keys where secrets.isSecret(header: name) {
            stripped.setValue(nil, forHTTPHeaderField: name)
        }
        return stripped
    }

    /// Same scheme, host and port (the default port when none is written).
    package static func sameOrigin(_ a: URL, _ b: URL) -> Bool {
        a.scheme?.lowercased() == b.scheme?.lowercased() && a.host?.lowercased() == b.host?.lowercased()
            && effectivePort(a) == effectivePort(b)
    }

    private static func effectivePort(_ url: URL) -> Int? {
        url.port
            ?? (url.scheme?.lowercased() == "https" ? 443 : url.scheme?.lowercased() == "http" ? 80 : nil)
    }
}
