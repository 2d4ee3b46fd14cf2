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

    /// Whether what goes on the wire depends on the method, the path and the realm's decisions alone: no
    /// parameters, body or download, and no settings of the endpoint's own.
    var isPlain: Bool {
        parameters == nil && body == nil && download == nil && pathProblem == nil && layer.isEmpty
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
        let decided = settings.decisions
        let (method, crudMethods) = resolve(draft.verb, decided)
        // A plain request sent again is the same bytes as the last one: its URL, fields and host are made once
        // per realm configuration and path, not parsed and joined per request.
        let plain = draft.isPlain && overrides.isEmpty && crudMethods.isEmpty
        if plain, let wire = decided.recentWire(method, path: draft.path, isEncoded: draft.pathIsEncoded) {
            let limits = decided.limits
            let deadline = limits.resourceTimeout(for: .buffered)
            let timeouts = Timeouts(timeout: decided.timeout, resource: deadline)
            return assemble(
                wire, decided.headers, draft, decided, (nil, nil),
                (timeouts.resource, limits.maxResponseSize(for: .buffered)), progress)
        }
        var target = URLTarget(
            path: draft.path, isEncoded: draft.pathIsEncoded, problem: draft.pathProblem, base: decided.base,
            method: method)
        try target.check()
        let body = try BodyWriter.write(draft, method: method, into: &target)
        let url = try target.url()
        // Per-CRUD settings apply to this request alone; otherwise the stack's own headers and policy stand.
        var headers = crudMethods.isEmpty ? decided.headers : settings.headers(for: crudMethods)
        if let reason = headers.firstInvalid() { throw target.invalid(reason) }
        if let contentType = body.contentType, headers.value(for: "Content-Type") == nil {
            headers.set("Content-Type", contentType)
        }
        let limits = decided.limits
        let mode = CallMode(
            downloadsToFile: draft.download != nil, uploadsFromFile: body.file != nil || body.stream != nil)
        let timeouts = Timeouts(timeout: decided.timeout, resource: limits.resourceTimeout(for: mode))
        if let problem = timeouts.problem { throw target.invalid(problem) }
        if let download = draft.download, !download.replacesExisting,
            FileManager.default.fileExists(atPath: download.url.path)
        {
            throw target.invalid(.downloadDestinationExists(download.url.path))
        }
        let text = url.absoluteString
        let wire = WireForm(
            url: url, text: text, method: method.foundationSpelling,
            fields: headers.isEmpty ? [:] : headers.dictionary, body: body.data, timeout: timeouts.request,
            cachePolicy: crudMethods.isEmpty ? decided.cachePolicy : settings.cachePolicy(for: crudMethods),
            host: target.hostKey(ofURL: text))
        // A plain draft has no parameters and no body: `body` is empty, and the wire form all there is to keep.
        if plain { decided.keep(wire, method, path: draft.path, isEncoded: draft.pathIsEncoded) }
        return assemble(
            wire, headers, draft, decided, (body.file, body.stream),
            (timeouts.resource, limits.maxResponseSize(for: mode)), progress)
    }

    /// The HTTP method, and the CRUD methods whose per-CRUD settings apply to it (none looked up when no
    /// layer has per-CRUD settings: the lookups are most of the cost of this step).
    private static func resolve(_ verb: RequestDraft.Verb, _ decided: SettingsDecisions) -> (
        HTTPMethod, [CRUDMethod]
    ) {
        switch verb {
        case let .http(method):
            guard decided.hasPerCRUDSettings else { return (method, []) }
            let crudMap = decided.crudMap
            return (method, CRUDMethod.allCases.filter { crudMap[$0] == method })
        case let .crud(crud):
            return (decided.crudMap[crud] ?? .get, [crud])
        }
    }

    private static func assemble(
        _ wire: WireForm, _ headers: HeaderFields, _ draft: RequestDraft, _ decided: SettingsDecisions,
        _ body: (file: BodyFile?, stream: BodyStream?),
        _ sizes: (resourceTimeout: TimeInterval?, maxResponseSize: Int?), _ progress: ProgressThrottle?
    ) -> PreparedRequest {
        let chain = decided.chain(downloads: draft.download != nil, reportsProgress: progress != nil)
        let events = decided.observers.isEmpty ? nil : EventEmitter(observers: decided.observers)
        // A request for a range of its own is not resumed: its answer is not the whole body.
        let resumption = draft.download.flatMap { download in
            download.resumes && headers.value(for: "Range") == nil
                ? DownloadResumption.claim(download.url) : nil
        }
        // Made whole in one go and never changed, so that handing it on is a move, not a copy of its fields.
        let backendRequest = BackendRequest(
            sent: .built(wire), builtFrom: draft.endpoint, crudMethod: draft.crudMethod,
            sampleData: draft.sampleData, redaction: decided.redaction, bodySource: body.file,
            downloadFile: draft.download?.stagingFile(),
            maxResponseSize: sizes.maxResponseSize,
            cookieJar: decided.cookieJar, tlsPolicy: decided.tlsPolicy,
            progress: progress,
            collectsMetrics: decided.collectsMetrics,
            reports: events, bodyStream: body.stream,
            maxConnectionsPerHost: decided.maxConnectionsPerHost,
            httpVersion: decided.httpVersion, resumption: resumption)
        return PreparedRequest(
            backendRequest: backendRequest, decided: decided, chain: chain,
            // Through middleware every attempt's metrics go in the log; without, a failed attempt's do (its
            // response carries them otherwise), for the observers' `failed`.
            metricsLog: decided.collectsMetrics && (!chain.middleware.isEmpty || events != nil) ? MetricsLog() : nil,
            events: events, progress: progress, resourceTimeout: sizes.resourceTimeout, download: draft.download)
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
