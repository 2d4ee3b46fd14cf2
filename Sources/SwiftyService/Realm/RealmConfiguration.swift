import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Everything a realm decides about its requests, as a value: a realm hands out a copy of it to every
/// request it builds, and a one-off ``SwiftyServiceProtocol/override(_:)`` layers a second one on top.
///
/// Its configuration methods carry the realm's names. A configuration created with `init()` is empty:
/// every setting falls through to the layer below (the realm, then the defaults).
public struct RealmConfiguration: Sendable {
    /// Every setting in one allocation, shared by copies until one of them changes: a request's snapshot
    /// of its realm costs one retain, however many settings there are.
    private final class Storage: @unchecked Sendable {
        var baseURL: URL? = nil
        var base: BaseURL? = nil
        var headers: HeaderFields = HeaderFields()
        var crudHeaders: [CRUDMethod: HeaderFields] = [:]
        var globalCachePolicy: URLRequest.CachePolicy? = nil
        var crudCachePolicies: [CRUDMethod: URLRequest.CachePolicy] = [:]
        var crudMapOverrides: CRUDMap = [:]
        var timeoutOverride: TimeInterval? = nil
        var resourceTimeout: TimeInterval? = nil
        var maxResponseSize: Int? = nil
        var backendOverride: (any NetworkBackend)? = nil
        var callbackQueue: DispatchQueue? = nil
        var redaction: Redaction = Redaction.default
        var middleware: [any Middleware] = []
        var validStatusCodes: StatusCodes? = nil
        var errorBody: ErrorBody? = nil
        var coalescer: Coalescer? = nil
        var cache: HTTPCache? = nil

        init() {}

        init(copying other: Storage) {
            baseURL = other.baseURL
            base = other.base
            headers = other.headers
            crudHeaders = other.crudHeaders
            globalCachePolicy = other.globalCachePolicy
            crudCachePolicies = other.crudCachePolicies
            crudMapOverrides = other.crudMapOverrides
            timeoutOverride = other.timeoutOverride
            resourceTimeout = other.resourceTimeout
            maxResponseSize = other.maxResponseSize
            backendOverride = other.backendOverride
            callbackQueue = other.callbackQueue
            redaction = other.redaction
            middleware = other.middleware
            validStatusCodes = other.validStatusCodes
            errorBody = other.errorBody
            coalescer = other.coalescer
            cache = other.cache
        }
    }

    private var storage = Storage()

    /// The storage, made unique first, for a change.
    private mutating func writable() -> Storage {
        if !isKnownUniquelyReferenced(&storage) { storage = Storage(copying: storage) }
        return storage
    }

    /// The base URL requests are built on, if one is set.
    public var baseURL: URL? { storage.baseURL }
    var base: BaseURL? {
        get { storage.base }
        set { writable().base = newValue }
    }
    var headers: HeaderFields {
        get { storage.headers }
        set { writable().headers = newValue }
    }
    var crudHeaders: [CRUDMethod: HeaderFields] {
        get { storage.crudHeaders }
        set { writable().crudHeaders = newValue }
    }
    var globalCachePolicy: URLRequest.CachePolicy? {
        get { storage.globalCachePolicy }
        set { writable().globalCachePolicy = newValue }
    }
    var crudCachePolicies: [CRUDMethod: URLRequest.CachePolicy] {
        get { storage.crudCachePolicies }
        set { writable().crudCachePolicies = newValue }
    }
    var crudMapOverrides: CRUDMap {
        get { storage.crudMapOverrides }
        set { writable().crudMapOverrides = newValue }
    }
    var timeoutOverride: TimeInterval? {
        get { storage.timeoutOverride }
        set { writable().timeoutOverride = newValue }
    }
    var backendOverride: (any NetworkBackend)? {
        get { storage.backendOverride }
        set { writable().backendOverride = newValue }
    }
    /// The longest a request may take in all, from sending to the last byte, retries included; `nil`
    /// (the default) sets no limit beyond ``timeout``, which only bounds silences.
    public var resourceTimeout: TimeInterval? { storage.resourceTimeout }
    /// The largest response body kept in memory, in bytes; `nil` (the default) sets no limit.
    public var maxResponseSize: Int? { storage.maxResponseSize }

