import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An open WebSocket (RFC 6455), opened by an endpoint's ``SwiftyServiceProtocol/webSocket(subprotocols:options:)``.
///
/// Read ``messages`` with `for try await`; the socket is read only as fast as they are taken. ``send(_:)``
/// waits while more than the send buffer is waiting for the connection. Close with ``close(code:reason:)``; a socket let go
/// of closes with 1001 (going away). Failures are ``ServiceError/transport(_:underlying:attempts:)`` with a
/// ``WebSocketError``.
public final class WebSocket: Sendable {
    /// The server's `101 Switching Protocols` answer to the handshake.
    public let response: Response
    let channel: any WebSocketChannel

    init(channel: any WebSocketChannel, response: Response) {
        self.channel = channel
        self.response = response
    }

    deinit { channel.abandon() }

    /// The subprotocol the server chose among those offered, if any.
    public var subprotocol: String? { channel.subprotocol }

    /// The `permessage-deflate` parameters the server agreed to (``WebSocketOptions/compression``), or `nil`
    /// when messages go uncompressed both ways.
    public var compression: WebSocketCompression? { channel.compression }

    /// The code of the server's close frame, once it has sent one (`nil` before, or when it carried none).
    public var closeCode: WebSocketCloseCode? { channel.closure?.code }

    /// The reason in the server's close frame, once it has sent one.
    public var closeReason: String? { channel.closure?.reason }

    /// The messages as they arrive; the sequence ends after the close handshake, and throws
    /// ``ServiceError`` (with a ``WebSocketError``) after the messages that came before a failure.
    public var messages: Messages { Messages(socket: self) }

    /// Sends a message; returns once it is queued within the send buffer (256 KiB), or else once the
    /// connection has taken all of it — so a sender never outruns the network by more than the buffer.
    /// A failure to write a queued message ends the socket: the reader and the next `send` see it.
    /// - Throws: ``ServiceError/transport(_:underlying:attempts:)`` with ``WebSocketError/closed`` after a close.
    public func send(_ message: WebSocketMessage) async throws {
        do {
            try await channel.send(message)
        } catch {
            throw failure(error)
        }
    }

    /// Sends `value` as a JSON text message.
    public func send<Value: Encodable>(json value: Value, encoder: JSONEncoder = JSONEncoder()) async throws {
        let data: Data
        do {
            data = try encoder.encode(value)
        } catch {
            throw ServiceError.invalidRequest(
                .unencodableBody("\(error)"), method: .get, url: (response.request.url?.absoluteString ?? "?"))
        }
        try await send(.text(String(decoding: data, as: UTF8.self)))
    }

    /// The next message, or `nil` once the socket is closed.
    public func receive() async throws -> WebSocketMessage? {
        do {
            return try await channel.receive()
        } catch {
            throw failure(error)
        }
    }

    /// The next message decoded from JSON (text or binary), or `nil` once the socket is closed.
    /// - Throws: ``ServiceError/decoding(_:underlying:)`` for a message that is not a `Value`.
    public func receive<Value: Decodable>(json type: Value.Type, decoder: JSONDecoder = JSONDecoder()) async throws
        -> Value?
    {
        guard let message = try await receive() else { return nil }
        let data =
            switch message {
            case let .text(text): Data(text.utf8)
            case let .binary(data): data
            }
        do {
            return try decoder.decode(type, from: data)
        } catch {
            throw ServiceError.decoding(response, underlying: error)
        }
    }

    /// Closes the socket: sends a close frame with `code` and `reason`, and returns once the server has
    /// answered and ended the connection, or the options' close timeout has passed.
    public func close(code: WebSocketCloseCode = .normalClosure, reason: String = "") async {
        await channel.close(code: code, reason: reason)
    }

    /// The callback form of ``messages``: `message` gets each message in order, then `end` runs exactly once —
    /// with `nil` after the close handshake, or the failure. Both run on a task's thread.
    public func receiveMessages(
        _ message: @escaping @Sendable (WebSocketMessage) -> Void,
        end: @escaping @Sendable (ServiceError?) -> Void
    ) {
        Task {
            do {
                while let next = try await receive() { message(next) }
                end(nil)
            } catch {
                end(error as? ServiceError ?? failure(error))
            }
        }
    }

    /// The callback form of ``send(_:)``: `completion` runs once, with `nil` when the connection took the message.
    public func send(_ message: WebSocketMessage, completion: @escaping @Sendable (ServiceError?) -> Void) {
        Task {
            do {
                try await send(message)
                completion(nil)
            } catch {
                completion(error as? ServiceError ?? failure(error))
            }
        }
    }

    private func failure(_ error: any Error) -> ServiceError {
        if error is CancellationError { return .cancelled(response.request) }
        return .transport(response.request, underlying: error)
    }

    /// The messages of a ``WebSocket`` as they arrive.
    public struct Messages: AsyncSequence, Sendable {
        /// A message.
        public typealias Element = WebSocketMessage
        let socket: WebSocket

        /// Reads the socket's next message each time.
        public struct AsyncIterator: AsyncIteratorProtocol {
            let socket: WebSocket

            /// The next message, or `nil` once the socket is closed.
            public mutating func next() async throws -> WebSocketMessage? { try await socket.receive() }
        }

        /// An iterator over the socket's messages.
        public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(socket: socket) }
    }
}
