import Foundation
import SwiftyService

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension Cassette {
    /// A WebSocket's conversation after its `101`, in order: replayed as a ``/SwiftyService/WebSocketScript`` in which the
    /// app receives what was received and must send what was sent.
    public struct RecordedWebSocket: Codable, Sendable, Equatable {
        /// The subprotocol the server chose, if any.
        public var subprotocol: String?
        /// What happened, in order.
        public var steps: [RecordedWebSocketStep]

        /// A conversation.
        public init(subprotocol: String? = nil, steps: [RecordedWebSocketStep] = []) {
            self.subprotocol = subprotocol
            self.steps = steps
        }

        /// The script that plays the conversation back.
        public var script: WebSocketScript {
            WebSocketScript(steps: steps.map(\.scriptStep), subprotocol: subprotocol)
        }
    }

    /// One step of a recorded WebSocket: exactly one of its fields is set.
    public struct RecordedWebSocketStep: Codable, Sendable, Equatable {
        /// A message the app received.
        public var received: RecordedMessage?
        /// A message the app sent.
        public var sent: RecordedMessage?
        /// The server's close frame.
        public var close: RecordedClose?
        /// The failure that ended the socket.
        public var failure: RecordedWebSocketFailure?

        /// The step as it was recorded; secret values scrubbed from the messages.
        init(_ step: WebSocketScript.Step, scrubbing scrub: Scrubber) {
            switch step {
            case let .receive(message): received = RecordedMessage(message, scrubbing: scrub)
            case let .expect(message): sent = RecordedMessage(message, scrubbing: scrub)
            case let .close(code, reason): close = RecordedClose(code: code.rawValue, reason: reason)
            case let .fail(error): failure = RecordedWebSocketFailure(error)
            }
        }

        /// The step as a script plays it.
        var scriptStep: WebSocketScript.Step {
            if let received { return .receive(received.message) }
            if let sent { return .expect(sent.message) }
            if let close { return .close(WebSocketCloseCode(rawValue: close.code), reason: close.reason) }
            return .fail(failure?.error ?? .connectionLost("the cassette's step is empty"))
        }
    }

    /// A WebSocket message: `text`, or `binary` in base64.
    public struct RecordedMessage: Codable, Sendable, Equatable {
        /// A text message's text.
        public var text: String?
        /// A binary message's bytes.
        public var binary: Data?

        init(_ message: WebSocketMessage, scrubbing scrub: Scrubber) {
            switch message {
            case let .text(text): self.text = scrub.string(text)
            case let .binary(data): binary = scrub.data(data)
            }
        }

        var message: WebSocketMessage { text.map { .text($0) } ?? .binary(binary ?? Data()) }
    }

    /// A close frame's code and reason.
    public struct RecordedClose: Codable, Sendable, Equatable {
        /// The close code.
        public var code: UInt16
        /// The reason, possibly empty.
        public var reason: String
    }

    /// A ``/SwiftyService/WebSocketError``, by its case and values.
    public struct RecordedWebSocketFailure: Codable, Sendable, Equatable {
        /// The case's name: `protocolViolation`, `messageTooBig`, `pingTimedOut`, `connectionLost`, …
        public var kind: String
        /// The close code, for a protocol violation.
        public var code: UInt16?
        /// The reason or the limit the case carries.
        public var detail: String?

        init(_ error: WebSocketError) {
            switch error {
            case let .handshakeFailed(reason): (kind, detail) = ("handshakeFailed", reason)
            case let .protocolViolation(code, reason): (kind, self.code, detail) = ("protocolViolation", code.rawValue, reason)
            case let .messageTooBig(limit): (kind, detail) = ("messageTooBig", String(limit))
            case .pingTimedOut: kind = "pingTimedOut"
            case let .connectionLost(reason): (kind, detail) = ("connectionLost", reason)
            case let .unsupportedBackend(reason): (kind, detail) = ("unsupportedBackend", reason)
            case .closed: kind = "closed"
            }
        }

        var error: WebSocketError {
            switch kind {
            case "handshakeFailed": .handshakeFailed(detail ?? "")
            case "protocolViolation":
                .protocolViolation(code: WebSocketCloseCode(rawValue: code ?? 1002), reason: detail ?? "")
            case "messageTooBig": .messageTooBig(limit: Int(detail ?? "") ?? 0)
            case "pingTimedOut": .pingTimedOut
            case "unsupportedBackend": .unsupportedBackend(detail ?? "")
            case "closed": .closed
            default: .connectionLost(detail ?? kind)
            }
        }
    }
}

/// A socket's conversation while it is recorded: kept until both its `101` and its end are known.
final class WebSocketTape: @unchecked Sendable {
    private let lock = NSLock()
    private var steps: [WebSocketScript.Step] = []
    private var opened: Cassette.Interaction?
    private var scrubber = Scrubber(secrets: [])
    private var ended = false
    private let finish: @Sendable (Cassette.Interaction) -> Void

    /// A tape that hands its interaction, once whole, to `finish`.
    init(finish: @escaping @Sendable (Cassette.Interaction) -> Void) { self.finish = finish }

    /// Takes what the socket reports.
    func take(_ activity: WebSocketActivity) {
        let whole = lock.withLock { () -> Cassette.Interaction? in
            switch activity {
            case let .step(step): steps.append(step)
            case .ended: ended = true
            }
            return ended ? completed() : nil
        }
        whole.map(finish)
    }

    /// Keeps the handshake's interaction, answered `101`, until the socket ends.
    func open(_ interaction: Cassette.Interaction, scrubbing scrub: Scrubber) {
        let whole = lock.withLock { () -> Cassette.Interaction? in
            opened = interaction
            scrubber = scrub
            return ended ? completed() : nil
        }
        whole.map(finish)
    }

    private func completed() -> Cassette.Interaction? {
        guard var interaction = opened else { return nil }
        opened = nil
        interaction.webSocket = Cassette.RecordedWebSocket(
            subprotocol: interaction.response?.headers.first { $0.key.lowercased() == "sec-websocket-protocol" }?.value,
            steps: steps.map { Cassette.RecordedWebSocketStep($0, scrubbing: scrubber) })
        return interaction
    }
}

extension RecordingBackend {
    /// Whether the wrapped backend opens WebSockets: the recorder records their messages.
    public var opensWebSockets: Bool { backend.opensWebSockets }

    /// Sends a handshake and records it with its socket's conversation once the socket ends; a handshake that
    /// is not answered `101` is recorded at once, as any request.
    func sendHandshake(
        _ request: BackendRequest, completion: @escaping @Sendable (Result<Response, any Error>) -> Void
    ) -> BackendTask {
        let redaction = redaction.union(request.redaction)
        let tape = WebSocketTape { [self] in record($0) }
        request.observeWebSocket { tape.take($0) }
        return backend.send(request) { [self] result in
            let interaction = Cassette.Interaction(request, result, redaction: redaction)
            if case let .success(response) = result, response.statusCode == 101 {
                tape.open(interaction, scrubbing: Scrubber(secrets: redaction.secretValues(in: request.urlRequest)))
            } else if !Self.isCancellation(result) {
                record(interaction)
            }
            completion(result)
        }
    }
}
