import Foundation

/// A request's wish to become a WebSocket, carried by its ``BackendRequest``: the handshake to make, the
/// options of the socket, and the place where a backend leaves the socket its `101` answer opened.
final class WebSocketUpgrade: Sendable {
    let handshake: WebSocketHandshake
    let options: WebSocketOptions
    private let opened = Locked<(any WebSocketChannel)?>.make(nil)
    private let observer = Locked<(@Sendable (WebSocketActivity) -> Void)?>.make(nil)

    init(handshake: WebSocketHandshake, options: WebSocketOptions) {
        self.handshake = handshake
        self.options = options
    }

    /// Reports what the socket does to `report` from the moment it is deposited.
    func observe(_ report: @escaping @Sendable (WebSocketActivity) -> Void) {
        observer.withLock { $0 = report }
    }

    /// Keeps the socket an attempt opened; one opened by an earlier attempt (set aside by a middleware) closes.
    func deposit(_ opened: any WebSocketChannel) {
        let channel = observer.withLock { $0 }.map { ObservedWebSocketChannel(opened, report: $0) } ?? opened
        let earlier = self.opened.withLock { slot in
            defer { slot = channel }
            return slot
        }
        earlier?.abandon()
    }

    /// The socket, for the one caller that takes it.
    func take() -> (any WebSocketChannel)? {
        opened.withLock { slot in
            defer { slot = nil }
            return slot
        }
    }

    deinit { take()?.abandon() }
}
