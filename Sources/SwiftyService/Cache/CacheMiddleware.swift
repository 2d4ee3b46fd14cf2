import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Applies a request's `URLRequest.CachePolicy` with an ``HTTPCache``; innermost in the chain but for
/// coalescing, so that a hit never reaches the backend.
struct CacheMiddleware: Middleware {
    let cache: HTTPCache
    /// The realm's and endpoint's middleware outside the cache: a background revalidation passes through
    /// them again (authentication, logging, retries), as a request of its own would.
    var outer: [any Middleware] = []

    func intercept(_ request: URLRequest, context: RequestContext, next: MiddlewareNext) async throws
        -> Response
    {
        let response = try await answer(request, context, next)
        switch response.source {
        case .cache: context.events?.emit(.cacheHit)
        case .revalidated: context.events?.emit(.cacheRevalidated)
        case .network: break
        }
        return response
    }

    /// The stored answer, the server's, or the stored one the server confirmed.
    private func answer(_ request: URLRequest, _ context: RequestContext, _ next: MiddlewareNext) async throws
        -> Response
    {
        let method = request.httpMethod ?? "GET"
        guard method == "GET" || method == "HEAD" else {
            let requestTime = cache.now()
            let response = try await next(Self.bypassingPlatformCache(request))
            if (200..<400).contains(response.statusCode), let url = request.url {
                invalidate(url, after: response)
                if method == "POST" {
                    storeForLaterGETs(response, postedTo: request, requestTime: requestTime)
                }
            }
            return response
        }
        let requestFields = CacheRequestFields(request)
        let requestControl = CacheControl(requestFields.cacheControl)
        let stored =
            requestControl.noStore ? nil : cache.entry(for: request, method: method, fields: requestFields)
        if let hit = immediateAnswer(request, requestFields, requestControl, stored) { return hit }
        switch request.cachePolicy {
        case .returnCacheDataElseLoad:
            return try await load(request, next)
        case .returnCacheDataDontLoad:
            throw URLError(.resourceUnavailable)
        case .reloadIgnoringLocalCacheData:
            return try await load(request, next)
        case .reloadIgnoringLocalAndRemoteCacheData:
            var request = request
            request.setValue("no-cache", forHTTPHeaderField: "Cache-Control")
            request.setValue("no-cache", forHTTPHeaderField: "Pragma")
            return try await load(request, next)
        case .reloadRevalidatingCacheData:
            if let stored, Reuse(stored, request: requestControl, now: cache.now()).isImmutableAndFresh {
                return stored.response(for: request, source: .cache, now: cache.now())
            }
            let reload = Self.reloading(request)
            guard let stored else { return try await load(reload, next) }
            return try await revalidate(stored, reload, next)
        default:
            return try await followingTheProtocol(
                request, requestFields, stored: stored, requestControl, context, next)
        }
    }

    /// What the cache answers on its own, at once: a stored response that the policy and its freshness let
    /// it serve as it is, with nothing to send or revalidate; `nil` when the request must go on. The
    /// pipeline asks before it makes a task for the chain, so that a hit costs less than a stub's answer.
    func immediateAnswer(to request: URLRequest) -> Response? {
        let method = request.httpMethod ?? "GET"
        guard method == "GET" || method == "HEAD" else { return nil }
        let requestFields = CacheRequestFields(request)
        let requestControl = CacheControl(requestFields.cacheControl)
        let stored =
            requestControl.noStore ? nil : cache.entry(for: request, method: method, fields: requestFields)
        return immediateAnswer(request, requestFields, requestControl, stored)
    }

    private func immediateAnswer(
        _ request: URLRequest, _ requestFields: CacheRequestFields, _ requestControl: CacheControl,
        _ stored: CacheEntry?
    ) -> Response? {
        guard let stored else { return nil }
        let now = cache.now()
        switch request.cachePolicy {
        case .returnCacheDataElseLoad, .returnCacheDataDontLoad: break
        case .useProtocolCachePolicy:
            guard !requestFields.hasRange, !requestFields.isConditional else { return nil }
            let reuse = Reuse(stored, request: requestControl, now: now)
            guard reuse.isFresh || reuse.mayServeStale else { return nil }
        default: return nil
        }
        return stored.response(for: request, source: .cache, now: now)
    }

