import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The realm's settings one call at a time, each returning the realm so that calls chain (iService's
/// style). Each is ``ServiceRealm/configure(_:)`` with the ``RealmConfiguration`` method of the same name.
extension ServiceRealm {
    /// Sets the base URL that endpoint paths are appended to.
    @discardableResult
    public func setBaseURL(_ url: URL) -> ServiceRealm {
        configure { $0.setBaseURL(url) }
    }

    /// Sends this realm's requests through `backend`, e.g. `.use(StubBackend())`.
    @discardableResult
    public func use(_ backend: some NetworkBackend) -> ServiceRealm {
        configure { $0.use(backend) }
    }

    /// Sets the request timeout in seconds (default 60).
    ///
    /// More than 10,000,000 s (about 116 days, `.infinity` included) counts as that; NaN, 0 or less fail
    /// each request with ``ServiceError/InvalidRequestReason/invalidTimeout(_:)``.
    @discardableResult
    public func setTimeout(_ timeout: TimeInterval) -> ServiceRealm {
        configure { $0.setTimeout(timeout) }
    }

    /// Bounds the whole of each request, retries included: `.timedOut` once `timeout` seconds have passed,
    /// however the server trickles. By default (`nil`) a buffered request gets 5 times ``timeout`` (300 s
    /// with the default 60 s; ``RealmConfiguration/defaultResourceTimeoutFactor``), and streams and transfers
    /// from or to a file get none; bounded like ``setTimeout(_:)``.
    @discardableResult
    public func setResourceTimeout(_ timeout: TimeInterval?) -> ServiceRealm {
        configure { $0.setResourceTimeout(timeout) }
    }

    /// Sets no deadline on the whole of each request, buffered ones included: `.setResourceTimeout(.unlimited)`.
    @discardableResult
    public func setResourceTimeout(_ none: NoLimit) -> ServiceRealm {
        configure { $0.setResourceTimeout(none) }
    }

    /// Refuses response bodies larger than `bytes` with ``ResponseTooLarge``, counted as decoded (after
    /// `Content-Encoding`). By default (`nil`) a body kept in memory may have 64 MiB
    /// (``RealmConfiguration/defaultMaxResponseSize``); streams and downloads to a file have no default.
    @discardableResult
    public func setMaxResponseSize(_ bytes: Int?) -> ServiceRealm {
        configure { $0.setMaxResponseSize(bytes) }
    }

    /// Keeps response bodies in memory whatever their size: `.setMaxResponseSize(.unlimited)`.
    @discardableResult
    public func setMaxResponseSize(_ none: NoLimit) -> ServiceRealm {
        configure { $0.setMaxResponseSize(none) }
    }

    /// Lets the realm's requests hold at most `limit` connections to one host at once; `nil` leaves it to the
    /// backend. See ``RealmConfiguration/setMaxConnectionsPerHost(_:)``.
    @discardableResult
    public func setMaxConnectionsPerHost(_ limit: Int?) -> ServiceRealm {
        configure { $0.setMaxConnectionsPerHost(limit) }
    }

    /// Sets the version of HTTP the realm's requests speak. See ``RealmConfiguration/setHTTPVersion(_:)``.
    @discardableResult
    public func setHTTPVersion(_ version: HTTPVersionPreference?) -> ServiceRealm {
        configure { $0.setHTTPVersion(version) }
    }

    /// Runs completion closures on `queue` (for example `.main`) instead of wherever the backend answers.
    @discardableResult
    public func setCallbackQueue(_ queue: DispatchQueue?) -> ServiceRealm {
        configure { $0.setCallbackQueue(queue) }
    }

    /// Adds a middleware after (inside) the ones already added: `.addMiddleware(.retry())`.
    @discardableResult
    public func addMiddleware(_ middleware: some Middleware) -> ServiceRealm {
        configure { $0.addMiddleware(middleware) }
    }

    /// Adds an observer told every event of every request of the realm: `.addObserver(EventHandler { … })`.
    @discardableResult
    public func addObserver(_ observer: some RequestObserver) -> ServiceRealm {
        configure { $0.addObserver(observer) }
    }

    /// Collects ``Response/metrics`` for the realm's requests (on while an observer watches).
    @discardableResult
    public func collectMetrics(_ collect: Bool = true) -> ServiceRealm {
        configure { $0.collectMetrics(collect) }
    }

    /// Sets the statuses that count as success for this realm's endpoints that do not declare their own.
    @discardableResult
    public func setValidStatusCodes(_ codes: StatusCodes) -> ServiceRealm {
        configure { $0.setValidStatusCodes(codes) }
    }

    /// Decodes the bodies of unacceptable statuses, e.g. `.decodeErrorBodies(.json(APIError.self))`.
    @discardableResult
    public func decodeErrorBodies(_ errorBody: ErrorBody) -> ServiceRealm {
        configure { $0.decodeErrorBodies(errorBody) }
    }

