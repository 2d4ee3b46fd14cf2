import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Cookies on a request's way out and an answer's way in, for a realm that keeps them — the same on every
/// backend, because no backend handles cookies itself: the pipeline does it for each attempt, and
/// ``RedirectPolicy/step(after:sent:proposed:for:redirects:)`` for each redirect a backend follows.
extension BackendRequest {
    /// The request with the jar's cookies for its URL in its `Cookie` header, after the one the request has
    /// (its values win on a name clash); unchanged without a jar.
    func withCookies() -> BackendRequest {
        guard let jar = cookieJar, let url = urlRequest.url else { return self }
        var request = self
        request.explicitCookies = urlRequest.value(forHTTPHeaderField: "Cookie")
        request.urlRequest.setValue(
            jar.cookieHeader(for: url, merging: request.explicitCookies), forHTTPHeaderField: "Cookie")
        return request
    }

    /// Keeps in the jar what a response from `url` sets.
    func keepCookies(_ setCookie: String?, from url: URL?) {
        guard let jar = cookieJar, let setCookie, let url else { return }
        jar.store(setCookieHeaders: CookieJar.splitCombinedSetCookie(setCookie), from: url)
    }

    /// The `Cookie` header of a redirect's next hop: the request's own cookies while it stays on the origin
    /// (a hop away from it drops them as secrets), and the jar's for the new URL.
    func cookieHeader(forHopTo next: URLRequest, from previous: URL?) -> String? {
        guard let jar = cookieJar, let url = next.url else { return next.value(forHTTPHeaderField: "Cookie") }
        let sameOrigin = previous.map { RedirectPolicy.sameOrigin($0, url) } ?? false
        return jar.cookieHeader(for: url, merging: sameOrigin ? explicitCookies : nil)
    }
}

extension Response {
    /// Keeps in the request's jar what this response sets.
    func keepCookies(for request: BackendRequest) {
        guard request.cookieJar != nil else { return }
        request.keepCookies(header("Set-Cookie"), from: response.url ?? self.request.url)
    }
}
