import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension SwiftyServiceProtocol {
    /// Sends the request; `completion` runs exactly once, also after ``RequestHandle/cancel()``.
    ///
    /// It runs on the realm's callback queue if one is set, otherwise wherever the backend answers —
    /// possibly before this method returns (immediate stubs, requests that could not be built).
    @discardableResult
    public func request(completion: SwiftyServiceCallBackType) -> RequestHandle {
        send() { Self.deliver($0, to: completion) }
    }

    /// Sends the request and returns the response; cancelling the task cancels the request.
    /// - Throws: ``ServiceError`` only.
    public func request() async throws -> Response {
        try await prepare().response()
    }

    /// Sends the request and decodes the JSON body into `type`, after the status has been validated, with
    /// `decoder` or else the endpoint's or realm's. ``returning(_:atKeyPath:)`` names the type once, where
    /// the endpoint is declared.
    /// - Throws: ``ServiceError`` only; ``ServiceError/decoding(_:underlying:)`` when the body does not decode.
    public func request<T: Decodable>(as type: T.Type, decoder: JSONDecoder? = nil) async throws -> T {
        let prepared = try prepare()
        let response = try await prepared.response()
        return try response.decode(
            type, atKeyPath: nil, decoder: decoder ?? prepared.decoder, endpoint: self)
    }

    /// Sends the request and returns the response, reporting upload and download progress on the way:
    /// at most every 50 ms per direction, never backwards, and a final 100% before the response. (Named
    /// apart from `request` so that `request { result in }` keeps meaning the callback form.)
    /// - Throws: ``ServiceError`` only.
    public func transfer(progress: @escaping @Sendable (TransferProgress) -> Void) async throws -> Response {
        try await prepare(progress: progress).response()
    }

    /// Sends the request, reporting progress as ``transfer(progress:)`` does; `completion` runs exactly once,
    /// after the last progress report.
    @discardableResult
    public func transfer(
        progress: @escaping @Sendable (TransferProgress) -> Void, completion: SwiftyServiceCallBackType
    ) -> RequestHandle {
        send(progress: progress) { Self.deliver($0, to: completion) }
    }

    /// Starts the request and hands back its progress as an `AsyncStream` and its response to await.
    ///
    /// ```swift
    /// let transfer = Files.archive(id: 7, to: url).transfer()
    /// for await step in transfer.progress { print(step) }   // ends when the request does
    /// let response = try await transfer.response
    /// ```
    public func transfer() -> TransferTask {
        TransferTask { progress in
            Result { () throws(ServiceError) in try prepare(progress: progress) }
        }
    }

    /// The `URLRequest` that ``request()`` would send now, for inspection; nothing is sent.
    /// - Throws: ``ServiceError/invalidRequest(_:method:url:)`` when it cannot be built.
    public func urlRequest() throws -> URLRequest {
        try prepare().urlRequest
    }

    /// This endpoint with one-off settings on top of its realm and itself, for the next request only.
    ///
    /// ```swift
    /// try await UserService.info(uid: 42)
    ///     .override { configuration in configuration.setTimeout(5) }
    ///     .request()
    /// ```
    /// The configuration starts empty; what is set there wins over the realm and the endpoint.
    public func override(_ configure: (inout RealmConfiguration) -> Void) -> OverriddenEndpoint<Self> {
        var configuration = RealmConfiguration()
        configure(&configuration)
        return OverriddenEndpoint(endpoint: self, configuration: configuration)
    }

    func send(
        progress: (@Sendable (TransferProgress) -> Void)? = nil,
        delivering delivery: @escaping Exchange.Waiter
    ) -> RequestHandle {
        do {
            return try prepare(progress: progress).start(delivering: delivery)
        } catch {
            return failed(error, delivering: delivery)
        }
    }

    /// Sends the request; `delivery` gets the outcome and the decoder typed responses are read with.
    func send(
        delivering delivery: @escaping @Sendable (Exchange.Outcome, JSONDecoder?) -> Void
    ) -> RequestHandle {
        do {
            let prepared = try prepare()
            let decoder = prepared.decoder
            return prepared.start { delivery($0, decoder) }
        } catch {
            return failed(error) { delivery($0, nil) }
        }
    }

    /// Streams the request to `chunk`; `delivery` gets the outcome once the body has ended.
    func send(
        streaming chunk: @escaping @Sendable (Data) -> Void,
        delivering delivery: @escaping @Sendable (Exchange.Outcome, JSONDecoder?) -> Void
    ) -> RequestHandle {
        do {
            return try prepare().startStream(chunk: chunk) { delivery($0, nil) }
        } catch {
            return failed(error) { delivery($0, nil) }
        }
    }

    /// A request that could not be built: `delivery` hears of `error` on the callback queue it would have had.
    private func failed(_ error: ServiceError, delivering delivery: @escaping Exchange.Waiter)
        -> RequestHandle
    {
        let queue =
            oneOffLayers.last(where: { $0.callbackQueue != nil })?.callbackQueue
            ?? realm.configuration.callbackQueue
        return Exchange.failed(error, delivering: delivery, on: queue)
    }

    /// The one-off settings this endpoint carries: none, unless it is an ``OverriddenEndpoint``.
    private var oneOffLayers: [Settings] { _oneOffSettings?.layers ?? [] }

    func prepare(progress: (@Sendable (TransferProgress) -> Void)? = nil) throws(ServiceError)
        -> PreparedRequest
    {
        let realm = realm
        var snapshot = realm.configuration
        let baseURL = baseURL
        // The default `baseURL` reads the realm again; if the realm changed in between, build on the
        // newer snapshot rather than mixing two versions of it.
        if baseURL != snapshot.baseURL {
            let newer = realm.configuration
            if newer.baseURL == baseURL { snapshot = newer }
        }
        let oneOff = _oneOffSettings
        let draft = draft(
            base: baseURL != snapshot.baseURL ? baseURL.map(BaseURL.init) : nil,
            builtFrom: oneOff?.underlyingEndpoint ?? self)
        return try RequestBuilder.prepare(
            draft, realm: snapshot, overrides: oneOff?.layers ?? [],
            progress: progress.map { ProgressThrottle(handler: $0) })
    }

    /// What this endpoint declares, with `base` when it differs from its realm's.
    private func draft(base: BaseURL?, builtFrom endpoint: any SwiftyServiceProtocol) -> RequestDraft {
        var draft = RequestDraft(
            verb: .http(method), path: path, parameters: parameters, encoding: parameterEncoding)
        draft.body = body
        draft.sampleData = sampleData
        draft.download = download
        draft.endpoint = endpoint
        // The endpoint's own layer, made in one go; most endpoints set nothing, and share the empty one.
        let (headers, middleware, errorBody, decoder, codes) = (
            headers, middleware, errorBody, decoder, validStatusCodes
        )
        guard
            base != nil || headers != nil || !middleware.isEmpty || errorBody != nil || decoder != nil
                || !codes.isInherited
        else { return draft }
        var layer = Settings.Values()
        layer.base = base
        if let headers { layer.headers = HeaderFields(headers) }
        layer.middleware = middleware
        layer.errorBody = errorBody
        layer.decoder = decoder
        if !codes.isInherited { layer.validStatusCodes = codes }
        draft.layer = Settings(layer)
        return draft
    }
}