    /// The queue completion closures run on; `nil` runs them wherever the backend answers.
    public var callbackQueue: DispatchQueue? { storage.callbackQueue }
    /// What logs and recordings must never show: the always-secret headers and those declared here.
    public var redaction: Redaction { storage.redaction }
    /// The middleware requests pass through, outermost first.
    public var middleware: [any Middleware] { storage.middleware }
    /// The statuses that count as success for endpoints that do not say; `nil` is 200–299.
    public var validStatusCodes: StatusCodes? { storage.validStatusCodes }
    var errorBody: ErrorBody? {
        get { storage.errorBody }
        set { writable().errorBody = newValue }
    }
    var coalescer: Coalescer? {
        get { storage.coalescer }
        set { writable().coalescer = newValue }
    }
    /// The HTTP cache the realm's GET and HEAD requests go through, if any.
    public var cache: HTTPCache? { storage.cache }

    /// The timeout when none is set: URLSession's own default.
    public static let defaultTimeout: TimeInterval = 60

    /// An empty configuration: nothing set, everything falls through to the layer below.
    public init() {}

    /// The request timeout in seconds.
    public var timeout: TimeInterval { timeoutOverride ?? Self.defaultTimeout }

    /// The backend that sends requests.
    public var backend: any NetworkBackend { backendOverride ?? URLSessionBackend.shared }

    /// The CRUD → HTTP mapping: ``ServiceRealm/defaultCRUDMap`` with this configuration's changes.
    public var crudMap: CRUDMap {
        crudMapOverrides.isEmpty
            ? ServiceRealm.defaultCRUDMap
            : ServiceRealm.defaultCRUDMap.merging(crudMapOverrides) { $1 }
    }

    /// The headers a request of `crudMethod` gets (global ones, then that CRUD method's), or the global ones.
    public func headers(for crudMethod: CRUDMethod? = nil) -> HTTPHeaderDictionary {
        var result = headers
        if let crudMethod, let specific = crudHeaders[crudMethod] { result.merge(specific) }
        return result.dictionary
    }

    /// The cache policy a request of `crudMethod` gets, or the global one.
    public func cachePolicy(for crudMethod: CRUDMethod? = nil) -> URLRequest.CachePolicy {
        crudMethod.flatMap { crudCachePolicies[$0] } ?? globalCachePolicy ?? .useProtocolCachePolicy
    }

    /// Sets the base URL that endpoint paths are appended to.
    public mutating func setBaseURL(_ url: URL) {
        writable().baseURL = url
        base = BaseURL(url)
    }

    /// Sets the request timeout in seconds; see ``ServiceRealm/setTimeout(_:)`` for the values it takes.
    public mutating func setTimeout(_ timeout: TimeInterval) {
        timeoutOverride = timeout
    }

    /// Bounds the whole of each request (a server that trickles a byte a second never trips ``timeout``).
    public mutating func setResourceTimeout(_ timeout: TimeInterval?) {
        writable().resourceTimeout = timeout
    }

    /// Refuses in-memory response bodies larger than `bytes` with ``ResponseTooLarge``.
    ///
    /// `CurlBackend` stops reading at once; URLSession on Linux reads ahead of its delegate, so a fast
    /// server's body may be in memory before the request fails.
    public mutating func setMaxResponseSize(_ bytes: Int?) {
        writable().maxResponseSize = bytes
    }

    /// Sends requests through `backend`.
    public mutating func use(_ backend: some NetworkBackend) {
        backendOverride = backend
    }

    /// Runs completion closures on `queue` (for example `.main`) instead of wherever the backend answers.
    public mutating func setCallbackQueue(_ queue: DispatchQueue?) {
        writable().callbackQueue = queue
    }

    /// Adds a middleware after (inside) the ones already added.
    public mutating func addMiddleware(_ middleware: some Middleware) {
        writable().middleware.append(middleware)
    }

    /// Sets the statuses that count as success for endpoints that do not declare their own.
    public mutating func setValidStatusCodes(_ codes: StatusCodes) {
        writable().validStatusCodes = codes
    }

    /// Decodes the bodies of unacceptable statuses into ``ServiceError/unacceptableStatusCode(_:errorBody:)``.
    public mutating func decodeErrorBodies(_ errorBody: ErrorBody) {
        self.errorBody = errorBody
    }

    /// Sends GET and HEAD requests through `cache`, which then carries out their cache policies; `nil`
    /// turns caching off.
    public mutating func useCache(_ cache: HTTPCache?) {
        writable().cache = cache
    }

