import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Applies a request's `URLRequest.CachePolicy` with an ``HTTPCache``; innermost in the chain but for
/// coalescing, so that a hit never reaches the backend.
struct CacheMiddleware: Middleware {
    let cache: HTTPCache

    func intercept(_ request: URLRequest, context: RequestContext, next: MiddlewareNext) async throws
        -> Response
    {
        let method = request.httpMethod ?? "GET"
        guard method == "GET" || method == "HEAD" else {
            let response = try await next(Self.bypassingPlatformCache(request))
            if (200..<400).contains(response.statusCode), let url = request.url { cache.invalidate(url) }
            return response
        }
        let requestControl = CacheControl(request.value(forHTTPHeaderField: "Cache-Control"))
        let stored = requestControl.noStore ? nil : cache.entry(for: request)
        switch request.cachePolicy {
        case .returnCacheDataElseLoad:
            if let stored { return stored.response(for: request, source: .cache) }
            return try await load(request, next)
        case .returnCacheDataDontLoad:
            if let stored { return stored.response(for: request, source: .cache) }
            throw URLError(.resourceUnavailable)
        case .reloadIgnoringLocalCacheData:
            return try await load(request, next)
        case .reloadIgnoringLocalAndRemoteCacheData:
            var request = request
            request.setValue("no-cache", forHTTPHeaderField: "Cache-Control")
            request.setValue("no-cache", forHTTPHeaderField: "Pragma")
            return try await load(request, next)
        case .reloadRevalidatingCacheData:
            guard let stored else { return try await load(request, next) }
            return try await revalidate(stored, request, next)
        default:
            guard let stored else { return try await load(request, next) }
            let headers = stored.headerFields
            let control = CacheControl(headers.value(for: "Cache-Control"))
            let age = Freshness.age(
                headers: headers, requestTime: stored.requestTime, responseTime: stored.responseTime,
                now: cache.now())
            let lifetime = min(
                Freshness.lifetime(status: stored.status, headers: headers),
                requestControl.maxAge ?? .infinity)
            if age < lifetime, !control.noCache, !requestControl.noCache {
                return stored.response(for: request, source: .cache)
            }
            return try await revalidate(stored, request, next)
        }
    }

    /// Sends the request and stores what may be stored.
    private func load(_ request: URLRequest, _ next: MiddlewareNext) async throws -> Response {
        let requestTime = cache.now()
        let response = try await next(Self.bypassingPlatformCache(request))
        store(response, for: request, requestTime: requestTime)
        return response
    }

    /// Asks the server whether `stored` is still good, with its validators; a 304 refreshes and serves it.
    private func revalidate(_ stored: CacheEntry, _ request: URLRequest, _ next: MiddlewareNext) async throws
        -> Response
    {
        let headers = stored.headerFields
        let etag = headers.value(for: "ETag")
        let lastModified = headers.value(for: "Last-Modified")
        guard etag != nil || lastModified != nil else { return try await load(request, next) }
        var conditional = Self.bypassingPlatformCache(request)
        if let etag { conditional.setValue(etag, forHTTPHeaderField: "If-None-Match") }
        if let lastModified { conditional.setValue(lastModified, forHTTPHeaderField: "If-Modified-Since") }
        let requestTime = cache.now()
        let response = try await next(conditional)
        guard response.statusCode == 304 else {
            store(response, for: request, requestTime: requestTime)
            return response
        }
        let refreshed = stored.revalidated(by: response, requestTime: requestTime, responseTime: cache.now())
        cache.store(refreshed)
        var answer = refreshed.response(for: request, source: .revalidated)
        answer.attempts = response.attempts
        return answer
    }

    private func store(_ response: Response, for request: URLRequest, requestTime: Date) {
        let requestHeaders = HeaderFields(request.allHTTPHeaderFields ?? [:])
        var responseHeaders = HeaderFields()
        for case let (name as String, value as String) in response.response.allHeaderFields {
            responseHeaders.set(name, value)
        }
        guard
            Freshness.isStorable(
                method: request.httpMethod ?? "GET", status: response.statusCode, request: requestHeaders,
                response: responseHeaders)
        else { return }
        cache.store(
            CacheEntry(
                request: request, response: response, requestTime: requestTime, responseTime: cache.now()))
    }

    /// The request as the platform should send it: never from or into URLSession's own cache.
    static func bypassingPlatformCache(_ request: URLRequest) -> URLRequest {
        var request = request
        request.cachePolicy = .reloadIgnoringLocalCacheData
        return request
    }
}
