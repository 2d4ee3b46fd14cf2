import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A named, shared, thread-safe container of request configuration: one per module or host.
///
/// ```swift
/// ServiceRealm.get("users")
///     .setBaseURL(URL(string: "https://api.example.com/v1")!)
///     .addHeaders(["Authorization": "Token …"])
///     .use(URLSessionBackend())
/// ```
///
/// Every configuration call returns the realm so calls chain. A request copies the realm's
/// ``configuration`` when it is built, so changing a realm never affects a request already made.
public final class ServiceRealm: Sendable, CustomStringConvertible {
    /// The key the realm is registered under.
    public let key: String
    private let state: Locked<RealmConfiguration>

    private static let registry = Locked<[String: ServiceRealm]>.make([:])

    /// The key of ``default``.
    public static let defaultKey = "default"

    /// `[.create: .post, .retrieve: .get, .update: .put, .destroy: .delete]`
    public static let defaultCRUDMap: CRUDMap = [
        .create: .post, .retrieve: .get, .update: .put, .destroy: .delete,
    ]

    private init(key: String) {
        self.key = key
        state = .make(RealmConfiguration())
    }

    /// The realm registered under `key`, created on first use; the same instance for the same key.
    public static func get(_ key: String) -> ServiceRealm {
        registry.withLock { realms in
            if let realm = realms[key] { return realm }
            let realm = ServiceRealm(key: key)
            realms[key] = realm
            return realm
        }
    }

    /// The realm an endpoint, or an unregistered ``Service``, uses when it names none.
    public static var `default`: ServiceRealm { ServiceRealm.get(defaultKey) }

    /// A copy of the realm's current configuration.
    public var configuration: RealmConfiguration { state.value }

    /// The base URL endpoint paths are appended to.
    public var baseURL: URL? { configuration.baseURL }

    /// The backend that sends this realm's requests; `URLSessionBackend.shared` unless one is set.
    public var backend: any NetworkBackend { configuration.backend }

    /// The request timeout in seconds (60 unless set).
    public var timeout: TimeInterval { configuration.timeout }

    /// `ServiceRealm("users")`
    public var description: String { "ServiceRealm(\"\(key)\")" }

    /// Changes the configuration in one step, so that readers never see half of a change.
    @discardableResult
    public func configure(_ change: (inout RealmConfiguration) -> Void) -> ServiceRealm {
        state.withLock { change(&$0) }
        return self
    }

    /// Removes every setting: headers, base URL, policies, map, timeout and backend.
    @discardableResult
    public func reset() -> ServiceRealm {
        configure { $0 = RealmConfiguration() }
    }

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
    /// however the server trickles. None by default; bounded like ``setTimeout(_:)``.
    @discardableResult
    public func setResourceTimeout(_ timeout: TimeInterval?) -> ServiceRealm {
        configure { $0.setResourceTimeout(timeout) }
    }

    /// Refuses response bodies larger than `bytes` with ``ResponseTooLarge``. None by default.
    @discardableResult
    public func setMaxResponseSize(_ bytes: Int?) -> ServiceRealm {
        configure { $0.setMaxResponseSize(bytes) }
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
