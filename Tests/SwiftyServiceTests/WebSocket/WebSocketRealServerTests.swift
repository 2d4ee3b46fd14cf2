import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// WebSockets on CurlBackend against the `websockets` package's server (Tests/Servers/ws_server.py): the
/// handshake as a request of the realm, messages both ways, subprotocols, fragments, pings, close codes, TLS.
@Suite(.timeLimit(.minutes(5))) struct WebSocketRealServerTests {
    @Test func textAndBinaryMessagesComeBackFromTheEchoServer() async throws {
        let socket = try await TestEndpoint(try WebSocketServers.realm(), "echo").webSocket()
        #expect(socket.response.statusCode == 101)
        try await socket.send(.text("héllo"))
        #expect(try await socket.receive() == .text("héllo"))
        let bytes = Data((0..<300_000).map { UInt8($0 % 256) })
        try await socket.send(.binary(bytes))
        #expect(try await socket.receive() == .binary(bytes))
        await socket.close(code: .normalClosure, reason: "done")
        #expect(socket.closeCode == .normalClosure)
        #expect(try await socket.receive() == nil)
        await #expect(throws: ServiceError.self) { try await socket.send(.text("after the close")) }
    }

    @Test func theRealmsHeadersCookiesAndMiddlewareReachTheHandshake() async throws {
        let jar = CookieJar()
        let base = try WebSocketServers.url("WS_URL")
        jar.store(setCookieHeaders: ["session=abc123; Path=/"], from: base)
        let realm = try WebSocketServers.realm()
            .addHeaders(["X-Realm": "chat"])
            .useCookies(jar)
            .addMiddleware(TokenAuthentication(initial: AccessToken("good")) { AccessToken("good") })
        let socket = try await TestEndpoint(realm, "headers", parameters: ["room": "lobby"]).webSocket()
        let headers = try #require(try await socket.receive(json: [String: String].self))
        #expect(headers["x-realm"] == "chat")
        #expect(headers["cookie"] == "session=abc123")
        #expect(headers["authorization"] == "Bearer good")
        #expect(headers["sec-websocket-version"] == "13")
        #expect(headers["host"] == "\(base.host!):\(base.port!)")
        await socket.close()
    }

    @Test func aRefusedHandshakeIsTheUsualStatusErrorWithItsBody() async throws {
        let realm = try WebSocketServers.realm()
        await #expect {
            _ = try await TestEndpoint(realm, "auth").webSocket()
        } throws: { error in
            guard case let .unacceptableStatusCode(response, _)? = error as? ServiceError else { return false }
            return response.statusCode == 401 && String(decoding: response.data, as: UTF8.self).contains("token refused")
        }
    }

    @Test func tokenAuthenticationRefreshesAfterA401Handshake() async throws {
        let refreshes = CallbackRecorder<Void>()
        let realm = try WebSocketServers.realm().addMiddleware(
            TokenAuthentication(initial: AccessToken("stale")) {
                refreshes.record(())
                return AccessToken("good")
            })
        let socket = try await TestEndpoint(realm, "auth").webSocket()
        try await socket.send(.text("in"))
        #expect(try await socket.receive() == .text("in"))
        #expect(refreshes.calls.count == 1)
        await socket.close()
    }

    @Test func theServersChoiceOfSubprotocolIsReported() async throws {
        let socket = try await TestEndpoint(try WebSocketServers.realm(), "subprotocol")
            .webSocket(subprotocols: ["chat.v1", "chat.v2"])
        #expect(socket.subprotocol == "chat.v2")
        #expect(try await socket.receive() == .text("chat.v2"))
        await socket.close()
    }

    @Test func fragmentedMessagesArriveWhole() async throws {
        let socket = try await TestEndpoint(try WebSocketServers.realm(), "fragmented").webSocket()
        #expect(try await socket.receive() == .text("Hello, κόσμε"))
        #expect(try await socket.receive() == .binary(Data([0, 1, 2])))
        await socket.close()
    }

    @Test func aLargeMessageArrivesWholeAndOneOverTheLimitFailsWith1009() async throws {
        let size = 5 << 20
        let socket = try await TestEndpoint(try WebSocketServers.realm(), "large", parameters: ["size": size])
            .webSocket()
        #expect(try await socket.receive() == .binary(Data((0..<size).map { UInt8($0 % 251) })))
        await socket.close()

        let limited = try await TestEndpoint(try WebSocketServers.realm(), "large", parameters: ["size": size])
            .webSocket(options: WebSocketOptions(maximumMessageSize: 1 << 20))
        let (messages, failure) = await drain(limited)
        #expect(messages.isEmpty)
        #expect(failure?.webSocketError == .messageTooBig(limit: 1 << 20))
    }

    @Test func aServersPingIsAnsweredWithAPong() async throws {
        let socket = try await TestEndpoint(try WebSocketServers.realm(), "ping").webSocket()
        #expect(try await socket.receive() == .text("pong received"))
        await socket.close()
    }

    @Test func theServersCloseCodeAndReasonAreReported() async throws {
        let socket = try await TestEndpoint(
            try WebSocketServers.realm(), "close", parameters: ["code": 4001, "reason": "bye now"]
        ).webSocket()
        let (messages, failure) = await drain(socket)
        #expect(messages.isEmpty && failure == nil)
        #expect(socket.closeCode == WebSocketCloseCode(rawValue: 4001))
        #expect(socket.closeReason == "bye now")
    }

    @Test func typedJSONMessagesGoBothWays() async throws {
        struct Note: Codable, Equatable {
            let id: Int
            let text: String
        }
        let socket = try await TestEndpoint(try WebSocketServers.realm(), "echo").webSocket()
        try await socket.send(json: Note(id: 7, text: "hi"))
        #expect(try await socket.receive(json: Note.self) == Note(id: 7, text: "hi"))
        try await socket.send(.text("not json"))
        await #expect(throws: ServiceError.self) { try await socket.receive(json: Note.self) }
        await socket.close()
    }

    @Test func theCallbackFormsOpenSendAndReceive() async throws {
        let realm = try WebSocketServers.realm()
        let opened = CallbackRecorder<Result<WebSocket, ServiceError>>()
        TestEndpoint(realm, "echo").webSocket { opened.record($0) }
        let socket = try await opened.first(within: 10).get()
        let received = CallbackRecorder<WebSocketMessage>()
        let ended = CallbackRecorder<ServiceError?>()
        socket.receiveMessages({ received.record($0) }, end: { ended.record($0) })
        let sent = CallbackRecorder<ServiceError?>()
        socket.send(.text("by callback")) { sent.record($0) }
        #expect(try await sent.first(within: 10) == nil)
        #expect(try await received.first(within: 10) == .text("by callback"))
        await socket.close()
        #expect(try await ended.first(within: 10) == nil)
    }

    @Test func aKeepAlivePingIsAnsweredAndTheSocketStaysOpen() async throws {
        let socket = try await TestEndpoint(try WebSocketServers.realm(), "echo")
            .webSocket(options: WebSocketOptions(pingInterval: 0.1, pingTimeout: 10))
        try await Task.sleep(for: .milliseconds(600))
        try await socket.send(.text("still here"))
        #expect(try await socket.receive() == .text("still here"))
        await socket.close()
    }

    /// Small messages are written by their sender itself and large ones go through the engine's queue; with several
    /// senders at once, over TLS (one libcurl handle used from several threads) and compressed with context
    /// takeover (where the order written must be the order compressed), every message arrives whole and each
    /// sender's in its order.
    @Test(arguments: ["WS_URL", "WS_TLS_URL"])
    func messagesOfConcurrentSendersArriveWholeAndInEachSendersOrder(_ variable: String) async throws {
        var realm = try WebSocketServers.realm(variable)
        if variable == "WS_TLS_URL" { realm = realm.setTLSPolicy(try TLSFixtures.trustingCA()) }
        let socket = try await TestEndpoint(realm, "echo").webSocket()
        #expect(socket.compression != nil)
        let senders = 4
        let perSender = 120
        let large = 100_000
        let reader = Task {
            var next = [Int](repeating: 0, count: senders)
            for _ in 0..<(senders * perSender) {
                guard case let .text(text)? = try await socket.receive() else { return next }
                let parts = text.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
                guard parts.count == 3, let sender = Int(parts[0]), let index = Int(parts[1]) else {
                    Issue.record("a message came back garbled: \(text.prefix(40))")
                    return next
                }
                #expect(index == next[sender], "sender \(sender): message \(index) came when \(next[sender]) was due")
                #expect(parts[2].count == (index % 10 == 9 ? large : 0))
                next[sender] = index + 1
            }
            return next
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for sender in 0..<senders {
                group.addTask {
                    for index in 0..<perSender {
                        let filler = index % 10 == 9 ? String(repeating: "x", count: large) : ""
                        try await socket.send(.text("\(sender):\(index):\(filler)"))
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try await reader.value == [Int](repeating: perSender, count: senders))
        await socket.close()
        #expect(socket.closeCode == .normalClosure)
    }

    @Test func wssUsesTheRealmsTLSPolicy() async throws {
        let realm = try WebSocketServers.realm("WS_TLS_URL").setTLSPolicy(try TLSFixtures.trustingCA())
        let socket = try await TestEndpoint(realm, "echo").webSocket()
        try await socket.send(.text("over TLS"))
        #expect(try await socket.receive() == .text("over TLS"))
        await socket.close()
    }

    @Test func aPinMismatchFailsBeforeTheHandshakeIsSent() async throws {
        let id = UUID().uuidString
        let realm = try WebSocketServers.realm("WS_TLS_URL")
            .setTLSPolicy(try TLSFixtures.trustingCA { $0.pinnedPublicKeys = [try TLSFixtures.otherPin()] })
        await #expect(throws: ServiceError.self) {
            _ = try await TestEndpoint(realm, "echo", parameters: ["id": id]).webSocket()
        }
        // Without the realm's roots the test CA is not trusted at all.
        let unpinned = try WebSocketServers.realm("WS_TLS_URL")
        await #expect(throws: ServiceError.self) {
            _ = try await TestEndpoint(unpinned, "echo", parameters: ["id": id]).webSocket()
        }
        let trusted = try WebSocketServers.realm("WS_TLS_URL").setTLSPolicy(try TLSFixtures.trustingCA())
        let socket = try await TestEndpoint(trusted, "echo", parameters: ["id": id]).webSocket()
        await socket.close()
        #expect(try await WebSocketServers.handshakeCounts(id: id)["tls"] == 1)
    }

    @Test func aBackendThatCannotOpenWebSocketsFailsBeforeSending() async throws {
        let id = UUID().uuidString
        let realm = try WebSocketServers.realm().use(URLSessionBackend())
        await #expect {
            _ = try await TestEndpoint(realm, "echo", parameters: ["id": id]).webSocket()
        } throws: { error in
            guard case .unsupportedBackend? = (error as? ServiceError)?.webSocketError else { return false }
            return true
        }
        #expect(try await WebSocketServers.handshakeCounts(id: id)["plain"] == 0)
    }
}
