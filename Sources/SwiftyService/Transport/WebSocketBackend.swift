/// Backends that open WebSockets themselves from a handshake request (``BackendRequest/webSocketUpgrade``).
protocol WebSocketBackend: NetworkBackend {}

extension CurlBackend: WebSocketBackend {}

extension StubBackend: WebSocketBackend {}
