import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a stored response may be used for now, by its directives and the request's (RFC 9111 §4.2,
/// §5.2; RFC 5861).
struct Reuse {
    /// Fresh, and neither side asks for revalidation: serve it.
    let isFresh: Bool
    /// Stale, but the request's `max-stale` accepts it.
    let mayServeStale: Bool
    /// Stale within `stale-while-revalidate`: serve it and revalidate behind it.
    let mayServeWhileRevalidating: Bool
    /// Stale within `stale-if-error` (the response's or the request's): serve it if revalidation fails.
    let mayServeOnError: Bool
    /// Fresh by its own lifetime and `immutable` (RFC 8246): a reload need not revalidate it.
    let isImmutableAndFresh: Bool

    init(_ entry: CacheEntry, request: CacheControl, now: Date) {
        let control = entry.summary.control
        let age = entry.age(at: now)
        let lifetime = entry.summary.lifetime
        let mustAsk = control.noCache || request.noCache
        let youngEnoughForTheRequest = request.maxAge.map { age < $0 } ?? true
        isFresh = !mustAsk && youngEnoughForTheRequest && age + (request.minFresh ?? 0) < lifetime
        // no-cache and must-revalidate forbid serving stale responses, whatever else allows it (§4.2.4).
        let mayBeStale = !mustAsk && !control.mustRevalidate && youngEnoughForTheRequest
        let staleness = age - lifetime
        func within(_ window: TimeInterval?) -> Bool { mayBeStale && window.map { staleness <= $0 } == true }
        mayServeStale = within(request.maxStale)
        mayServeWhileRevalidating = within(control.staleWhileRevalidate)
        mayServeOnError = within(control.staleIfError ?? request.staleIfError)
        isImmutableAndFresh = control.immutable && !control.noCache && age < lifetime
    }
}

extension CacheMiddleware {
    /// The app's own conditional request: a 304 from the cache when a fresh stored response satisfies it
    /// (RFC 9111 §4.3.2); otherwise the server's answer as it is — its 304 is handed back, never stored,
    /// and freshens the stored response it names (§4.3.4).
    func answerConditional(
        _ request: URLRequest, fresh: CacheEntry?, stored: CacheEntry?, _ next: MiddlewareNext
    )
        async throws -> Response
    {
        if let fresh, fresh.satisfies(request) { return fresh.notModified(for: request, now: cache.now()) }
        let requestTime = cache.now()
        let response = try await next(Self.bypassingPlatformCache(request))
        if response.statusCode == 304 {
            if let stored, let etag = response.header("ETag"), stored.headerFields.value(for: "ETag") == etag,
                !etag.hasPrefix("W/")
            {
                cache.store(
                    stored.revalidated(by: response, requestTime: requestTime, responseTime: cache.now()))
            }
        } else {
            store(response, for: request, requestTime: requestTime)
        }
        return response
    }
}

extension CacheMiddleware {
    /// Stores a POST's answer as its URL's for later GET and HEAD requests when RFC 9110 §9.3.3 allows it:
    /// explicit freshness, and a `Content-Location` that names the URL posted to.
    func storeForLaterGETs(_ response: Response, postedTo request: URLRequest, requestTime: Date) {
        guard let url = request.url,
            Freshness.isReusableForGETs(
                status: response.statusCode, response: HeaderFields(response.allHeaders),
                request: HeaderFields(request.allHTTPHeaderFields ?? [:]), postedTo: url)
        else { return }
        var get = request
        get.httpMethod = "GET"
        get.httpBody = nil
        cache.store(
            CacheEntry(request: get, response: response, requestTime: requestTime, responseTime: cache.now()))
    }
}

extension CacheEntry {
    /// Whether the app's `If-None-Match` (or, without one, `If-Modified-Since`) is satisfied by this stored
    /// response, so that the answer is 304 (RFC 9110 §13.1.2, §13.1.3); never with other preconditions.
    func satisfies(_ request: URLRequest) -> Bool {
        guard status == 200,
            ["If-Match", "If-Unmodified-Since", "If-Range"].allSatisfy({
                request.value(forHTTPHeaderField: $0) == nil
            })
        else { return false }
        let fields = headerFields
        if let noneMatch = request.value(forHTTPHeaderField: "If-None-Match") {
            if noneMatch.trimmingCharacters(in: .whitespaces) == "*" { return true }
            guard let etag = fields.value(for: "ETag").map(Self.opaqueTag) else { return false }
            return noneMatch.split(separator: ",").contains { Self.opaqueTag(String($0)) == etag }
        }
        guard
            let since = request.value(forHTTPHeaderField: "If-Modified-Since").flatMap({
                HTTPDate.parseForCache($0)
            }
            ),
            let modified = (fields.value(for: "Last-Modified") ?? fields.value(for: "Date"))
                .flatMap({ HTTPDate.parseForCache($0) })
        else { return false }
        return modified <= since
    }

    /// An entity tag for the weak comparison: without `W/` and surrounding spaces.
    private static func opaqueTag(_ tag: String) -> String {
        let trimmed = tag.trimmingCharacters(in: .whitespaces)
        return trimmed.hasPrefix("W/") ? String(trimmed.dropFirst(2)) : trimmed
    }

    /// A 304 for this stored response, with the fields RFC 9110 §15.4.5 asks of one and an `Age`.
    func notModified(for request: URLRequest, now: Date) -> Response {
        let kept: Set<String> = [
            "cache-control", "content-location", "date", "etag", "expires", "vary", "last-modified",
        ]
        var headers = headers.filter { kept.contains($0.key.lowercased()) }
        headers["Age"] = String(Int(min(age(at: now), Freshness.maxDeltaSeconds)))
        var response = Response(request: request, statusCode: 304, headers: headers)
        response.source = .cache
        return response
    }

    /// A 206 from this complete stored response for a single `bytes=` range it can satisfy (RFC 9110
    /// §14.2); `nil` for anything else, which then goes to the server.
    func partial(for request: URLRequest, now: Date) -> Response? {
        guard status == 200, key.hasPrefix("GET "), request.value(forHTTPHeaderField: "If-Range") == nil,
            let range = request.value(forHTTPHeaderField: "Range")?.trimmingCharacters(in: .whitespaces),
            range.hasPrefix("bytes="), !body.isEmpty
        else { return nil }
        let spec = range.dropFirst("bytes=".count).trimmingCharacters(in: .whitespaces)
        let parts = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false).map(
            String.init)
        guard parts.count == 2, !spec.contains(",") else { return nil }
        let total = body.count
        let first: Int
        let last: Int
        if parts[0].isEmpty {
            guard let suffix = Int(parts[1]), suffix > 0 else { return nil }
            first = max(total - suffix, 0)
            last = total - 1
        } else {
            guard let start = Int(parts[0]), start < total, parts[1].isEmpty || Int(parts[1]) != nil else {
                return nil
            }
            first = start
            last = min(Int(parts[1]) ?? total - 1, total - 1)
            guard last >= first else { return nil }
        }
        var response = self.response(for: request, source: .cache, now: now)
        var headers = response.allHeaders.filter { !HeaderFields.namesMatch($0.key, "Content-Length") }
        headers["Content-Range"] = "bytes \(first)-\(last)/\(total)"
        headers["Content-Length"] = String(last - first + 1)
        response = Response(
            request: request, statusCode: 206, headers: headers, data: Data(body[first...last]))
        response.source = .cache
        return response
    }
}
