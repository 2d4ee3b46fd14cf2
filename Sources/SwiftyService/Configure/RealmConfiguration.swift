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
    /// One reference to immutable values: a request's snapshot of its realm is one retain.
    var settings = Settings()

    /// The timeout when none is set: URLSession's own default.
    public static let defaultTimeout: TimeInterval = 60

    /// The largest body a buffered request keeps in memory when the realm sets no limit: 64 MiB, far above any
    /// API response, far below what a hostile or broken server can send (a gzip bomb, an endless body).
    /// Applied to the body as decoded (after `Content-Encoding`). Raise it with `setMaxResponseSize(_:)`,
    /// lift it with `.unlimited`, or download large bodies to a file, which has no default limit.
    public static let defaultMaxResponseSize = HTTPLimits.defaultMaxResponseSize

    /// A buffered request's deadline when the realm sets none, in timeouts: 5, so 300 s with the default 60 s
    /// timeout — room for the default retry policy's three attempts each to wait out a whole timeout, and a
    /// bound on a server that trickles a byte just under every timeout. Change it with
    /// `setResourceTimeout(_:)`; streams and transfers from or to a file get no default deadline.
    public static let defaultResourceTimeoutFactor: TimeInterval = HTTPLimits.defaultResourceTimeoutFactor

    /// An empty configuration: nothing set, everything falls through to the layer below.
    public init() {}

    /// This configuration, with what its settings decide for every request made now and kept with them.
    func keepingDecisions() -> RealmConfiguration {
        var kept = self
        kept.settings = settings.keepingDecisions()
        return kept
    }

    /// The base URL requests are built on, if one is set.
    public var baseURL: URL? { settings.base?.url }
    /// The request timeout in seconds.
    public var timeout: TimeInterval { settings.timeout ?? Self.defaultTimeout }
    /// The longest a buffered request may take in all, from sending to the last byte, retries included:
    /// the one set, or ``defaultResourceTimeoutFactor`` times ``timeout``; `nil` after
    /// `setResourceTimeout(.unlimited)`. Streams, downloads to a file and uploads from one get no default.
    public var resourceTimeout: TimeInterval? {
        SettingsStack(realm: self, overrides: []).limits(timeout: timeout).resourceTimeout(for: .buffered)
    }
    /// The largest response body kept in memory, in bytes: the one set, or ``defaultMaxResponseSize``; `nil`
    /// after `setMaxResponseSize(.unlimited)`. Streams and downloads to a file get no default.
    public var maxResponseSize: Int? {
        SettingsStack(realm: self, overrides: []).limits(timeout: timeout).maxResponseSize(for: .buffered)
    }
    /// The most connections the realm's requests hold to one host at once; `nil` (the default) leaves it
    /// to the backend (``CurlBackend``: 8; ``URLSessionBackend``: 4). See ``setMaxConnectionsPerHost(_:)``.
    public var maxConnectionsPerHost: Int? { settings.maxConnectionsPerHost }
    /// The version of HTTP the realm's requests speak; ``HTTPVersionPreference/automatic`` by default. See
    /// ``setHTTPVersion(_:)``.
    public var httpVersion: HTTPVersionPreference { settings.httpVersion ?? .automatic }
    /// The backend that sends requests.
    public var backend: any NetworkBackend { settings.backend?.backend ?? DefaultBackend.shared }
    /// The queue completion closures run on; `nil` runs them wherever the backend answers.
    public var callbackQueue: DispatchQueue? { settings.callbackQueue }
    /// What logs and recordings must never show: the always-secret headers and those declared here.
    public var redaction: Redaction { settings.redaction ?? .default }
    /// The middleware requests pass through, outermost first.
    public var middleware: [any Middleware] { settings.middleware }
    /// What watches the realm's requests, in the order added.
    public var observers: [any RequestObserver] { settings.observers }
    /// Whether responses carry ``Response/metrics``: when asked for, or when an observer watches.
    public var collectsMetrics: Bool { settings.collectsMetrics ?? !settings.observers.isEmpty }
    /// The statuses that count as success for endpoints that do not say; `nil` is 200–299.
    public var validStatusCodes: StatusCodes? { settings.validStatusCodes }
    /// The HTTP cache the realm's GET and HEAD requests go through, if any.
    public var cache: HTTPCache? { settings.cache }
    /// The cookie jar the realm's requests use, if it keeps cookies.
    public var cookieJar: CookieJar? { settings.cookieJar }
    /// The TLS policy the realm's connections follow, if one is set.
    public var tlsPolicy: TLSPolicy? { settings.tlsPolicy?.policy }
    /// The decoder typed responses are read with, if one is set (otherwise a plain `JSONDecoder`).
    public var decoder: JSONDecoder? { settings.decoder }

    /// The CRUD → HTTP mapping: ``ServiceRealm/defaultCRUDMap`` with this configuration's changes.
    public var crudMap: CRUDMap { SettingsStack(realm: self, overrides: []).crudMap }

    /// The headers a request of `crudMethod` gets (global ones, then that CRUD method's), or the global ones.
    public func headers(for crudMethod: CRUDMethod? = nil) -> HTTPHeaderDictionary {
        SettingsStack(realm: self, overrides: []).headers(for: crudMethod.map { [$0] } ?? []).dictionary
    }

    /// The cache policy a request of `crudMethod` gets, or the global one.
    public func cachePolicy(for crudMethod: CRUDMethod? = nil) -> URLRequest.CachePolicy {
        SettingsStack(realm: self, overrides: []).cachePolicy(for: crudMethod.map { [$0] } ?? [])
    }

    /// Sets the base URL that endpoint paths are appended to.
    public mutating func setBaseURL(_ url: URL) { settings.base = BaseURL(url) }

    /// Sets the request timeout in seconds; see ``ServiceRealm/setTimeout(_:)`` for the values it takes.
    public mutating func setTimeout(_ timeout: TimeInterval) { settings.timeout = timeout }

    /// Bounds the whole of each request (a server that trickles a byte a second never trips ``timeout``);
    /// `nil` is the default, ``defaultResourceTimeoutFactor`` times the timeout for buffered requests.
    public mutating func setResourceTimeout(_ timeout: TimeInterval?) {
        settings.resourceTimeout = LimitSetting(timeout)
    }

    /// Sets no deadline on the whole request: only ``timeout`` bounds it, silence by silence.
    public mutating func setResourceTimeout(_ none: NoLimit) { settings.resourceTimeout = .unlimited }

    /// Refuses in-memory response bodies larger than `bytes` with ``ResponseTooLarge``; `nil` is the
    /// default, ``defaultMaxResponseSize``.
    ///
    /// `CurlBackend` stops reading at once; URLSession on Linux reads ahead of its delegate, so a fast
    /// server's body may be in memory before the request fails.
    public mutating func setMaxResponseSize(_ bytes: Int?) { settings.maxResponseSize = LimitSetting(bytes) }

    /// Keeps response bodies in memory whatever their size.
    public mutating func setMaxResponseSize(_ none: NoLimit) { settings.maxResponseSize = .unlimited }

    /// Lets the realm's requests hold at most `limit` connections to one host (scheme, name and port) at
    /// once; `nil` leaves it to the backend (``CurlBackend``: 8, or its `maxConnectionsPerHost:`;
    /// ``URLSessionBackend``: 4, or its configuration's `httpMaximumConnectionsPerHost`).
    ///
    /// A request past the limit waits for a connection to come free, its timeout running: a stream holds
    /// its connection until it ends, so a client of several event streams to one host (an LLM or MCP
    /// client) sets room for them all. The wait is visible: observers get
    /// ``RequestEvent/Kind/waitingForConnection(_:)``, ``LoggingMiddleware`` logs it, and
    /// collected metrics show it as ``TransferMetrics/queued``. Over HTTP/2, which ``CurlBackend`` uses
    /// wherever a server offers it over TLS, requests to one host share its connections and none waits.
    /// A backend made with a session of your own (``URLSessionBackend/init(session:)``) allows at most
    /// what its configuration does.
    public mutating func setMaxConnectionsPerHost(_ limit: Int?) { settings.maxConnectionsPerHost = limit }

    /// Sets the version of HTTP the realm's requests speak (`nil`: the default, ``HTTPVersionPreference/automatic``).
    /// ``HTTPVersionPreference/http2PriorKnowledge`` speaks cleartext HTTP/2 (`h2c`) to internal services
    /// that do. A backend that cannot (``NetworkBackend/supportedHTTPVersions``; ``URLSessionBackend``
    /// only negotiates) refuses the request with
    /// ``ServiceError/InvalidRequestReason/unsupportedHTTPVersion(backend:version:)`` before sending it.
    public mutating func setHTTPVersion(_ version: HTTPVersionPreference?) { settings.httpVersion = version }

    /// Sends requests through `backend`.
    public mutating func use(_ backend: some NetworkBackend) { settings.backend = ChosenBackend(backend) }

    /// Runs completion closures on `queue` (for example `.main`) instead of wherever the backend answers.
    public mutating func setCallbackQueue(_ queue: DispatchQueue?) { settings.callbackQueue = queue }

    /// Adds a middleware after (inside) the ones already added.
    public mutating func addMiddleware(_ middleware: some Middleware) {
        settings.middleware.append(middleware)
    }
    /// Adds an observer told every event of every request (``RequestEvent``); metrics are then collected.
    public mutating func addObserver(_ observer: some RequestObserver) { settings.observers.append(observer) }
    /// Whether to collect ``Response/metrics`` (off by default; on while an observer watches, unless set
    /// to `false` here).
    public mutating func collectMetrics(_ collect: Bool = true) { settings.collectsMetrics = collect }

    /// Sets the statuses that count as success for endpoints that do not declare their own.
    public mutating func setValidStatusCodes(_ codes: StatusCodes) { settings.validStatusCodes = codes }

    /// Decodes the bodies of unacceptable statuses into ``ServiceError/unacceptableStatusCode(_:errorBody:)``.
    public mutating func decodeErrorBodies(_ errorBody: ErrorBody) { settings.errorBody = errorBody }

    /// Reads typed responses (``TypedEndpoint``, `request(as:)`, CRUD `value(as:)`) with `decoder`, e.g. one
    /// with the module's date strategy; an endpoint's own ``SwiftyServiceProtocol/decoder`` wins over it.
    public mutating func setDecoder(_ decoder: JSONDecoder?) { settings.decoder = decoder }

    /// Sends GET and HEAD requests through `cache`, which then carries out their cache policies; `nil`
    /// turns caching off.
    public mutating func useCache(_ cache: HTTPCache?) { settings.cache = cache }

    /// Keeps cookies in `jar` (a new one in memory by default): cookies that servers set are sent back on
    /// later requests per RFC 6265, merged with a `Cookie` header the request has (its values win).
    /// Pass the same jar to several realms to share it; `nil` keeps no cookies (the default).
    public mutating func useCookies(_ jar: CookieJar? = CookieJar()) { settings.cookieJar = jar }

    /// Applies `policy` to every connection of the realm's requests; `nil` goes back to the system's rules,
    /// also in a one-off override (`.override { $0.setTLSPolicy(nil) }` sends that request under the
    /// system's rules whatever its realm's policy).
    public mutating func setTLSPolicy(_ policy: TLSPolicy?) { settings.tlsPolicy = TLSChoice(policy) }

    /// Lets identical GETs in flight at once (same URL and headers) share one request; each caller still
    /// gets its own result and can cancel alone.
    public mutating func coalesceIdenticalRequests(_ enabled: Bool = true) {
        settings.coalescer = enabled ? (settings.coalescer ?? Coalescer()) : nil
    }

    /// Declares headers and query keys whose values logs and recordings must never show.
    public mutating func declareSecrets(headers: [String] = [], queryKeys: [String] = []) {
        settings.redaction = redaction.union(Redaction(headers: headers, queryKeys: queryKeys))
    }

    /// Adds a header to every request; a header of the same name (in any case) is replaced.
    public mutating func addHeader(_ header: String, withValue value: String) {
        settings.headers.set(header, value)
    }

    /// Adds headers to every request; headers of the same names (in any case) are replaced.
    public mutating func addHeaders(_ headers: HTTPHeaderDictionary) {
        settings.headers.merge(HeaderFields(headers))
    }

    /// Adds a header to the requests of one CRUD method only.
    public mutating func addHeader(
        _ header: String, withValue value: String, specificForCRUDMethod crudMethod: CRUDMethod
    ) {
        settings.crudHeaders[crudMethod, default: HeaderFields()].set(header, value)
    }

    /// Adds headers to the requests of one CRUD method only.
    public mutating func addHeaders(
        _ headers: HTTPHeaderDictionary, specificForCRUDMethod crudMethod: CRUDMethod
    ) {
        settings.crudHeaders[crudMethod, default: HeaderFields()].merge(HeaderFields(headers))
    }

    /// Sets the cache policy of every request.
    public mutating func overrideGlobalCachePolicy(_ cachePolicy: URLRequest.CachePolicy) {
        settings.cachePolicy = cachePolicy
    }

    /// Sets the cache policy of the requests of one CRUD method.
    public mutating func overrideCachePolicy(
        _ cachePolicy: URLRequest.CachePolicy, forCrudMethod method: CRUDMethod
    ) {
        settings.crudCachePolicies[method] = cachePolicy
    }

    /// Changes the HTTP method of the CRUD methods `map` names; the others keep theirs.
    public mutating func overrideCrudMap(_ map: CRUDMap) { settings.crudMap.merge(map) { $1 } }

    /// Sends one CRUD method as `httpMethod`.
    public mutating func overrideCrudMethod(_ method: CRUDMethod, withHTTPMethod httpMethod: HTTPMethod) {
        settings.crudMap[method] = httpMethod
    }
}

