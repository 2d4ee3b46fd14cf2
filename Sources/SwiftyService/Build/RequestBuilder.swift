import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a request is made of, from an endpoint or a CRUD call, before the realm has its say.
struct RequestDraft {
    enum Verb {
        /// An endpoint's own method; per-CRUD settings apply for every CRUD method mapped to it.
        case http(HTTPMethod)
        /// A CRUD call; its method comes from the CRUD map.
        case crud(CRUDMethod)
    }

    var verb: Verb
    /// What the endpoint (or the ``Service``) sets itself: base URL, headers, middleware, statuses, error body.
    var layer = Settings()
    /// Appended to the base URL after one `/`.
    var path: String = ""
    /// Whether `path` is percent-encoded already (CRUD identifiers are).
    var pathIsEncoded = false
    /// Why the path cannot be used (an empty identifier); reported with the URL once it is known.
    var pathProblem: ServiceError.InvalidRequestReason?
    var parameters: [String: Any]?
    var encoding: ParameterEncoding = .automatic
    var body: RequestBody?
    var sampleData = Data()
    var download: DownloadDestination?
    var endpoint: (any SwiftyServiceProtocol)?

    var crudMethod: CRUDMethod? {
        if case let .crud(crud) = verb { return crud }
        return nil
    }
}

/// A built request and everything needed to send it: the realm's decisions, frozen at build time. A class:
/// the pipeline's closures and the exchange hold it by one reference rather than by copies of every field.
final class PreparedRequest: Sendable {
    let backendRequest: BackendRequest
    let backend: any NetworkBackend
    let callbackQueue: DispatchQueue?
    let validStatusCodes: StatusCodes
    /// Realm's, endpoint's and overrides' middleware, outermost first; empty on the fast path.
    let middleware: [any Middleware]
    /// The realm's cache when it is first in ``middleware``: a fresh hit is answered before the chain starts.
    let leadingCache: CacheMiddleware?
    let errorBody: ErrorBody?
    /// The deadline for the whole request, if the realm sets one.
    let resourceTimeout: TimeInterval?
    /// Where an accepted body goes, moved there from ``BackendRequest/downloadFile`` when it is settled.
    let download: DownloadDestination?
    /// The attempts' metrics, when they are collected and attempts go through middleware.
    let metricsLog: MetricsLog?
    /// What typed responses are read with: the topmost layer's decoder, if any sets one.
    let decoder: JSONDecoder?

    var urlRequest: URLRequest { backendRequest.urlRequest }

    init(
        backendRequest: BackendRequest, backend: any NetworkBackend, callbackQueue: DispatchQueue?,
        validStatusCodes: StatusCodes, middleware: [any Middleware], leadingCache: CacheMiddleware?,
        metricsLog: MetricsLog?,
        errorBody: ErrorBody?, resourceTimeout: TimeInterval?, download: DownloadDestination?,
        decoder: JSONDecoder?
    ) {
        self.backendRequest = backendRequest
        self.backend = backend
        self.callbackQueue = callbackQueue
        self.validStatusCodes = validStatusCodes
        self.middleware = middleware
        self.leadingCache = leadingCache
        self.metricsLog = metricsLog
        self.errorBody = errorBody
        self.resourceTimeout = resourceTimeout
        self.download = download
        self.decoder = decoder
    }
}

/// Turns a draft and its settings (realm, endpoint, one-off overrides) into a request, without I/O: resolve
/// the method → write the URL → write the body → check what would be sent → assemble.
enum RequestBuilder {
    static func prepare(
        _ draft: RequestDraft, realm: RealmConfiguration, overrides: [Settings],
        progress: ProgressThrottle? = nil
    ) throws(ServiceError) -> PreparedRequest {
        let settings = SettingsStack(realm: realm, endpoint: draft.layer, overrides: overrides)
        let (method, crudMethods) = resolve(draft.verb, settings)
        var target = URLTarget(
            path: draft.path, isEncoded: draft.pathIsEncoded, problem: draft.pathProblem,
            base: settings.top { $0.base }, method: method)
        try target.check()
        let body = try BodyWriter.write(draft, method: method, into: &target)
        let url = try target.url()
        var headers = settings.headers(for: crudMethods)
        if let reason = headers.firstInvalid() { throw target.invalid(reason) }
        if let contentType = body.contentType, headers.value(for: "Content-Type") == nil {
            headers.set("Content-Type", contentType)
        }
        let timeouts = Timeouts(
            timeout: settings.top { $0.timeout }, resource: settings.top { $0.resourceTimeout })
        if let problem = timeouts.problem { throw target.invalid(problem) }
        if let download = draft.download, !download.replacesExisting,
            FileManager.default.fileExists(atPath: download.url.path)
        {
            throw target.invalid(.downloadDestinationExists(download.url.path))
        }
        var request = URLRequest(url: url)
        // GET is URLRequest's default, and setting the method costs a normalization pass on Linux.
        if method != .get { request.httpMethod = method.rawValue }
        request.timeoutInterval = timeouts.request
        request.cachePolicy = settings.cachePolicy(for: crudMethods)
        if !headers.isEmpty { request.allHTTPHeaderFields = headers.dictionary }
        request.httpBody = body.data
        return assemble(request, draft, settings, body.file, timeouts.resource, progress)
    }

