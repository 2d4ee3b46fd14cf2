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
    /// A base URL of the request's own (a ``Service``'s, or an endpoint's that differs from its realm's).
    var base: BaseURL?
    /// Appended to the base URL after one `/`.
    var path: String = ""
    /// Whether `path` is percent-encoded already (CRUD identifiers are).
    var pathIsEncoded = false
    /// Why the path cannot be used (an empty identifier); reported with the URL once it is known.
    var pathProblem: ServiceError.InvalidRequestReason?
    var parameters: [String: Any]?
    var encoding: ParameterEncoding = .automatic
    var body: RequestBody?
    var headers: HTTPHeaderDictionary?
    var sampleData = Data()
    var validStatusCodes: StatusCodes = .realmDefault
    var middleware: [any Middleware] = []
    var errorBody: ErrorBody?
    var download: DownloadDestination?
    var endpoint: (any SwiftyServiceProtocol)?
}

/// A built request and everything needed to send it: the realm's decisions, frozen at build time.
struct PreparedRequest: Sendable {
    var backendRequest: BackendRequest
    let backend: any NetworkBackend
    let callbackQueue: DispatchQueue?
    let validStatusCodes: StatusCodes
    /// Realm's, endpoint's and override's middleware, outermost first; empty on the fast path.
    let middleware: [any Middleware]
    let errorBody: ErrorBody?
    /// The deadline for the whole request, if the realm sets one.
    let resourceTimeout: TimeInterval?

    var urlRequest: URLRequest { backendRequest.urlRequest }
}

/// Turns a draft, a realm snapshot and an optional one-off override into a `URLRequest`.
///
/// Precedence, lowest to highest: realm global → realm per-CRUD → endpoint → override global →
/// override per-CRUD.
enum RequestBuilder {
    static func prepare(
        _ draft: RequestDraft, realm: RealmConfiguration, override: RealmConfiguration?
    ) throws -> PreparedRequest {
        let method: HTTPMethod
        var crudMethods: [CRUDMethod] = []
        var crudMap = realm.crudMap
        if let override, !override.crudMapOverrides.isEmpty {
            crudMap.merge(override.crudMapOverrides) { $1 }
        }
        switch draft.verb {
        case let .http(httpMethod):
            method = httpMethod
            for crud in CRUDMethod.allCases where crudMap[crud] == httpMethod { crudMethods.append(crud) }
        case let .crud(crud):
            method = crudMap[crud] ?? .get
            crudMethods = [crud]
        }

        let base = override?.base ?? draft.base ?? realm.base
        var pathProblem = draft.pathProblem
        var path = draft.path
        if !draft.pathIsEncoded {
            switch PathEncoding.encode(draft.path) {
            case let .success(encoded): path = encoded
            case let .failure(problem):
                pathProblem = problem.reason
                path = PathEncoding.readable(draft.path)
            }
        }
        var urlString: String
        if path.isEmpty {
            urlString = base?.exact ?? ""
        } else {
            urlString = base?.prefix ?? ""
            urlString += "/"
            urlString += path
        }

        func invalid(_ reason: ServiceError.InvalidRequestReason) -> ServiceError {
            .invalidRequest(reason, method: method, url: urlString.isEmpty ? draft.path : urlString)
        }

        guard let base else { throw invalid(.missingBaseURL) }
        if let problem = base.problem { throw invalid(problem) }
        guard HTTPToken.isValid(method.rawValue) else { throw invalid(.invalidMethod(method.rawValue)) }
        if let problem = pathProblem { throw invalid(problem) }

        var headers = realm.headers
        for crud in crudMethods { if let specific = realm.crudHeaders[crud] { headers.merge(specific) } }
        if let endpointHeaders = draft.headers { headers.merge(endpointHeaders) }
        if let override {
            headers.merge(override.headers)
            for crud in crudMethods {
                if let specific = override.crudHeaders[crud] { headers.merge(specific) }
            }
        }

        var query = base.query.map(String.init)
        var body: Data?
        var bodyFile: BodyFile?
        var contentType: String?
        do {
            if let bodyOfItsOwn = draft.body {
                if draft.parameters != nil,
                    draft.encoding.destination == .form || draft.encoding.destination == .json
                {
                    throw invalid(
                        .conflictingBody(
                            "the endpoint has a body and also asks for its parameters in the body"))
                }
                if let parameters = draft.parameters {
                    query = try appendQuery(parameters, draft.encoding, to: query)
                }
                contentType = bodyOfItsOwn.contentType
                switch bodyOfItsOwn.content {
                case let .data(data): body = data
                case let .unencodable(reason): throw invalid(.unencodableBody(reason))
                case let .file(url):
                    guard FileManager.default.isReadableFile(atPath: url.path) else {
                        throw invalid(.invalidBody("the file '\(url.path)' cannot be read"))
                    }
                    bodyFile = BodyFile(url: url, isTemporary: false)
                case let .multipart(form):
                    do {
                        let (encoded, type) = try form.encode()
                        contentType = type
                        switch encoded {
                        case let .data(data): body = data
                        case let .file(file): bodyFile = file
                        }
                    } catch let problem as MultipartProblem {
                        throw invalid(.invalidBody(problem.reason))
                    }
                }
            } else if let parameters = draft.parameters {
                switch draft.encoding.destination {
                case .automatic where method.prefersQueryParameters, .query:
                    query = try appendQuery(parameters, draft.encoding, to: query)
                case .form:
                    var writer = QueryWriter(draft.encoding)
                    try writer.write(parameters)
                    body = Data(writer.bytes)
                    contentType = "application/x-www-form-urlencoded; charset=utf-8"
                case .automatic, .json:
                    var writer = JSONWriter()
                    try writer.write(parameters)
                    body = Data(writer.bytes)
                    contentType = "application/json"
                }
            }
        } catch let problem as ParameterProblem {
            throw invalid(.unencodableParameter(key: problem.key, reason: problem.reason))
        }

        if let query, !query.isEmpty {
            urlString += "?"
            urlString += query
        }
        if urlString.utf8.count > TransportRules.maxURLLength {
            // The error keeps the URL's start: a caller that logs `error.url` must not log megabytes.
            throw ServiceError.invalidRequest(
                .urlTooLong(length: urlString.utf8.count), method: method, url: urlString.abbreviatedURL)
        }

        if let reason = headers.firstInvalid() { throw invalid(reason) }
        if let download = draft.download, !download.replacesExisting,
            FileManager.default.fileExists(atPath: download.url.path)
        {
            throw invalid(.downloadDestinationExists(download.url.path))
        }
        if let contentType, headers.value(for: "Content-Type") == nil {
            headers.set("Content-Type", contentType)
        }
        guard let url = URL(string: urlString) else {
            throw invalid(.malformedURL("'\(urlString)' is not a valid URL"))
        }

        let timeout = override?.timeoutOverride ?? realm.timeout
        let resourceTimeout = override?.resourceTimeout ?? realm.resourceTimeout
        if !(timeout > 0) {
            throw invalid(.invalidTimeout("the timeout is \(timeout) s; it must be more than 0 seconds"))
        }
        if let resourceTimeout, !(resourceTimeout > 0) {
            throw invalid(
                .invalidTimeout(
                    "the resource timeout is \(resourceTimeout) s; it must be more than 0 seconds"))
        }

        var request = URLRequest(url: url)
        // GET is URLRequest's default, and setting the method costs a normalization pass on Linux.
        if method != .get { request.httpMethod = method.rawValue }
        request.timeoutInterval = min(timeout, .longestTimeout)
        request.cachePolicy = cachePolicy(realm: realm, override: override, crudMethods: crudMethods)
        if !headers.isEmpty { request.allHTTPHeaderFields = headers.dictionary }
        request.httpBody = body

        var prepared = PreparedRequest(
            backendRequest: BackendRequest(
                urlRequest: request, endpoint: draft.endpoint, crudMethod: draft.verb.crudMethod,
                sampleData: draft.sampleData,
                redaction: override.map { realm.redaction.union($0.redaction) } ?? realm.redaction,
                bodyFile: bodyFile, download: draft.download),
            backend: override?.backendOverride ?? realm.backend,
            callbackQueue: override?.callbackQueue ?? realm.callbackQueue,
            validStatusCodes: override?.validStatusCodes
                ?? (draft.validStatusCodes.isInherited
                    ? realm.validStatusCodes ?? .successful : draft.validStatusCodes),
            middleware: middleware(realm: realm, draft: draft, override: override),
            errorBody: override?.errorBody ?? draft.errorBody ?? realm.errorBody,
            resourceTimeout: resourceTimeout.map { min($0, .longestTimeout) }
        )
        prepared.backendRequest.maxResponseSize = override?.maxResponseSize ?? realm.maxResponseSize
        return prepared
    }

