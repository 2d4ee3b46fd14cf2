import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Cookies on a request's way out and an answer's way in, for a realm that keeps them — the same on every
/// backend, because no backend handles cookies itself: the pipeline does it for each attempt, and
/// ``RedirectPolicy/step(after:sent:proposed:for:redirects:)`` for each redirect a backend follows.
extension BackendRequest {
    /// Puts the jar's cookies for the request's URL in its `Cookie` header, after the one the request has
    /// (its values win on a name clash); nothing without a jar.
    mutating func addCookies() {
        guard let jar = cookieJar, let url = urlRequest.url else { return }
        explicitCookies = urlRequest.value(forHTTPHeaderField: "Cookie")
        urlRequest.setValue(
            jar.cookieHeader(for: url, merging: explicitCookies), forHTTPHeaderField: "Cookie")
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
    /// Keeps what a response from `url` sets in its (possibly several, comma-joined) `Set-Cookie` lines.
    func keep(_ setCookie: String?, from url: URL?) {
        guard let setCookie, let url else { return }
        store(setCookieHeaders: CookieJar.splitCombinedSetCookie(setCookie), from: url)
    }
}

extension Response {
    /// Keeps in `jar`, when there is one, what this response sets.
    func keepCookies(in jar: CookieJar?) {
        jar?.keep(header("Set-Cookie"), from: response.url ?? request.url)
    }
}
