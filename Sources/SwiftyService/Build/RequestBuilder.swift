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
        let timeout = settings.top { $0.timeout } ?? RealmConfiguration.defaultTimeout
        let limits = settings.limits(timeout: timeout)
        let mode = CallMode(
            downloadsToFile: draft.download != nil, uploadsFromFile: body.file != nil || body.stream != nil)
        let timeouts = Timeouts(timeout: timeout, resource: limits.resourceTimeout(for: mode))
        if let problem = timeouts.problem { throw target.invalid(problem) }
        if let download = draft.download, !download.replacesExisting,
            FileManager.default.fileExists(atPath: download.url.path)
        {
            throw target.invalid(.downloadDestinationExists(download.url.path))
        }
        let fields = headers.isEmpty ? [:] : headers.dictionary
        let text = url.absoluteString
        let wire = WireForm(
            url: url, text: text, method: method.foundationSpelling, fields: fields, body: body.data,
            timeout: timeouts.request, cachePolicy: settings.cachePolicy(for: crudMethods),
            host: target.hostKey(ofURL: text))
        return assemble(
            wire, headers, draft, settings, (body.file, body.stream),
            (timeouts.resource, limits.maxResponseSize(for: mode), limits),
            progress)
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
        _ wire: WireForm, _ headers: HeaderFields, _ draft: RequestDraft, _ settings: SettingsStack,
        _ body: (file: BodyFile?, stream: BodyStream?),
        _ decided: (resourceTimeout: TimeInterval?, maxResponseSize: Int?, limits: RequestLimits),
        _ progress: ProgressThrottle?
    ) -> PreparedRequest {
        let observers = settings.observers
        let collectsMetrics = settings.top { $0.collectsMetrics } ?? !observers.isEmpty
        let (middleware, leadingCache, coalesces) = middleware(settings, draft, progress)
        let events = observers.isEmpty ? nil : EventEmitter(observers: observers)
        // A request for a range of its own is not resumed: its answer is not the whole body.
        let resumption = draft.download.flatMap { download in
            download.resumes && headers.value(for: "Range") == nil
                ? DownloadResumption.claim(download.url) : nil
        }
        // Made whole in one go and never changed, so that handing it on is a move, not a copy of its fields.
        let backendRequest = BackendRequest(
            sent: .built(wire), builtFrom: draft.endpoint, crudMethod: draft.crudMethod,
            sampleData: draft.sampleData, redaction: settings.redaction, bodySource: body.file,
            downloadFile: draft.download?.stagingFile(),
            maxResponseSize: decided.maxResponseSize,
            cookieJar: settings.top { $0.cookieJar }, tlsPolicy: settings.top { $0.tlsPolicy }?.policy,
            progress: progress,
            collectsMetrics: collectsMetrics,
            reports: events, bodyStream: body.stream,
            maxConnectionsPerHost: settings.top { $0.maxConnectionsPerHost },
            httpVersion: settings.top { $0.httpVersion } ?? .automatic, resumption: resumption)
        return PreparedRequest(
            backendRequest: backendRequest,
            backend: settings.top { $0.backend } ?? DefaultBackend.chosen,
            callbackQueue: settings.top { $0.callbackQueue },
            validStatusCodes: settings.top { $0.validStatusCodes } ?? .successful,
            middleware: middleware,
            leadingCache: leadingCache,
            // Through middleware every attempt's metrics go in the log; without, a failed attempt's do (its
            // response carries them otherwise), for the observers' `failed`.
            metricsLog: collectsMetrics && (!middleware.isEmpty || events != nil) ? MetricsLog() : nil,
            events: events,
            progress: progress,
            errorBody: settings.top { $0.errorBody },
            resourceTimeout: decided.resourceTimeout,
            limits: decided.limits,
            download: draft.download,
            decoder: settings.top { $0.decoder },
            coalesces: coalesces)
    }

    /// The layers' middleware, then the realm's cache and coalescing, innermost; the cache again when it is
    /// first (known here without a cast of the chain's first element); and whether the call coalesces.
    private static func middleware(_ settings: SettingsStack, _ draft: RequestDraft, _ progress: ProgressThrottle?)
        -> (chain: [any Middleware], leadingCache: CacheMiddleware?, coalesces: Bool)
    {
        // Downloads go to a file of their own, so they are neither cached in memory nor shared with others;
        // a call with progress reports has its own transfer to report on.
        let coalescer = draft.download == nil && progress == nil ? settings.top { $0.coalescer } : nil
        let cache = draft.download == nil ? settings.top { $0.cache } : nil
        var chain = settings.middleware
        var leadingCache: CacheMiddleware?
        if let cache {
            let middleware = CacheMiddleware(cache: cache, outer: chain)
            if chain.isEmpty { leadingCache = middleware }
            chain.append(middleware)
        }
        if let coalescer { chain.append(coalescer) }
        return (chain, leadingCache, coalescer != nil)
    }
}

/// The request and resource timeouts, checked: NaN, 0 or less are refused; longer than
/// ``Swift/Double/longestTimeout`` counts as that.
struct Timeouts {
    let request: TimeInterval
    let resource: TimeInterval?
    /// Why the timeouts cannot be used, if they cannot.
    let problem: ServiceError.InvalidRequestReason?

    init(timeout: TimeInterval, resource resourceTimeout: TimeInterval?) {
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