    /// Lets identical GETs in flight at once (same URL and headers) share one request; each caller still
    /// gets its own result and can cancel alone.
    public mutating func coalesceIdenticalRequests(_ enabled: Bool = true) {
        coalescer = enabled ? (coalescer ?? Coalescer()) : nil
    }

    /// Declares headers and query keys whose values logs and recordings must never show.
    public mutating func declareSecrets(headers: [String] = [], queryKeys: [String] = []) {
        writable().redaction = redaction.union(Redaction(headers: headers, queryKeys: queryKeys))
    }

    /// Adds a header to every request; a header of the same name (in any case) is replaced.
    public mutating func addHeader(_ header: String, withValue value: String) {
        headers.set(header, value)
    }

    /// Adds headers to every request; headers of the same names (in any case) are replaced.
    public mutating func addHeaders(_ headers: HTTPHeaderDictionary) {
        self.headers.merge(HeaderFields(headers))
    }

    /// Adds a header to the requests of one CRUD method only.
    public mutating func addHeader(
        _ header: String, withValue value: String, specificForCRUDMethod crudMethod: CRUDMethod
    ) {
        crudHeaders[crudMethod, default: HeaderFields()].set(header, value)
    }

    /// Adds headers to the requests of one CRUD method only.
    public mutating func addHeaders(
        _ headers: HTTPHeaderDictionary, specificForCRUDMethod crudMethod: CRUDMethod
    ) {
        crudHeaders[crudMethod, default: HeaderFields()].merge(HeaderFields(headers))
    }

    /// Sets the cache policy of every request.
    public mutating func overrideGlobalCachePolicy(_ cachePolicy: URLRequest.CachePolicy) {
        globalCachePolicy = cachePolicy
    }

    /// Sets the cache policy of the requests of one CRUD method.
    public mutating func overrideCachePolicy(
        _ cachePolicy: URLRequest.CachePolicy, forCrudMethod method: CRUDMethod
    ) {
        crudCachePolicies[method] = cachePolicy
    }

    /// Changes the HTTP method of the CRUD methods `map` names; the others keep theirs.
    public mutating func overrideCrudMap(_ map: CRUDMap) {
        crudMapOverrides.merge(map) { $1 }
    }

    /// Sends one CRUD method as `httpMethod`.
    public mutating func overrideCrudMethod(_ method: CRUDMethod, withHTTPMethod httpMethod: HTTPMethod) {
        crudMapOverrides[method] = httpMethod
    }
}

/// A base URL split once, when it is set, into what paths are appended to and the query they keep.
struct BaseURL: Sendable {
    let url: URL
    /// Everything before the query and fragment, as given: what a request with no path goes to.
    let exact: String
    /// The same without trailing slashes: what a path is appended to, after one `/`.
    let prefix: String
    /// The base URL's own percent-encoded query, kept in front of a request's parameters.
    let query: Substring?
    /// Why no request can be built on this URL, if none can.
    let problem: ServiceError.InvalidRequestReason?

    init(_ url: URL) {
        self.url = url
        var string = Substring(url.absoluteString)
        // The scheme in lower case: `HTTP://` is as good as `http://`, and some transports take only the latter.
        if let scheme = url.scheme, scheme.contains(where: \.isUppercase), string.hasPrefix(scheme) {
            string = Substring(scheme.lowercased()) + string.dropFirst(scheme.count)
        }
        if let hash = string.firstIndex(of: "#") { string = string[..<hash] }
        if let mark = string.firstIndex(of: "?") {
            let query = string[string.index(after: mark)...]
            self.query = query.isEmpty ? nil : query
            string = string[..<mark]
        } else {
            self.query = nil
        }
        exact = String(string)
        while string.hasSuffix("/") { string = string.dropLast() }
        prefix = String(string)
        problem = Self.problem(with: url)
    }

    private static func problem(with url: URL) -> ServiceError.InvalidRequestReason? {
        guard let scheme = url.scheme else {
            return .malformedURL("the base URL '\(url.absoluteString)' has no scheme (write https://…)")
        }
        guard TransportRules.allows(scheme: scheme) else { return .unsupportedScheme(scheme) }
        if url.host?.isEmpty ?? true {
            return .malformedURL("the base URL '\(url.absoluteString)' has no host")
        }
        return nil
    }
}
