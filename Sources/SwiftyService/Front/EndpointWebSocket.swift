import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension SwiftyServiceProtocol {
    /// Opens a WebSocket to this endpoint's URL: the handshake is a request of the realm like any other
    /// (base URL, path and query, headers, middleware — token authentication and its refresh on a 401 —,
    /// cookies, TLS policy, events), answered with `101 Switching Protocols`.
    ///
    /// ```swift
    /// let socket = try await Chat.room("lobby").webSocket(subprotocols: ["chat.v1"])
    /// try await socket.send(.text("hello"))
    /// for try await message in socket.messages { print(message) }
    /// ```
    /// The endpoint's `http:`/`https:` URL stands for `ws:`/`wss:`. Any answer other than `101` throws
    /// ``ServiceError/unacceptableStatusCode(_:errorBody:)`` with its body; a `101` that is not a valid
    /// upgrade throws ``ServiceError/transport(_:underlying:attempts:)`` with a ``WebSocketError``.
    /// Opens on ``CurlBackend`` (any platform), ``URLSessionBackend`` on Apple platforms (without a TLS policy)
    /// and ``StubBackend`` (a scripted socket); elsewhere it fails before sending anything.
    /// - Throws: ``ServiceError`` only.
    public func webSocket(subprotocols: [String] = [], options: WebSocketOptions = WebSocketOptions())
        async throws -> WebSocket
    {
        try await prepare().openWebSocket(subprotocols: subprotocols, options: options)
    }

    /// The callback form of ``webSocket(subprotocols:options:)``: `completion` runs once, on a task's thread.
    public func webSocket(
        subprotocols: [String] = [], options: WebSocketOptions = WebSocketOptions(),
        completion: @escaping @Sendable (Result<WebSocket, ServiceError>) -> Void
    ) {
        let prepared: PreparedRequest
        do {
            prepared = try prepare()
        } catch {
            return completion(.failure(error))
        }
        Task {
            do {
                completion(.success(try await prepared.openWebSocket(subprotocols: subprotocols, options: options)))
            } catch {
                completion(.failure(error as? ServiceError ?? ServiceError(error, request: prepared.urlRequest)))
            }
        }
    }
}

extension PreparedRequest {
    /// The call of this request as a WebSocket handshake, through the same pipeline; the socket its `101`
    /// opened.
    func openWebSocket(subprotocols: [String], options: WebSocketOptions) async throws -> WebSocket {
        guard backend.opensWebSockets else {
            throw ServiceError.transport(
                urlRequest,
                underlying: WebSocketError.unsupportedBackend(
                    "\(type(of: backend)) cannot open WebSockets here: use CurlBackend (or StubBackend in tests)"))
        }
        // Without zlib the client cannot inflate, so it offers no compression rather than fail.
        let compression = Zlib.shared == nil ? nil : options.compression
        let upgrade = WebSocketUpgrade(
            handshake: WebSocketHandshake(subprotocols: subprotocols, compression: compression), options: options)
        var request = backendRequest
        request.urlRequest.httpMethod = "GET"
        request.urlRequest.httpBody = nil
        request.urlRequest.cachePolicy = .reloadIgnoringLocalAndRemoteCacheData
        for field in upgrade.handshake.requestHeaders {
            request.urlRequest.setValue(field.value, forHTTPHeaderField: field.name)
        }
        request.webSocketUpgrade = upgrade
        request.downloadFile = nil
        let handshake = PreparedRequest(
            backendRequest: request, decided: decided,
            chain: MiddlewareChain(middleware: middleware, leadingCache: nil, coalesces: false),
            metricsLog: metricsLog, events: events, progress: nil, resourceTimeout: resourceTimeout, download: nil,
            acceptedStatusCodes: [101], usesCallbackQueue: false)
        let response = try await handshake.response()
        guard let channel = upgrade.take() else {
            throw ServiceError.transport(
                request.urlRequest,
                underlying: WebSocketError.handshakeFailed("the 101 answer came without a socket (from a cache or a middleware)"))
        }
        return WebSocket(
            channel: events.map { MeteredWebSocketChannel(channel, events: $0, request: request.urlRequest) } ?? channel,
            response: response)
    }
}
