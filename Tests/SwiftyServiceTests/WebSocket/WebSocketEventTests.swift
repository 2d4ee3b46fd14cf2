import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The realm's observers hear of a socket's end once, after the handshake's events, with what went each way: the
/// lifecycle event an app's reconnection or its session log is driven by.
@Suite(.timeLimit(.minutes(5))) struct WebSocketEventTests {
    /// The events of every call of `realm`, in order.
    private final class Recorder: Sendable {
        private let events = Collected<RequestEvent.Kind>()
        var kinds: [RequestEvent.Kind] { events.all }
        var summaries: [WebSocketSummary] {
            kinds.compactMap { kind in
                if case let .webSocketEnded(summary) = kind { summary } else { nil }
            }
        }
        func attach(to realm: ServiceRealm) -> ServiceRealm {
            realm.addObserver(EventHandler { [events] event in events.add(event.kind) })
        }
    }

    @Test func aClosedSocketIsToldOnceWithItsMessagesBothWays() async throws {
        let recorder = Recorder()
        let realm = recorder.attach(to: try WebSocketServers.realm())
        let socket = try await TestEndpoint(realm, "echo").webSocket()
        try await socket.send(.text("héllo"))
        try await socket.send(.binary(Data(count: 1000)))
        #expect(try await socket.receive() == .text("héllo"))
        #expect(try await socket.receive() == .binary(Data(count: 1000)))
        await socket.close(code: .normalClosure, reason: "done")
        #expect(try await socket.receive() == nil)
        let summaries = recorder.summaries
        try #require(summaries.count == 1)
        let summary = summaries[0]
        #expect(summary.messagesSent == 2 && summary.bytesSent == 1006)
        #expect(summary.messagesReceived == 2 && summary.bytesReceived == 1006)
        #expect(summary.closeCode == .normalClosure)
        #expect(summary.error == nil)
        #expect(summary.duration > 0 && summary.duration < 30)
        // After the handshake's `completed` (its 101), and last.
        guard case .webSocketEnded? = recorder.kinds.last else {
            Issue.record("not last: \(recorder.kinds)"); return
        }
        let completed = recorder.kinds.firstIndex { if case .completed = $0 { true } else { false } }
        #expect(completed != nil && completed! < recorder.kinds.count - 1)
    }

    @Test func theServersCloseIsToldWithItsCodeAndReason() async throws {
        let recorder = Recorder()
        let socket = try await TestEndpoint(recorder.attach(to: try WebSocketServers.realm()), "close")
            .webSocket()
        while try await socket.receive() != nil {}
        let summary = try #require(recorder.summaries.first)
        #expect(recorder.summaries.count == 1)
        #expect(summary.closeCode == socket.closeCode && summary.closeCode != nil)
        #expect(summary.closeReason == socket.closeReason)
        #expect(summary.error == nil)
    }

    @Test func aSendRefusedAfterTheServersCloseTellsTheCloseNotAFailure() async throws {
        let recorder = Recorder()
        let realm = recorder.attach(to: try WebSocketServers.realm())
        let socket = try await TestEndpoint(realm, "close", parameters: ["code": 4002, "reason": "later"])
            .webSocket()
        #expect(try await waitUntil(for: 10) { socket.closeCode != nil })
        await #expect(throws: ServiceError.self) { try await socket.send(.text("too late")) }
        let summary = try #require(recorder.summaries.first)
        #expect(summary.closeCode == WebSocketCloseCode(rawValue: 4002) && summary.closeReason == "later")
        #expect(summary.error == nil)
    }

    @Test func aProtocolErrorIsToldWithTheFailure() async throws {
        let recorder = Recorder()
        let realm = recorder.attach(to: try WebSocketServers.realm("WS_MISBEHAVING_URL"))
        let socket = try await TestEndpoint(realm, "bad-opcode", parameters: ["id": UUID().uuidString])
            .webSocket()
        await #expect(throws: ServiceError.self) { while try await socket.receive() != nil {} }
        let summary = try #require(recorder.summaries.first)
        #expect(recorder.summaries.count == 1)
        #expect(summary.error?.webSocketError?.closeCode == .protocolError)
        #expect(summary.messagesReceived == 0)
    }

    @Test func aSocketLetGoIsToldAndAReaderThatStopsWaitingIsNot() async throws {
        let recorder = Recorder()
        let realm = recorder.attach(to: try WebSocketServers.realm())
        var socket: WebSocket? = try await TestEndpoint(realm, "echo").webSocket()
        let waiting = Task { [socket] in try await socket?.receive() }
        try await Task.sleep(for: .milliseconds(100))
        waiting.cancel()
        _ = await waiting.result
        #expect(recorder.summaries.isEmpty)
        socket = nil
        #expect(socket == nil)
        #expect(recorder.summaries.count == 1)
    }
}
