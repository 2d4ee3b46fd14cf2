import Foundation

/// A socket whose traffic is reported as it happens (``BackendRequest/observeWebSocket(_:)``), for recorders.
final class ObservedWebSocketChannel: WebSocketChannel, Sendable {
    private let channel: any WebSocketChannel
    private let report: @Sendable (WebSocketActivity) -> Void
    /// Set once the app closes or the socket ends: what comes after is not the server's doing, and the end
    /// is reported once.
    private let state = Locked<(closedByApp: Bool, ended: Bool)>.make((false, false))

    init(_ channel: any WebSocketChannel, report: @escaping @Sendable (WebSocketActivity) -> Void) {
        self.channel = channel
        self.report = report
    }

    var subprotocol: String? { channel.subprotocol }
    var closure: (code: WebSocketCloseCode?, reason: String)? { channel.closure }
    var compression: WebSocketCompression? { channel.compression }

    func send(_ message: WebSocketMessage) async throws {
        try await channel.send(message)
        report(.step(.expect(message)))
    }

    func receive() async throws -> WebSocketMessage? {
        do {
            if let message = try await channel.receive() {
                report(.step(.receive(message)))
                return message
            }
        } catch let error as WebSocketError {
            end(with: .fail(error))
            throw error
        }
        let closedByServer = state.withLock { !$0.closedByApp }
        if closedByServer, let closure = channel.closure {
            end(with: .close(closure.code ?? .noStatusReceived, reason: closure.reason))
        } else {
            end(with: nil)
        }
        return nil
    }

    func close(code: WebSocketCloseCode, reason: String) async {
        state.withLock { $0.closedByApp = true }
        await channel.close(code: code, reason: reason)
        end(with: nil)
    }

    func abandon() {
        state.withLock { $0.closedByApp = true }
        channel.abandon()
        end(with: nil)
    }

    /// Reports the last step, if any, and the end, once.
    private func end(with step: WebSocketScript.Step?) {
        let first = state.withLock { state in
            defer { state.ended = true }
            return !state.ended
        }
        guard first else { return }
        if let step { report(.step(step)) }
        report(.ended)
    }
}
