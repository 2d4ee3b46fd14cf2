/// Backends that open WebSockets themselves from a handshake request (``BackendRequest/webSocketUpgrade``).
protocol WebSocketBackend: NetworkBackend {}

extension CurlBackend: WebSocketBackend {}

extension StubBackend: WebSocketBackend {}

extension NetworkBackend {
    /// Whether a realm may open WebSockets through this backend: the built-in ones that can say so; a backend
    /// that wraps another (a recorder, a replayer) says what the wrapped one does, or answers handshakes
    /// itself with ``BackendRequest/answerWebSocket(with:)``.
    public var opensWebSockets: Bool { self is any WebSocketBackend }
}

extension BackendRequest {
    /// Whether the request is a WebSocket handshake: a backend that answers it `101` opens the socket too.
    public var isWebSocketHandshake: Bool { webSocketUpgrade != nil }

    /// Answers this handshake with a socket that plays `script`, for a backend that replays or fakes one: call
    /// it before completing with a `101` response. Does nothing when the request is no handshake.
    public func answerWebSocket(with script: WebSocketScript) {
        webSocketUpgrade?.deposit(StubWebSocket(script))
    }

    /// Reports to `observer` every message the socket that answers this handshake receives and sends, the
    /// server's close or the failure, and then its end: for a backend that records. Set it before passing
    /// the request on; does nothing when the request is no handshake.
    public func observeWebSocket(_ observer: @escaping @Sendable (WebSocketActivity) -> Void) {
        webSocketUpgrade?.observe(observer)
    }
}