    /// `.useProtocolCachePolicy`: RFC 9111 and RFC 5861, with the request's own directives.
    private func followingTheProtocol(
        _ request: URLRequest, _ requestFields: CacheRequestFields, stored: CacheEntry?,
        _ requestControl: CacheControl,
        _ context: RequestContext, _ next: MiddlewareNext
    ) async throws -> Response {
        let now = cache.now()
        let reuse = stored.map { Reuse($0, request: requestControl, now: now) }
        if requestFields.hasRange {
            if let stored, reuse?.isFresh == true, let partial = stored.partial(for: request, now: now) {
                return partial
            }
            return try await next(Self.bypassingPlatformCache(request))
        }
        if requestFields.isConditional {
            return try await answerConditional(
                request, fresh: reuse?.isFresh == true ? stored : nil, stored: stored, next)
        }
        guard let stored, let reuse else {
            if requestControl.onlyIfCached { return Self.gatewayTimeout(request) }
            return try await load(request, next)
        }
        if reuse.isFresh || reuse.mayServeStale {
            return stored.response(for: request, source: .cache, now: now)
        }
        if reuse.mayServeWhileRevalidating {
            revalidateInBackground(stored, request, context, next)
            return stored.response(for: request, source: .cache, now: now)
        }
        if requestControl.onlyIfCached { return Self.gatewayTimeout(request) }
        do {
            let response = try await revalidate(stored, request, next)
            if [500, 502, 503, 504].contains(response.statusCode), reuse.mayServeOnError {
                return stored.response(for: request, source: .cache, now: cache.now())
            }
            return response
        } catch  where reuse.mayServeOnError && !Task.isCancelled {
            return stored.response(for: request, source: .cache, now: cache.now())
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
    func revalidate(_ stored: CacheEntry, _ request: URLRequest, _ next: MiddlewareNext) async throws
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
        var answer = refreshed.response(for: request, source: .revalidated, now: cache.now())
        answer.attempts = response.attempts
        return answer
    }

    /// Revalidates `stored` in a task of its own, through the rest of the chain, unless another caller's
    /// revalidation of the same variant is under way already.
    private func revalidateInBackground(
        _ stored: CacheEntry, _ request: URLRequest, _ context: RequestContext, _ next: MiddlewareNext
    ) {
        guard cache.beginBackgroundRevalidation(of: stored) else { return }
        let throughCache = MiddlewareNext { request in try await revalidate(stored, request, next) }
        let chain = outer.reversed().reduce(throughCache) { inner, middleware in
            MiddlewareNext { request in try await middleware.intercept(request, context: context, next: inner)
            }
        }
        Task {
            defer { cache.endBackgroundRevalidation(of: stored) }
            // A streamed call's revalidation has no reader: it reads the new body itself, for the store.
            let body = (try? await chain(request))?.arrivingBody
            _ = try? await body?.collect(limit: cache.largestBody)
        }
    }

    func store(_ response: Response, for request: URLRequest, requestTime: Date) {
        let requestHeaders = HeaderFields(request.allHTTPHeaderFields ?? [:])
        let responseHeaders = HeaderFields(response.allHeaders)
        guard
            Freshness.isStorable(
                method: request.httpMethod ?? "GET", status: response.statusCode, request: requestHeaders,
                response: responseHeaders)
        else { return }
        guard let body = response.arrivingBody else {
            return cache.store(
                CacheEntry(
                    request: request, response: response, requestTime: requestTime, responseTime: cache.now()))
        }
        // A stream is stored once its body has arrived whole, within the cache's room: never a truncated one.
        let cache = cache
        body.whenWhole(upTo: cache.largestBody) { data in
            cache.store(
                CacheEntry(
                    request: request, response: response.whole(data), requestTime: requestTime,
                    responseTime: cache.now()))
        }
    }

    /// After an unsafe method succeeded: the target URL and the same-origin `Location` and
    /// `Content-Location` it names are stale now (RFC 9111 §4.4).
    private func invalidate(_ url: URL, after response: Response) {
        cache.invalidate(url)
        for name in ["Location", "Content-Location"] {
            guard let value = response.header(name),
                let other = URL(string: value, relativeTo: url)?.absoluteURL,
                other.scheme == url.scheme, other.host == url.host, other.port == url.port
            else { continue }
            cache.invalidate(other)
        }
    }

    /// A reload's request, which asks caches on the way to revalidate too (`Cache-Control: max-age=0`, as a
    /// browser's reload and fetch's `no-cache` mode send), unless it says something of its own.
    static func reloading(_ request: URLRequest) -> URLRequest {
        guard request.value(forHTTPHeaderField: "Cache-Control") == nil else { return request }
        var request = request
        request.setValue("max-age=0", forHTTPHeaderField: "Cache-Control")
        return request
    }

    /// The request as the platform should send it: never from or into URLSession's own cache.
    static func bypassingPlatformCache(_ request: URLRequest) -> URLRequest {
        var request = request
        request.cachePolicy = .reloadIgnoringLocalCacheData
        return request
    }

    /// `only-if-cached` with nothing usable stored: 504 (RFC 9111 §5.2.1.7).
    static func gatewayTimeout(_ request: URLRequest) -> Response {
        var response = Response(request: request, statusCode: 504)
        response.source = .cache
        return response
    }
}
