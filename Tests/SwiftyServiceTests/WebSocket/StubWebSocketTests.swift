import Foundation
import SwiftyService
import Testing

/// App tests without a server: a StubBackend answers the handshake with a scripted socket.
@Suite(.timeLimit(.minutes(5))) struct StubWebSocketTests {
    private func realm(_ stub: StubBackend) -> ServiceRealm {
        uniqueRealm("stub-ws").setBaseURL(URL(string: "https://chat.example")!).use(stub)
    }

    @Test func aScriptedSocketPlaysMessagesInAndExpectsMessagesOut() async throws {
        let stub = StubBackend().on(
            .path("/chat"),
            answer: .webSocket(
                [
                    .receive(.text("welcome")), .expect(.text("hello")), .receive(.binary(Data([1, 2]))),
                    .close(.goingAway, reason: "bye"),
                ], subprotocol: "chat.v1"))
        let socket = try await TestEndpoint(realm(stub), "chat").webSocket(subprotocols: ["chat.v1"])
        #expect(socket.subprotocol == "chat.v1")
        #expect(try await socket.receive() == .text("welcome"))
        // The next message waits for the one the script expects first.
        async let next = socket.receive()
        try await socket.send(.text("hello"))
        #expect(try await next == .binary(Data([1, 2])))
        #expect(try await socket.receive() == nil)
        #expect(socket.closeCode == .goingAway && socket.closeReason == "bye")
        #expect(stub.received.first?.urlRequest.value(forHTTPHeaderField: "Upgrade") == "websocket")
    }

    @Test func aMessageTheScriptDoesNotExpectFailsItsSend() async throws {
        let stub = StubBackend().on(.path("/chat"), answer: .webSocket([.expect(.text("hello"))]))
        let socket = try await TestEndpoint(realm(stub), "chat").webSocket()
        await #expect {
            try await socket.send(.text("goodbye"))
        } throws: { error in
            guard case let .transport(_, underlying, _)? = error as? ServiceError else { return false }
            let mismatch = underlying as? WebSocketScript.Mismatch
            return mismatch?.expected == .text("hello") && mismatch?.sent == .text("goodbye")
        }
    }

    @Test func aScriptedFailureComesAfterTheMessagesBeforeIt() async throws {
        let stub = StubBackend().on(
            .path("/chat"), answer: .webSocket([.receive(.text("one")), .fail(.messageTooBig(limit: 10))]))
        let socket = try await TestEndpoint(realm(stub), "chat").webSocket()
        let (messages, failure) = await drain(socket)
        #expect(messages == [.text("one")])
        #expect(failure?.webSocketError == .messageTooBig(limit: 10))
    }

    @Test func aStubbedRefusalIsTheUsualStatusError() async throws {
        let stub = StubBackend().on(.path("/chat"), answer: .json(#"{"error":"no"}"#, statusCode: 403))
        await #expect {
            _ = try await TestEndpoint(realm(stub), "chat").webSocket()
        } throws: { error in
            (error as? ServiceError)?.response?.statusCode == 403
        }
    }
}
