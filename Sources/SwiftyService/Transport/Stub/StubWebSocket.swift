import Foundation

/// A WebSocket that plays a ``WebSocketScript``.
final class StubWebSocket: WebSocketChannel, Sendable {
    private struct State: WaitsForWebSocketMessages {
        var readIndex = 0
        var expectIndex = 0
        var closure: (code: WebSocketCloseCode?, reason: String)?
        var closedByApp = false
        /// How the script ended the socket, once it has: every later read gets the same, as from a real socket.
        var ending: Result<WebSocketMessage?, any Error>?
        var readers = WebSocketReaders()
    }

    private let script: WebSocketScript
    private let state = Locked<State>.make(State())

    init(_ script: WebSocketScript) { self.script = script }

    var subprotocol: String? { script.subprotocol }
    var closure: (code: WebSocketCloseCode?, reason: String)? { state.withLock { $0.closure } }

    private var steps: [WebSocketScript.Step] { script.steps }

    private func isExpect(_ step: WebSocketScript.Step) -> Bool {
        if case .expect = step { return true }
        return false
    }

    /// The next step for readers: a message, the end, or `nil` while an expected message must come first.
    private func nextForReader(_ state: inout State) -> Result<WebSocketMessage?, any Error>? {
        if state.closedByApp { return .success(nil) }
        if let ending = state.ending { return ending }
        while state.readIndex < steps.count, isExpect(steps[state.readIndex]) { state.readIndex += 1 }
        while state.expectIndex < steps.count, !isExpect(steps[state.expectIndex]) { state.expectIndex += 1 }
        guard state.readIndex < steps.count, state.expectIndex > state.readIndex else { return nil }
        let step = steps[state.readIndex]
        state.readIndex += 1
        switch step {
        case let .receive(message): return .success(message)
        case let .close(code, reason):
            state.closure = (code, reason)
            state.readIndex = steps.count
            state.ending = .success(nil)
            return .success(nil)
        case let .fail(error):
            state.readIndex = steps.count
            state.ending = .failure(error)
            return .failure(error)
        case .expect: return nil
        }
    }

    func receive() async throws -> WebSocketMessage? {
        // As on a real socket, a reader that stops waiting takes nothing and the socket stays open.
        try await state.awaitMessage { nextForReader(&$0) }
    }

    func send(_ message: WebSocketMessage) async throws {
        typealias Wake = (reader: WebSocketReaders.Reader, answer: Result<WebSocketMessage?, any Error>)
        let outcome = state.withLock { state -> Result<[Wake], any Error> in
            if state.closedByApp || state.closure != nil { return .failure(WebSocketError.closed) }
            while state.expectIndex < steps.count, !isExpect(steps[state.expectIndex]) {
                state.expectIndex += 1
            }
            var expected: WebSocketMessage?
            if state.expectIndex < steps.count, case let .expect(next) = steps[state.expectIndex] {
                expected = next
            }
            guard expected == message else {
                return .failure(WebSocketScript.Mismatch(expected: expected, sent: message))
            }
            state.expectIndex += 1
            var woken: [Wake] = []
            while !state.readers.isEmpty, let answer = nextForReader(&state) {
                if let reader = state.readers.popFirst() { woken.append((reader, answer)) }
            }
            return .success(woken)
        }
        for wake in try outcome.get() { wake.reader.resume(with: wake.answer) }
    }

    func close(code: WebSocketCloseCode, reason: String) async { end(code: code, reason: reason) }

    func abandon() { end(code: .goingAway, reason: "") }

    private func end(code: WebSocketCloseCode, reason: String) {
        let readers = state.withLock { state in
            if state.closure == nil { state.closure = (code, reason) }
            state.closedByApp = true
            return state.readers.removeAll()
        }
        for reader in readers { reader.resume(returning: nil) }
    }
}
