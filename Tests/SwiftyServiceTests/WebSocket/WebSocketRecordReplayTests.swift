import Foundation
import SwiftyService
import SwiftyServiceTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A WebSocket recorded by `RecordingBackend` against the `websockets` server (Tests/Servers/ws_server.py) and
/// played back by `ReplayBackend` with no network: the messages both ways, the subprotocol, the close.
@Suite(.timeLimit(.minutes(5))) struct WebSocketRecordReplayTests {
    let temporaryFiles = TemporaryFiles()

    /// A realm on the `websockets` server that records through CurlBackend into `file`.
    private func recordingRealm(into file: URL) throws -> ServiceRealm {
        uniqueRealm("ws-record").setBaseURL(try WebSocketServers.url("WS_URL"))
            .use(try RecordingBackend(recording: try CurlBackend(), to: file)).setTimeout(10)
    }

    private func cassetteFile() -> URL {
        temporaryFiles.uniquePath("ws-cassette").appendingPathComponent("socket.json")
    }

    /// The cassette's steps, each as `sent …`, `received …`, `close …` or `failure …`.
    private func steps(_ file: URL) throws -> [String] {
        let socket = try #require(try Cassette.load(from: file).interactions.first?.webSocket)
        return socket.steps.map { step in
            if let sent = step.sent { return "sent \(sent.text ?? "\(sent.binary?.count ?? 0) bytes")" }
            if let received = step.received {
                return "received \(received.text ?? "\(received.binary?.count ?? 0) bytes")"
            }
            if let close = step.close { return "close \(close.code) \(close.reason)" }
            return "failure \(step.failure?.kind ?? "?")"
        }
    }

    @Test func anEchoIsRecordedAndPlayedBackWithoutTheServer() async throws {
        let file = cassetteFile()
        let base = try WebSocketServers.url("WS_URL")
        let recorder = try RecordingBackend(recording: try CurlBackend(), to: file)
        let recording = uniqueRealm("ws-record").setBaseURL(base).use(recorder).setTimeout(10)
        let live = try await TestEndpoint(recording, "echo").webSocket(subprotocols: ["chat.v2"])
        #expect(live.compression != nil, "a recorded socket still says what the server agreed to")
        try await live.send(.text("héllo"))
        #expect(try await live.receive() == .text("héllo"))
        try await live.send(.binary(Data([0, 1, 2, 255])))
        #expect(try await live.receive() == .binary(Data([0, 1, 2, 255])))
        await live.close(code: .normalClosure, reason: "done")
        // Written once the socket has ended.
        #expect(try await waitUntil(for: 30) { (try? steps(file))?.count == 4 })
        #expect(try steps(file) == ["sent héllo", "received héllo", "sent 4 bytes", "received 4 bytes"])
        #expect(try Cassette.load(from: file).interactions.first?.response?.status == 101)

        // Played back on a realm whose base URL reaches no server.
        let replaying = uniqueRealm("ws-replay").setBaseURL(base).use(try ReplayBackend(cassette: file))
        let replayed = try await TestEndpoint(replaying, "echo").webSocket(subprotocols: ["chat.v2"])
        #expect(replayed.response.statusCode == 101)
        #expect(replayed.subprotocol == live.subprotocol)
        try await replayed.send(.text("héllo"))
        #expect(try await replayed.receive() == .text("héllo"))
        // The app must send what was recorded before it hears the next answer.
        await #expect {
            try await replayed.send(.text("something else"))
        } throws: { error in
            error is ServiceError && "\(error)".contains("the scripted WebSocket expected binary")
        }
        try await replayed.send(.binary(Data([0, 1, 2, 255])))
        #expect(try await replayed.receive() == .binary(Data([0, 1, 2, 255])))
        await replayed.close()
    }

    @Test func theServersCloseIsRecordedAndEndsThePlayback() async throws {
        let file = cassetteFile()
        let base = try WebSocketServers.url("WS_URL")
        let recording = try recordingRealm(into: file)
        let live = try await TestEndpoint(recording, "close", parameters: ["code": 4000, "reason": "bye"]).webSocket()
        #expect(try await live.receive() == nil)
        #expect(live.closeCode == WebSocketCloseCode(rawValue: 4000))
        #expect(try await waitUntil(for: 30) { (try? steps(file)) == ["close 4000 bye"] })

        let replaying = uniqueRealm("ws-replay").setBaseURL(base).use(try ReplayBackend(cassette: file))
        let replayed = try await TestEndpoint(replaying, "close", parameters: ["code": 4000, "reason": "bye"])
            .webSocket()
        #expect(try await replayed.receive() == nil)
        #expect(replayed.closeCode == WebSocketCloseCode(rawValue: 4000))
        #expect(replayed.closeReason == "bye")
    }

    @Test func aRefusedHandshakeIsRecordedAsAnyAnswerAndReplayedAsTheSameError() async throws {
        let file = cassetteFile()
        let base = try WebSocketServers.url("WS_URL")
        let recording = try recordingRealm(into: file)
        await #expect(throws: ServiceError.self) { _ = try await TestEndpoint(recording, "auth").webSocket() }
        let recorded = try #require(try Cassette.load(from: file).interactions.first)
        #expect(recorded.response?.status == 401 && recorded.webSocket == nil)

        let replaying = uniqueRealm("ws-replay").setBaseURL(base).use(try ReplayBackend(cassette: file))
        await #expect {
            _ = try await TestEndpoint(replaying, "auth").webSocket()
        } throws: { error in
            guard case let .unacceptableStatusCode(response, _)? = error as? ServiceError else { return false }
            return response.statusCode == 401
        }
    }

    @Test func theRequestsSecretsAreScrubbedFromTheMessages() async throws {
        let file = cassetteFile()
        let recording = try recordingRealm(into: file).addHeaders(["Authorization": "Bearer s3cret-token"])
        let live = try await TestEndpoint(recording, "echo").webSocket()
        try await live.send(.text("{\"auth\": \"s3cret-token\"}"))
        #expect(try await live.receive() == .text("{\"auth\": \"s3cret-token\"}"))
        await live.close()
        #expect(try await waitUntil(for: 30) { (try? steps(file))?.count == 2 })
        let text = try String(contentsOf: file, encoding: .utf8)
        #expect(!text.contains("s3cret-token"), "\(text)")
    }

    @Test func aReplayOfAHandshakeRecordedWithoutItsMessagesSaysSo() async throws {
        let file = cassetteFile()
        var cassette = Cassette()
        cassette.interactions = [
            Cassette.Interaction(
                request: Cassette.RecordedRequest(method: "GET", url: "http://127.0.0.1:9/echo"),
                response: Cassette.RecordedResponse(status: 101, headers: ["Upgrade": "websocket"]))
        ]
        try cassette.write(to: file)
        let realm = uniqueRealm("ws-replay").setBaseURL(URL(string: "http://127.0.0.1:9")!)
            .use(try ReplayBackend(cassette: file))
        await #expect {
            _ = try await TestEndpoint(realm, "echo").webSocket()
        } throws: { "\($0)".contains("without its messages") }
    }

    @Test func aRecorderOverABackendThatCannotOpenWebSocketsRefusesBeforeSending() async throws {
        let file = cassetteFile()
        /// A backend of an app's own, for plain requests only.
        struct PlainBackend: NetworkBackend {
            let curl: CurlBackend
            func send(
                _ request: BackendRequest, completion: @escaping @Sendable (Result<Response, any Error>) -> Void
            ) -> BackendTask { curl.send(request, completion: completion) }
        }
        #expect(try RecordingBackend(recording: CurlBackend(), to: file).opensWebSockets)
        let recorder = try RecordingBackend(recording: PlainBackend(curl: CurlBackend()), to: file)
        #expect(!recorder.opensWebSockets)
        let realm = uniqueRealm("ws-record").setBaseURL(try WebSocketServers.url("WS_URL")).use(recorder)
        await #expect {
            _ = try await TestEndpoint(realm, "echo").webSocket()
        } throws: { "\($0)".contains("cannot open WebSockets") }
        #expect(recorder.cassette.interactions.isEmpty)
    }
}
