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
        send(override: nil) { Self.deliver($0, to: completion) }
    }

    /// Sends the request and returns the response; cancelling the task cancels the request.
    /// - Throws: ``ServiceError`` only.
    public func request() async throws -> Response {
        try await prepare(override: nil).response()
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
        try await prepare(override: nil, progress: progress).response()
    }

    /// Sends the request, reporting progress as ``transfer(progress:)`` does; `completion` runs exactly once,
    /// after the last progress report.
    @discardableResult
    public func transfer(
        progress: @escaping @Sendable (TransferProgress) -> Void, completion: SwiftyServiceCallBackType
    ) -> RequestHandle {
        send(override: nil, progress: progress) { Self.deliver($0, to: completion) }
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
            do {
                return .success(try prepare(override: nil, progress: progress))
            } catch {
                return .failure(error as! ServiceError)
            }
        }
    }

    /// The `URLRequest` that ``request()`` would send now, for inspection; nothing is sent.
    /// - Throws: ``ServiceError/invalidRequest(_:method:url:)`` when it cannot be built.
    public func urlRequest() throws -> URLRequest {
        try prepare(override: nil).urlRequest
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
        override: RealmConfiguration?, progress: (@Sendable (TransferProgress) -> Void)? = nil,
        delivering delivery: @escaping Exchange.Waiter
    ) -> RequestHandle {
        do {
            return try prepare(override: override, progress: progress).start(delivering: delivery)
        } catch {
            let queue = override?.callbackQueue ?? realm.configuration.callbackQueue
            return Exchange.failed(error as! ServiceError, delivering: delivery, on: queue)
        }
    }

    func prepare(override: RealmConfiguration?, progress: (@Sendable (TransferProgress) -> Void)? = nil)
        throws
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
        let draft = RequestDraft(
            verb: .http(method), base: baseURL == snapshot.baseURL ? nil : baseURL.map(BaseURL.init),
            path: path, parameters: parameters,
            encoding: parameterEncoding, body: body, headers: headers, sampleData: sampleData,
            validStatusCodes: validStatusCodes, middleware: middleware, errorBody: errorBody,
            download: download,
            endpoint: self)
        var prepared = try RequestBuilder.prepare(draft, realm: snapshot, override: override)
        if let progress { prepared.backendRequest.progress = ProgressThrottle(handler: progress) }
        return prepared
    }
}

/// An endpoint with one-off settings, made by ``SwiftyServiceProtocol/override(_:)``; send it as you
/// would send the endpoint.
public struct OverriddenEndpoint<Endpoint: SwiftyServiceProtocol>: Sendable {
    /// The endpoint underneath.
    public let endpoint: Endpoint
    /// The one-off settings.
    public let configuration: RealmConfiguration

    /// Sends the request with the one-off settings; `completion` runs exactly once.
    @discardableResult
    public func request(completion: Endpoint.SwiftyServiceCallBackType) -> RequestHandle {
        endpoint.send(override: configuration) { Endpoint.deliver($0, to: completion) }
    }

    /// Sends the request with the one-off settings and returns the response.
    /// - Throws: ``ServiceError`` only.
    public func request() async throws -> Response {
        try await endpoint.prepare(override: configuration).response()
    }

    /// Sends the request with the one-off settings and decodes the JSON body into `type`.
    /// - Throws: ``ServiceError`` only.
    public func request<T: Decodable>(as type: T.Type, decoder: JSONDecoder = JSONDecoder()) async throws -> T
    {
        try await request().decode(type, decoder: decoder)
    }

    /// ``SwiftyServiceProtocol/transfer(progress:)`` with the one-off settings.
    /// - Throws: ``ServiceError`` only.
    public func transfer(progress: @escaping @Sendable (TransferProgress) -> Void) async throws -> Response {
        try await endpoint.prepare(override: configuration, progress: progress).response()
    }

    /// The `URLRequest` that would be sent, with the one-off settings.
    /// - Throws: ``ServiceError/invalidRequest(_:method:url:)`` when it cannot be built.
    public func urlRequest() throws -> URLRequest {
        try endpoint.prepare(override: configuration).urlRequest
    }

    /// More one-off settings, on top of these.
    public func override(_ configure: (inout RealmConfiguration) -> Void) -> OverriddenEndpoint<Endpoint> {
        var configuration = configuration
        configure(&configuration)
        return OverriddenEndpoint(endpoint: endpoint, configuration: configuration)
    }
}
