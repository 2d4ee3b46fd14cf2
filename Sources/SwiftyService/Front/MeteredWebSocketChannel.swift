import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A socket whose use is counted and whose end is told to the realm's observers once
/// (``RequestEvent/Kind/webSocketEnded(_:)``): when the app's reader gets the end or a failure, when its `close`
/// returns, or when the socket is let go.
final class MeteredWebSocketChannel: WebSocketChannel, Sendable {
    private let channel: any WebSocketChannel
    private let events: EventEmitter
    private let request: URLRequest
    private let opened = DispatchTime.now().uptimeNanoseconds
    private let counts = Locked.make(Counts())

    private struct Counts {
        var messagesSent = 0
        var bytesSent = 0
        var messagesReceived = 0
        var bytesReceived = 0
        var ended = false
    }

    init(_ channel: any WebSocketChannel, events: EventEmitter, request: URLRequest) {
        self.channel = channel
        self.events = events
        self.request = request
    }

    var subprotocol: String? { channel.subprotocol }
    var closure: (code: WebSocketCloseCode?, reason: String)? { channel.closure }
    var compression: WebSocketCompression? { channel.compression }

    func send(_ message: WebSocketMessage) async throws {
        do {
            try await channel.send(message)
        } catch {
            // A send refused because the server closed the socket ends it with that close, not as a failure.
            if !(error is CancellationError) { end(channel.closure == nil ? error : nil) }
            throw error
        }
        counts.withLock { counts in
            counts.messagesSent += 1
            counts.bytesSent += message.byteCount
        }
    }

    func receive() async throws -> WebSocketMessage? {
        let message: WebSocketMessage?
        do {
            message = try await channel.receive()
        } catch {
            // A reader that stopped waiting leaves the socket open.
            if !(error is CancellationError) { end(error) }
            throw error
        }
        guard let message else {
            end(nil)
            return nil
        }
        counts.withLock { counts in
            counts.messagesReceived += 1
            counts.bytesReceived += message.byteCount
        }
        return message
    }

    func close(code: WebSocketCloseCode, reason: String) async {
        await channel.close(code: code, reason: reason)
        end(nil)
    }

    func abandon() {
        channel.abandon()
        end(nil)
    }

    private func end(_ error: (any Error)?) {
        guard
            let counts = counts.withLock({ counts -> Counts? in
                guard !counts.ended else { return nil }
                counts.ended = true
                return counts
            })
        else { return }
        let closure = channel.closure
        events.emit(
            .webSocketEnded(
                WebSocketSummary(
                    closeCode: closure?.code, closeReason: closure?.reason,
                    error: error.map { error in
                        error as? ServiceError ?? .transport(request, underlying: error)
                    },
                    messagesSent: counts.messagesSent, bytesSent: counts.bytesSent,
                    messagesReceived: counts.messagesReceived, bytesReceived: counts.bytesReceived,
                    duration: TimeInterval(DispatchTime.now().uptimeNanoseconds - opened) / 1e9)))
    }
}
