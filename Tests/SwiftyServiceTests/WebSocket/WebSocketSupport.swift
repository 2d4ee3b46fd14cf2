import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The WebSocket servers `scripts/test` starts (Tests/Servers/ws_server.py, ws_misbehaving_server.py).
enum WebSocketServers {
    static func url(_ variable: String) throws -> URL {
        guard let value = ProcessInfo.processInfo.environment[variable], let url = URL(string: value) else {
            throw SetupError(description: "\(variable) is not set: run the tests with scripts/test")
        }
        return url
    }

    /// A realm on CurlBackend whose base URL is the server at `variable`.
    static func realm(_ variable: String = "WS_URL") throws -> ServiceRealm {
        uniqueRealm("ws").setBaseURL(try url(variable)).use(try CurlBackend()).setTimeout(30)
    }

    /// How many handshakes with `id` in their query each listener of ws_server.py has seen ("plain", "tls").
    static func handshakeCounts(id: String) async throws -> [String: Int] {
        // The server counts as the requests arrive: a moment for a late one.
        try await Task.sleep(for: .milliseconds(300))
        var components = URLComponents(url: try url("WS_URL"), resolvingAgainstBaseURL: false)!
        components.path = "/count"
        components.queryItems = [URLQueryItem(name: "id", value: id)]
        let data = try Data(contentsOf: components.url!)
        return try JSONDecoder().decode([String: Int].self, from: data)
    }

    /// What ws_misbehaving_server.py recorded of the connection with `id`: the client's close code, how
    /// many bytes it sent after the handshake, and how many bytes of frames the server got to send.
    static func report(_ id: String) async throws -> (closeCode: Int?, bytes: Int, sent: Int) {
        struct Report: Decodable {
            let close_code: Int?
            let bytes: Int
            let sent: Int
        }
        // The server records as the bytes arrive: a moment for the last ones.
        try await Task.sleep(for: .milliseconds(300))
        var components = URLComponents(url: try url("WS_MISBEHAVING_URL"), resolvingAgainstBaseURL: false)!
        components.path = "/report"
        components.queryItems = [URLQueryItem(name: "id", value: id)]
        let report = try JSONDecoder().decode(Report.self, from: try Data(contentsOf: components.url!))
        return (report.close_code, report.bytes, report.sent)
    }
}

extension ServiceError {
    /// The ``WebSocketError`` this error carries, if it does.
    var webSocketError: WebSocketError? {
        if case let .transport(_, underlying, _) = self { return underlying as? WebSocketError }
        return nil
    }
}

/// Reads every message until the socket ends; the failure, if it ended with one.
func drain(_ socket: WebSocket) async -> (messages: [WebSocketMessage], failure: ServiceError?) {
    var messages: [WebSocketMessage] = []
    do {
        for try await message in socket.messages { messages.append(message) }
        return (messages, nil)
    } catch {
        return (messages, error as? ServiceError)
    }
}
