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

    /// Sends the request and decodes the JSON body into `type`, after the status has been validated.
    /// - Throws: ``ServiceError`` only; ``ServiceError/decoding(_:underlying:)`` when the body does not decode.
    public func request<T: Decodable>(as type: T.Type, decoder: JSONDecoder = JSONDecoder()) async throws -> T
    {
        try await request().decode(type, decoder: decoder)
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
            let queue = oneOffLayers.last(where: { $0.callbackQueue != nil })?.callbackQueue
                ?? realm.configuration.callbackQueue
            return Exchange.failed(error, delivering: delivery, on: queue)
        }
    }

    /// The one-off settings this endpoint carries: none, unless it is an ``OverriddenEndpoint``.
    private var oneOffLayers: [Settings] { (self as? any OneOffSettings)?.oneOffLayers ?? [] }

    func prepare(progress: (@Sendable (TransferProgress) -> Void)? = nil) throws(ServiceError) -> PreparedRequest {
        let realm = realm
        var snapshot = realm.configuration
        let baseURL = baseURL
        // The default `baseURL` reads the realm again; if the realm changed in between, build on the
        // newer snapshot rather than mixing two versions of it.
        if baseURL != snapshot.baseURL {
            let newer = realm.configuration
            if newer.baseURL == baseURL { snapshot = newer }
        }
        var draft = RequestDraft(verb: .http(method), path: path, parameters: parameters, encoding: parameterEncoding)
        draft.body = body
        draft.sampleData = sampleData
        draft.download = download
        let oneOff = self as? any OneOffSettings
        draft.endpoint = oneOff?.underlyingEndpoint ?? self
        if baseURL != snapshot.baseURL { draft.layer.base = baseURL.map(BaseURL.init) }
        if let headers { draft.layer.headers = HeaderFields(headers) }
        draft.layer.middleware = middleware
        draft.layer.errorBody = errorBody
        let codes = validStatusCodes
        if !codes.isInherited { draft.layer.validStatusCodes = codes }
        return try RequestBuilder.prepare(
            draft, realm: snapshot, overrides: oneOff?.oneOffLayers ?? [],
            progress: progress.map { ProgressThrottle(handler: $0) })
    }
}

/// An endpoint that carries one-off settings (``OverriddenEndpoint``), read when its request is built.
protocol OneOffSettings {
    /// The one-off layers, oldest first.
    var oneOffLayers: [Settings] { get }
    /// The endpoint under the overrides, as middleware and backends see it.
    var underlyingEndpoint: any SwiftyServiceProtocol { get }
}

/// An endpoint with one-off settings, made by ``SwiftyServiceProtocol/override(_:)``: it is an endpoint
/// itself, so every way to send one (`request`, `transfer`, `urlRequest`…) sends it with those settings,
/// and overriding it again layers more settings on top.
public struct OverriddenEndpoint<Endpoint: SwiftyServiceProtocol>: SwiftyServiceProtocol, OneOffSettings {
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

    /// Hands a result to a callback of the endpoint's shape.
    public static func deliver(_ result: Result<Response, ServiceError>, to callback: SwiftyServiceCallBackType) {
        Endpoint.deliver(result, to: callback)
    }

    var oneOffLayers: [Settings] {
        ((endpoint as? any OneOffSettings)?.oneOffLayers ?? []) + [configuration.settings]
    }

    var underlyingEndpoint: any SwiftyServiceProtocol {
        (endpoint as? any OneOffSettings)?.underlyingEndpoint ?? endpoint
    }
}
