// Apple platforms only: URLSessionWebSocketTask. On Linux it needs a libcurl built with WebSocket support,
// which Debian's is not, so there URLSessionBackend refuses a WebSocket before sending anything
// (EndpointWebSocket.swift) and CurlBackend opens it instead. This file cannot be compiled on the Linux
// machine the package is developed on.
#if canImport(Darwin)
import Foundation

extension URLSessionBackend: WebSocketBackend {
    /// Opens the WebSocket with a `URLSessionWebSocketTask`, which makes its own handshake; answers once the
    /// socket is open (its first pong) or with the refusal's status.
    func openWebSocket(
        _ request: BackendRequest, upgrade: WebSocketUpgrade,
        completion: @escaping @Sendable (Result<Response, any Error>) -> Void
    ) -> BackendTask {
        // The task's connection is not made under the realm's TLS policy: fail closed rather than connect
        // without its roots or pins.
        guard request.tlsPolicy == nil else {
            completion(
                .failure(
                    WebSocketError.unsupportedBackend(
                        "URLSessionBackend does not apply TLS policies to WebSockets: use CurlBackend")))
            return .uncancellable
        }
        var urlRequest = request.urlRequest
        for field in upgrade.handshake.requestHeaders { urlRequest.setValue(nil, forHTTPHeaderField: field.name) }
        if !upgrade.handshake.subprotocols.isEmpty {
            urlRequest.setValue(
                upgrade.handshake.subprotocols.joined(separator: ", "), forHTTPHeaderField: "Sec-WebSocket-Protocol")
        }
        if let url = urlRequest.url, var components = URLComponents(url: url, resolvingAgainstBaseURL: false) {
            components.scheme = components.scheme?.lowercased() == "https" ? "wss" : "ws"
            urlRequest.url = components.url
        }
        let task = session.webSocketTask(with: urlRequest)
        task.maximumMessageSize = upgrade.options.maximumMessageSize
        let once = OnceCompletion(completion)
        task.resume()
        task.sendPing { error in
            let head = task.response as? HTTPURLResponse
            if let error {
                if let head, head.statusCode != 101 {
                    once(.success(Response(request: request.urlRequest, response: head, data: Data())))
                } else {
                    once(.failure(error))
                }
                return
            }
            upgrade.deposit(URLSessionWebSocket(task: task, subprotocol: head?.value(forHTTPHeaderField: "Sec-WebSocket-Protocol")))
            let switched =
                head
                ?? HTTPURLResponse(
                    url: request.urlRequest.url ?? URL(fileURLWithPath: "/"), statusCode: 101, httpVersion: "HTTP/1.1",
                    headerFields: [:])!
            once(.success(Response(request: request.urlRequest, response: switched, data: Data())))
        }
        return BackendTask {
            task.cancel()
            once(.failure(URLError(.cancelled)))
        }
    }
}

/// A WebSocket on a `URLSessionWebSocketTask`: its messages, sends and close; URLSession answers pings.
final class URLSessionWebSocket: WebSocketChannel, @unchecked Sendable {
    private let task: URLSessionWebSocketTask
    let subprotocol: String?

    init(task: URLSessionWebSocketTask, subprotocol: String?) {
        self.task = task
        self.subprotocol = subprotocol
    }

    var closure: (code: WebSocketCloseCode?, reason: String)? {
        guard task.closeCode != .invalid else { return nil }
        return (
            WebSocketCloseCode(rawValue: UInt16(clamping: task.closeCode.rawValue)),
            task.closeReason.map { String(decoding: $0, as: UTF8.self) } ?? ""
        )
    }

    func send(_ message: WebSocketMessage) async throws {
        do {
            switch message {
            case let .text(text): try await task.send(.string(text))
            case let .binary(data): try await task.send(.data(data))
            }
        } catch {
            throw task.closeCode != .invalid ? WebSocketError.closed : WebSocketError.connectionLost("\(error)")
        }
    }

    func receive() async throws -> WebSocketMessage? {
        do {
            switch try await task.receive() {
            case let .string(text): return .text(text)
            case let .data(data): return .binary(data)
            @unknown default: return nil
            }
        } catch {
            if task.closeCode != .invalid { return nil }
            throw WebSocketError.connectionLost("\(error)")
        }
    }

    func close(code: WebSocketCloseCode, reason: String) async {
        task.cancel(
            with: URLSessionWebSocketTask.CloseCode(rawValue: Int(code.rawValue)) ?? .normalClosure,
            reason: Data(reason.utf8))
    }

    func abandon() { task.cancel(with: .goingAway, reason: nil) }
}
#endif
