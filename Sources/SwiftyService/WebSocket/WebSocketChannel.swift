import Foundation

/// What a ``WebSocket`` talks to: the engine over a real connection, or a stub's script.
protocol WebSocketChannel: AnyObject, Sendable {
    /// The subprotocol the server chose, if any.
    var subprotocol: String? { get }
    /// Sends one message; returns once it is queued within the send buffer, or else written.
    /// - Throws: ``WebSocketError``.
    func send(_ message: WebSocketMessage) async throws
    /// The next message, or `nil` once the socket is closed and every message before the close was read.
    /// - Throws: ``WebSocketError`` after the messages that came before the failure.
    func receive() async throws -> WebSocketMessage?
    /// Starts the close handshake with `code` and `reason` and returns once the connection has ended.
    func close(code: WebSocketCloseCode, reason: String) async
    /// Closes with 1001 (going away) without waiting: for a socket nobody holds any more.
    func abandon()
    /// The close frame the server sent, once it has (its code `nil` when it carried none).
    var closure: (code: WebSocketCloseCode?, reason: String)? { get }
    /// The `permessage-deflate` parameters the server agreed to, if it did.
    var compression: WebSocketCompression? { get }
}

extension WebSocketChannel {
    /// No compression: a scripted socket, or one whose platform handles compression itself.
    var compression: WebSocketCompression? { nil }
}

/// The bytes of a connection, read and written without blocking, for ``WebSocketEngine``.
protocol WebSocketByteStream: AnyObject {
    /// The descriptor to wait on for reading and writing.
    var descriptor: Int32 { get }
    /// Writes some of `bytes`: how many were taken, 0 when the connection cannot take more now.
    func write(_ bytes: UnsafeRawBufferPointer) throws -> Int
    /// Reads into `buffer`: how many bytes came, 0 at the end of the stream, `nil` when none is there now.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int?
    /// Ends the connection; called once, on the engine's thread.
    func shutdown()
    /// Whether a read that gave fewer bytes than asked left none behind: true of a plain socket, not of TLS, whose
    /// library may hold bytes it decrypted that the socket no longer shows.
    var drainsInOneRead: Bool { get }
}