/// The one-off settings an ``OverriddenEndpoint`` carries, read when its request is built.
@_documentation(visibility: internal) public struct _OneOffSettings: Sendable {
    /// The one-off layers, oldest first.
    let layers: [Settings]
    /// The endpoint under the overrides, as middleware and backends see it.
    let underlyingEndpoint: any SwiftyServiceProtocol
}

/// An endpoint with one-off settings, made by ``SwiftyServiceProtocol/override(_:)``: it is an endpoint
/// itself, so every way to send one (`request`, `transfer`, `urlRequest`…) sends it with those settings,
/// and overriding it again layers more settings on top.
public struct OverriddenEndpoint<Endpoint: SwiftyServiceProtocol>: SwiftyServiceProtocol {
    /// The callback shape of the endpoint underneath.
    public typealias SwiftyServiceCallBackType = Endpoint.SwiftyServiceCallBackType

    /// The endpoint underneath.
    public let endpoint: Endpoint
    /// The one-off settings.
    public let configuration: RealmConfiguration

    /// The endpoint's realm.
    public var realm: ServiceRealm { endpoint.realm }
    /// The endpoint's base URL.
    public var baseURL: URL? { endpoint.baseURL }
    /// The endpoint's path.
    public var path: String { endpoint.path }
    /// The endpoint's method.
    public var method: HTTPMethod { endpoint.method }
    /// The endpoint's parameters.
    public var parameters: [String: Any]? { endpoint.parameters }
    /// The endpoint's parameter encoding.
    public var parameterEncoding: ParameterEncoding { endpoint.parameterEncoding }
    /// The endpoint's body.
    public var body: RequestBody? { endpoint.body }
    /// The endpoint's headers.
    public var headers: HTTPHeaderDictionary? { endpoint.headers }
    /// The endpoint's sample data.
    public var sampleData: Data { endpoint.sampleData }
    /// The endpoint's valid statuses.
    public var validStatusCodes: StatusCodes { endpoint.validStatusCodes }
    /// The endpoint's middleware.
    public var middleware: [any Middleware] { endpoint.middleware }
    /// The endpoint's error body.
    public var errorBody: ErrorBody? { endpoint.errorBody }
    /// The endpoint's download destination.
    public var download: DownloadDestination? { endpoint.download }
    /// The endpoint's decoder.
    public var decoder: JSONDecoder? { endpoint.decoder }

    /// Hands a result to a callback of the endpoint's shape.
    public static func deliver(
        _ result: Result<Response, ServiceError>, to callback: SwiftyServiceCallBackType
    ) {
        Endpoint.deliver(result, to: callback)
    }

    /// The settings of this override, on top of those of the endpoint's own overrides.
    @_documentation(visibility: internal) public var _oneOffSettings: _OneOffSettings? {
        let inner = endpoint._oneOffSettings
        return _OneOffSettings(
            layers: (inner?.layers ?? []) + [configuration.settings],
            underlyingEndpoint: inner?.underlyingEndpoint ?? endpoint)
    }
}