    private static func middleware(
        realm: RealmConfiguration, draft: RequestDraft, override: RealmConfiguration?
    )
        -> [any Middleware]
    {
        // Downloads go to a file of their own, so they are neither cached in memory nor shared with others.
        let coalescer = draft.download == nil ? override?.coalescer ?? realm.coalescer : nil
        let cache = draft.download == nil ? override?.cache ?? realm.cache : nil
        guard
            !draft.middleware.isEmpty || !(override?.middleware.isEmpty ?? true) || coalescer != nil
                || cache != nil
        else { return realm.middleware }
        var chain = realm.middleware + draft.middleware + (override?.middleware ?? [])
        if let cache { chain.append(CacheMiddleware(cache: cache)) }
        if let coalescer { chain.append(coalescer) }
        return chain
    }

    private static func appendQuery(
        _ parameters: [String: Any], _ encoding: ParameterEncoding, to query: String?
    )
        throws -> String
    {
        var writer = QueryWriter(encoding)
        try writer.write(parameters)
        let written = String(decoding: writer.bytes, as: UTF8.self)
        guard let query, !query.isEmpty else { return written }
        return written.isEmpty ? query : query + "&" + written
    }

    private static func cachePolicy(
        realm: RealmConfiguration, override: RealmConfiguration?, crudMethods: [CRUDMethod]
    ) -> URLRequest.CachePolicy {
        func specific(_ configuration: RealmConfiguration) -> URLRequest.CachePolicy? {
            crudMethods.reversed().lazy.compactMap { configuration.crudCachePolicies[$0] }.first
        }
        if let override, let policy = specific(override) ?? override.globalCachePolicy { return policy }
        return specific(realm) ?? realm.globalCachePolicy ?? .useProtocolCachePolicy
    }
}

extension RequestDraft.Verb {
    var crudMethod: CRUDMethod? {
        if case let .crud(crud) = self { return crud }
        return nil
    }
}