/// A base URL split once, when it is set, into what paths are appended to and the query they keep.
final class BaseURL: Sendable {
    let url: URL
    /// Everything before the query and fragment, as given: what a request with no path goes to.
    let exact: String
    /// The same without trailing slashes: what a path is appended to, after one `/`.
    let prefix: String
    /// The base URL's own percent-encoded query, kept in front of a request's parameters.
    let query: Substring?
    /// Why no request can be built on this URL, if none can.
    let problem: ServiceError.InvalidRequestReason?
    /// ``BackendRequest/hostKey(ofURL:)`` of every URL under this one.
    let hostKey: String

    /// The URLs last made on this base, newest first: a realm sends to the same few URLs again and again, and
    /// parsing one (`URL(string:)`) costs ~0.7 µs where finding it here costs tens of nanoseconds.
    private let recentURLs = Locked.make([(text: String, url: URL)]())
    private static let recentURLsKept = 4

    /// The URL `text` stands for, parsed once for a few calls in a row; `nil` if it is none.
    func url(for text: String) -> URL? {
        let known = recentURLs.withLock { recent in recent.first { $0.text == text }?.url }
        if let known { return known }
        guard let url = URL(string: text) else { return nil }
        recentURLs.withLock { recent in
            if recent.count == Self.recentURLsKept { recent.removeLast() }
            recent.insert((text, url), at: 0)
        }
        return url
    }

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
        hostKey = BackendRequest.hostKey(ofURL: exact)
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