    /// Reads this realm's typed responses with `decoder`, e.g. one with the module's date strategy:
    /// `.setDecoder(decoder)`. An endpoint's own ``SwiftyServiceProtocol/decoder`` wins over it.
    @discardableResult
    public func setDecoder(_ decoder: JSONDecoder?) -> ServiceRealm {
        configure { $0.setDecoder(decoder) }
    }

    /// Sends GET and HEAD requests through `cache`, which then carries out their cache policies (global
    /// and per CRUD method) on every platform; `nil` turns caching off.
    @discardableResult
    public func useCache(_ cache: HTTPCache?) -> ServiceRealm {
        configure { $0.useCache(cache) }
    }

    /// Keeps cookies in `jar` (a new one in memory by default), RFC 6265's way: servers' cookies are sent
    /// back on later requests of this realm, and of every realm given the same jar; an explicit `Cookie`
    /// header is kept and wins on a name clash. A realm keeps no cookies unless it asks.
    @discardableResult
    public func useCookies(_ jar: CookieJar? = CookieJar()) -> ServiceRealm {
        configure { $0.useCookies(jar) }
    }

    /// Applies `policy` to every connection of this realm's requests: roots to trust, public keys to pin, a
    /// client certificate, a minimum TLS version. A backend that cannot carry out all of it refuses each
    /// request with ``ServiceError/InvalidRequestReason/unsupportedTLSPolicy(backend:missing:)``, sending
    /// nothing. `nil` goes back to the system's rules; so does `.override { $0.setTLSPolicy(nil) }` for one
    /// request.
    @discardableResult
    public func setTLSPolicy(_ policy: TLSPolicy?) -> ServiceRealm {
        configure { $0.setTLSPolicy(policy) }
    }

    /// Lets identical GETs in flight at once (same URL and headers) share one request.
    @discardableResult
    public func coalesceIdenticalRequests(_ enabled: Bool = true) -> ServiceRealm {
        configure { $0.coalesceIdenticalRequests(enabled) }
    }

    /// Declares headers and query keys whose values logs and recordings must never show, on top of
    /// `Authorization`, `Proxy-Authorization`, `Cookie` and `Set-Cookie`.
    @discardableResult
    public func declareSecrets(headers: [String] = [], queryKeys: [String] = []) -> ServiceRealm {
        configure { $0.declareSecrets(headers: headers, queryKeys: queryKeys) }
    }

    /// Adds a header to every request of the realm.
    @discardableResult
    public func addHeader(_ header: String, withValue value: String) -> ServiceRealm {
        configure { $0.addHeader(header, withValue: value) }
    }

    /// Adds headers to every request of the realm.
    @discardableResult
    public func addHeaders(_ headers: HTTPHeaderDictionary) -> ServiceRealm {
        configure { $0.addHeaders(headers) }
    }

    /// Adds a header to the requests of one CRUD method only.
    @discardableResult
    public func addHeader(
        _ header: String, withValue value: String, specificForCRUDMethod crudMethod: CRUDMethod
    ) -> ServiceRealm {
        configure { $0.addHeader(header, withValue: value, specificForCRUDMethod: crudMethod) }
    }

    /// Adds headers to the requests of one CRUD method only.
    @discardableResult
    public func addHeaders(_ headers: HTTPHeaderDictionary, specificForCRUDMethod crudMethod: CRUDMethod)
        -> ServiceRealm
    {
        configure { $0.addHeaders(headers, specificForCRUDMethod: crudMethod) }
    }

    /// Sets the cache policy of every request of the realm.
    @discardableResult
    public func overrideGlobalCachePolicy(_ cachePolicy: URLRequest.CachePolicy) -> ServiceRealm {
        configure { $0.overrideGlobalCachePolicy(cachePolicy) }
    }

    /// Sets the cache policy of the requests of one CRUD method.
    @discardableResult
    public func overrideCachePolicy(_ cachePolicy: URLRequest.CachePolicy, forCrudMethod method: CRUDMethod)
        -> ServiceRealm
    {
        configure { $0.overrideCachePolicy(cachePolicy, forCrudMethod: method) }
    }

    /// Changes the HTTP method of the CRUD methods `map` names; the others keep theirs.
    @discardableResult
    public func overrideCrudMap(_ map: CRUDMap) -> ServiceRealm {
        configure { $0.overrideCrudMap(map) }
    }

    /// Sends one CRUD method as `httpMethod`, e.g. `.overrideCrudMethod(.update, withHTTPMethod: .patch)`.
    @discardableResult
    public func overrideCrudMethod(_ method: CRUDMethod, withHTTPMethod httpMethod: HTTPMethod)
        -> ServiceRealm
    {
        configure { $0.overrideCrudMethod(method, withHTTPMethod: httpMethod) }
    }
}
