import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Cookies on a request's way out and an answer's way in, for a realm that keeps them — the same on every
/// backend, because no backend handles cookies itself: the pipeline does it for each attempt, and
/// ``RedirectPolicy/step(after:sent:proposed:for:redirects:)`` for each redirect a backend follows.
extension BackendRequest {
    /// Puts the jar's cookies for the request's URL in its `Cookie` header, after the one the request has
    /// (its values win on a name clash); nothing without a jar. The header then goes through the check every
    /// header went through before (``TransportRules``): nothing the jar holds goes out unchecked.
    /// - Throws: ``ServiceError/invalidRequest(_:method:url:)`` for a `Cookie` header that may not be sent.
    mutating func addCookies() throws(ServiceError) {
        guard let jar = cookieJar, let url = urlRequest.url else { return }
        explicitCookies = urlRequest.value(forHTTPHeaderField: "Cookie")
        let header = jar.cookieHeader(for: url, merging: explicitCookies)
        try Self.checkCookieHeader(header, of: urlRequest)
        urlRequest.setValue(header, forHTTPHeaderField: "Cookie")
    }

    /// Refuses a `Cookie` header that no other header could be: one with a control character.
    static func checkCookieHeader(_ header: String?, of request: URLRequest) throws(ServiceError) {
        guard let header, !HeaderFields.isValidValue(header) else { return }
        throw .invalidRequest(
            .invalidHeaderValue(name: "Cookie"), method: HTTPMethod(rawValue: request.httpMethod ?? "GET"),
            url: (request.url?.absoluteString ?? "?").abbreviatedURL)
    }

    /// The `Cookie` header of a redirect's next hop: the request's own cookies while it stays on the origin
    /// (a hop away from it drops them as secrets), and the jar's for the new URL.
    func cookieHeader(forHopTo next: URLRequest, from previous: URL?) -> String? {
        guard let jar = cookieJar, let url = next.url else { return next.value(forHTTPHeaderField: "Cookie") }
        let sameOrigin = previous.map { RedirectPolicy.sameOrigin($0, url) } ?? false
        return jar.cookieHeader(for: url, merging: sameOrigin ? explicitCookies : nil)
    }
}

extension CookieJar {
    /// Keeps what a response from `url` sets: its `Set-Cookie` lines one by one where the backend kept them
    /// apart (`lines`), as the jar takes them; otherwise the header's value, in which the backend joined them
    /// with ", " (URLSession on Linux), split again by a guess. Commas inside a cookie make that guess wrong.
    func keep(lines: [String]?, orJoined setCookie: String?, from url: URL?) {
        guard let url else { return }
        if let lines {
            if !lines.isEmpty { store(setCookieHeaders: lines, from: url) }
        } else if let setCookie {
            store(setCookieHeaders: CookieJar.splitCombinedSetCookie(setCookie), from: url)
        }
    }
}

extension Response {
    /// Keeps in `jar`, when there is one, what this response sets.
    func keepCookies(in jar: CookieJar?) {
        guard let jar else { return }
        // The lines are all there is to read where the backend kept them: no header lookup, and no join.
        jar.keep(
            lines: setCookieLines, orJoined: setCookieLines == nil ? header("Set-Cookie") : nil, from: url)
    }
}
