import Foundation

/// How a WebSocket behaves once open: limits, buffering, keep-alive and compression.
public struct WebSocketOptions: Sendable, Hashable {
    /// The largest message accepted, over all of its fragments (default 16 MiB). A larger one closes the
    /// socket with 1009 and fails the reader with ``WebSocketError/messageTooBig(limit:)``.
    public var maximumMessageSize: Int
    /// How many bytes of whole messages may wait for the reader (default 1 MiB): past it the socket is not
    /// read, so a slow reader slows the server down instead of filling memory. One message always fits.
    public var bufferedBytes: Int
    /// How often to ping the server when nothing else is going on; `nil` (the default) sends no pings.
    public var pingInterval: TimeInterval?
    /// How long a ping may wait for its pong before the connection is dropped (default 10 s).
    public var pingTimeout: TimeInterval
    /// How long to wait for the server's close frame and its end of the connection after ours (default 5 s).
    public var closeTimeout: TimeInterval
    /// The compression offered to the server (default ``WebSocketCompression/deflate``); `nil` offers none. Not
    /// offered either where zlib cannot be loaded. ``maximumMessageSize`` applies to messages as inflated.
    public var compression: WebSocketCompression?

    /// Options with the defaults, changed where given.
    public init(
        maximumMessageSize: Int = 16 << 20, bufferedBytes: Int = 1 << 20, pingInterval: TimeInterval? = nil,
        pingTimeout: TimeInterval = 10, closeTimeout: TimeInterval = 5, compression: WebSocketCompression? = .deflate
    ) {
        self.compression = compression
        self.maximumMessageSize = max(1, maximumMessageSize)
        self.bufferedBytes = max(1, bufferedBytes)
        self.pingInterval = pingInterval
        self.pingTimeout = pingTimeout
        self.closeTimeout = closeTimeout
    }
}