    /// The HTTP method, and the CRUD methods whose per-CRUD settings apply to it (none looked up when no
    /// layer has per-CRUD settings: the lookups are most of the cost of this step).
    private static func resolve(_ verb: RequestDraft.Verb, _ settings: SettingsStack) -> (
        HTTPMethod, [CRUDMethod]
    ) {
        switch verb {
        case let .http(method):
            guard settings.hasPerCRUDSettings else { return (method, []) }
            let crudMap = settings.crudMap
            return (method, CRUDMethod.allCases.filter { crudMap[$0] == method })
        case let .crud(crud):
            return (settings.crudMap[crud] ?? .get, [crud])
        }
    }

    private static func assemble(
        _ request: URLRequest, _ draft: RequestDraft, _ settings: SettingsStack, _ bodyFile: BodyFile?,
        _ resourceTimeout: TimeInterval?, _ progress: ProgressThrottle?
    ) -> PreparedRequest {
        let observers = settings.observers
        let collectsMetrics = settings.top { $0.collectsMetrics } ?? !observers.isEmpty
        let (middleware, leadingCache) = middleware(settings, draft)
        var backendRequest = BackendRequest(
            urlRequest: request, builtFrom: draft.endpoint, crudMethod: draft.crudMethod,
            sampleData: draft.sampleData, redaction: settings.redaction, bodySource: bodyFile,
            downloadFile: draft.download?.stagingFile(),
            maxResponseSize: settings.top { $0.maxResponseSize },
            cookieJar: settings.top { $0.cookieJar }, tlsPolicy: settings.top { $0.tlsPolicy },
            progress: progress,
            collectsMetrics: collectsMetrics,
            events: observers.isEmpty ? nil : EventEmitter(observers: observers))
        backendRequest.maxConnectionsPerHost = settings.top { $0.maxConnectionsPerHost }
        return PreparedRequest(
            backendRequest: backendRequest,
            backend: settings.top { $0.backend } ?? DefaultBackend.shared,
            callbackQueue: settings.top { $0.callbackQueue },
            validStatusCodes: settings.top { $0.validStatusCodes } ?? .successful,
            middleware: middleware,
            leadingCache: leadingCache,
            metricsLog: collectsMetrics && !middleware.isEmpty ? MetricsLog() : nil,
            errorBody: settings.top { $0.errorBody },
            resourceTimeout: resourceTimeout,
            download: draft.download,
            decoder: settings.top { $0.decoder })
    }

    /// The layers' middleware, then the realm's cache and coalescing, innermost; and the cache again when it
    /// is first (known here without a cast of the chain's first element).
    private static func middleware(_ settings: SettingsStack, _ draft: RequestDraft)
        -> (chain: [any Middleware], leadingCache: CacheMiddleware?)
    {
        // Downloads go to a file of their own, so they are neither cached in memory nor shared with others.
        let coalescer = draft.download == nil ? settings.top { $0.coalescer } : nil
        let cache = draft.download == nil ? settings.top { $0.cache } : nil
        var chain = settings.middleware
        var leadingCache: CacheMiddleware?
        if let cache {
            let middleware = CacheMiddleware(cache: cache, outer: chain)
            if chain.isEmpty { leadingCache = middleware }
            chain.append(middleware)
        }
        if let coalescer { chain.append(coalescer) }
        return (chain, leadingCache)
    }
}

/// The request and resource timeouts, checked: NaN, 0 or less are refused; longer than
/// ``Swift/Double/longestTimeout`` counts as that.
struct Timeouts {
    let request: TimeInterval
    let resource: TimeInterval?
    /// Why the timeouts cannot be used, if they cannot.
    let problem: ServiceError.InvalidRequestReason?

    init(timeout: TimeInterval?, resource resourceTimeout: TimeInterval?) {
        let timeout = timeout ?? RealmConfiguration.defaultTimeout
        if !(timeout > 0) {
            problem = .invalidTimeout("the timeout is \(timeout) s; it must be more than 0 seconds")
        } else if let resourceTimeout, !(resourceTimeout > 0) {
            problem = .invalidTimeout(
                "the resource timeout is \(resourceTimeout) s; it must be more than 0 seconds")
        } else {
            problem = nil
        }
        request = min(timeout, .longestTimeout)
        resource = resourceTimeout.map { min($0, .longestTimeout) }
    }
}
