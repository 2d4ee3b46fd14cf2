import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a stack of settings decides for every request built on it, whatever the request: made once per stack
/// and shared. A realm's own stack (an endpoint and overrides that set nothing) is the common one: its
/// decisions are made once per realm configuration (``SettingsStack/decisions``), not once per request, and a
/// prepared request holds them by one reference rather than by a copy of each.
///
/// What depends on the request stays with the builder: the per-CRUD headers and cache policy of a CRUD call,
/// and the chain of a call that downloads or reports progress.
final class SettingsDecisions: Sendable {
    let base: BaseURL?
    /// Whether any layer sets headers or a cache policy per CRUD method.
    let hasPerCRUDSettings: Bool
    let crudMap: CRUDMap
    /// The headers of a request that no per-CRUD setting applies to.
    let headers: HeaderFields
    /// The cache policy of a request that no per-CRUD setting applies to.
    let cachePolicy: URLRequest.CachePolicy
    let timeout: TimeInterval
    let limits: RequestLimits
    let observers: [any RequestObserver]
    let collectsMetrics: Bool
    let redaction: Redaction
    /// The chain of a call that neither downloads to a file nor reports progress.
    let plainChain: MiddlewareChain
    /// The backend the layers chose; ``DefaultBackend/chosen`` when none did, made when first sent through.
    var backend: ChosenBackend { chosenBackend ?? DefaultBackend.chosen }
    private let chosenBackend: ChosenBackend?
    let callbackQueue: DispatchQueue?
    let validStatusCodes: StatusCodes
    let errorBody: ErrorBody?
    let decoder: JSONDecoder?
    let cookieJar: CookieJar?
    let tlsPolicy: TLSPolicy?
    let maxConnectionsPerHost: Int?
    let httpVersion: HTTPVersionPreference
    /// The layers' middleware, the realm's outermost; the realm's cache and coalescing, kept apart.
    private let middleware: [any Middleware]
    private let cache: HTTPCache?
    private let coalescer: (any Middleware)?
    /// The wire forms of the last few plain requests built on these decisions, newest first (RequestBuilder).
    private let recentWires = Locked.make([RecentWire]())
    private static let recentWiresKept = 4

    init(_ settings: SettingsStack) {
        base = settings.top { $0.base }
        hasPerCRUDSettings = settings.hasPerCRUDSettings
        crudMap = settings.crudMap
        headers = settings.headers(for: [])
        cachePolicy = settings.cachePolicy(for: [])
        timeout = settings.top { $0.timeout } ?? RealmConfiguration.defaultTimeout
        limits = settings.limits(timeout: timeout)
        observers = settings.observers
        collectsMetrics = settings.top { $0.collectsMetrics } ?? !observers.isEmpty
        redaction = settings.redaction
        middleware = settings.middleware
        cache = settings.top { $0.cache }
        coalescer = settings.top { $0.coalescer }
        plainChain = MiddlewareChain(middleware, cache: cache, coalescer: coalescer)
        chosenBackend = settings.top { $0.backend }
        callbackQueue = settings.top { $0.callbackQueue }
        validStatusCodes = settings.top { $0.validStatusCodes } ?? .successful
        errorBody = settings.top { $0.errorBody }
        decoder = settings.top { $0.decoder }
        cookieJar = settings.top { $0.cookieJar }
        tlsPolicy = settings.top { $0.tlsPolicy }?.policy
        maxConnectionsPerHost = settings.top { $0.maxConnectionsPerHost }
        httpVersion = settings.top { $0.httpVersion } ?? .automatic
    }

    /// A plain request's wire form, made already for a request of the same method to the same path.
    func recentWire(_ method: HTTPMethod, path: String, isEncoded: Bool) -> WireForm? {
        recentWires.withLock { recent in recent.first { $0.matches(method, path, isEncoded) }?.wire }
    }

    /// Keeps a plain request's wire form for the next request of the same method to the same path.
    func keep(_ wire: WireForm, _ method: HTTPMethod, path: String, isEncoded: Bool) {
        recentWires.withLock { recent in
            // Requests in flight together all miss at first: one of them is kept, not one per request.
            if recent.contains(where: { $0.matches(method, path, isEncoded) }) { return }
            if recent.count == Self.recentWiresKept { recent.removeLast() }
            recent.insert(RecentWire(method: method, path: path, isEncoded: isEncoded, wire: wire), at: 0)
        }
    }

    private struct RecentWire {
        let method: HTTPMethod
        let path: String
        let isEncoded: Bool
        let wire: WireForm

        func matches(_ method: HTTPMethod, _ path: String, _ isEncoded: Bool) -> Bool {
            self.method == method && self.isEncoded == isEncoded && self.path == path
        }
    }

    /// The chain of a call: downloads go to a file of their own, so they are neither cached in memory nor
    /// shared with others; a call with progress reports has its own transfer to report on.
    func chain(downloads: Bool, reportsProgress: Bool) -> MiddlewareChain {
        if !downloads && !reportsProgress { return plainChain }
        return MiddlewareChain(
            middleware, cache: downloads ? nil : cache, coalescer: downloads || reportsProgress ? nil : coalescer)
    }
}

/// A call's middleware: the layers', then the realm's cache and coalescing, innermost.
struct MiddlewareChain: Sendable {
    let middleware: [any Middleware]
    /// The realm's cache when it is first in ``middleware``: a fresh hit is answered before the chain starts.
    let leadingCache: CacheMiddleware?
    /// Whether identical calls in flight may share one trip.
    let coalesces: Bool

    init(_ layers: [any Middleware], cache: HTTPCache?, coalescer: (any Middleware)?) {
        var chain = layers
        var leadingCache: CacheMiddleware?
        if let cache {
            let middleware = CacheMiddleware(cache: cache, outer: layers)
            if layers.isEmpty { leadingCache = middleware }
            chain.append(middleware)
        }
        if let coalescer { chain.append(coalescer) }
        middleware = chain
        self.leadingCache = leadingCache
        coalesces = coalescer != nil
    }

    init(middleware: [any Middleware], leadingCache: CacheMiddleware?, coalesces: Bool) {
        self.middleware = middleware
        self.leadingCache = leadingCache
        self.coalesces = coalesces
    }
}
