import Foundation
import SwiftyService
import SwiftyServiceTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What an app sees of a socket, the same on every backend that opens one — CurlBackend against the `websockets`
/// server (Tests/Servers/ws_server.py), StubBackend's script, ReplayBackend's cassette of the CurlBackend run: a
/// difference is a failing test.
@Suite("WebSocket conformance", .timeLimit(.minutes(5)), .tags(.realServer))
struct WebSocketConformanceTests {
    let temporaryFiles = TemporaryFiles()

    enum Kind: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case curl, stub, replay
        var testDescription: String { rawValue }
    }

    /// What the app saw.
    struct Seen: Equatable {
        var status = 0
        var received: [WebSocketMessage] = []
        var closeCode: WebSocketCloseCode?
        var closeReason: String?
        var endsRead: [Bool] = []
        var sendAfterEnd = ""
        var summary = ""
    }

    private static let binary = Data([0, 1, 2, 254, 255])

    /// The app closes the socket itself after an echo of each kind.
    private func closedByTheApp(_ realm: ServiceRealm) async throws -> Seen {
        let events = Collected<RequestEvent.Kind>()
        let socket = try await TestEndpoint(
            realm.addObserver(EventHandler { events.add($0.kind) }), "echo"
        ).webSocket()
        var seen = Seen(status: socket.response.statusCode)
        try await socket.send(.text("héllo"))
        seen.received.append(try #require(try await socket.receive()))
        try await socket.send(.binary(Self.binary))
        seen.received.append(try #require(try await socket.receive()))
        await socket.close(code: .normalClosure, reason: "done")
        seen.closeCode = socket.closeCode
        seen.closeReason = socket.closeReason
        // The end, read as often as the app asks.
        for _ in 0..<2 { seen.endsRead.append(try await socket.receive() == nil) }
        seen.sendAfterEnd = try await Self.sendAfterTheEnd(socket)
        seen.summary = Self.summary(events.all)
        return seen
    }

    /// The server closes the socket with a code and a reason; the app reads until the end.
    private func closedByTheServer(_ realm: ServiceRealm) async throws -> Seen {
        let events = Collected<RequestEvent.Kind>()
        let socket = try await TestEndpoint(
            realm.addObserver(EventHandler { events.add($0.kind) }), "close",
            parameters: ["code": 4001, "reason": "bye"]
        ).webSocket()
        var seen = Seen(status: socket.response.statusCode)
        for _ in 0..<3 { seen.endsRead.append(try await socket.receive() == nil) }
        seen.closeCode = socket.closeCode
        seen.closeReason = socket.closeReason
        seen.sendAfterEnd = try await Self.sendAfterTheEnd(socket)
        seen.summary = Self.summary(events.all)
        return seen
    }

    /// What a send after the end gets: the transport failure's cause, or "sent".
    private static func sendAfterTheEnd(_ socket: WebSocket) async throws -> String {
        do {
            try await socket.send(.text("late"))
            return "sent"
        } catch let ServiceError.transport(_, underlying, _) {
            return "\(underlying)"
        }
    }

    private static func summary(_ kinds: [RequestEvent.Kind]) -> String {
        let summaries = kinds.compactMap { kind -> WebSocketSummary? in
            if case let .webSocketEnded(summary) = kind { summary } else { nil }
        }
        return summaries.map {
            "\($0.closeCode?.rawValue ?? 0) \($0.closeReason ?? "-") \($0.error == nil) "
                + "\($0.messagesSent)/\($0.bytesSent) \($0.messagesReceived)/\($0.bytesReceived)"
        }.joined(separator: "; ")
    }

    /// A realm on `kind` for `scenario`; for `.replay`, the cassette of the scenario recorded on CurlBackend.
    private func realm(_ kind: Kind, scenario: (ServiceRealm) async throws -> Seen, stub: StubBackend)
        async throws
        -> ServiceRealm
    {
        let base = try WebSocketServers.url("WS_URL")
        switch kind {
        case .curl:
            return try WebSocketServers.realm()
        case .stub:
            return uniqueRealm("ws-conformance").setBaseURL(base).use(stub)
        case .replay:
            let file = temporaryFiles.uniquePath("ws-conformance").appendingPathComponent("socket.json")
            let recorder = try RecordingBackend(recording: try CurlBackend(), to: file)
            _ = try await scenario(
                uniqueRealm("ws-conformance").setBaseURL(base).use(recorder).setTimeout(10))
            // Written once the socket has ended.
            #expect(
                try await waitUntil(for: 30) {
                    (try? Cassette.load(from: file).interactions.first?.webSocket) != nil
                })
            return uniqueRealm("ws-conformance").setBaseURL(base).use(try ReplayBackend(cassette: file))
        }
    }

    @Test(arguments: Kind.allCases)
    func aSocketTheAppClosesLooksTheSame(_ kind: Kind) async throws {
        let stub = StubBackend().on(
            .path("/echo"),
            answer: .webSocket([
                .expect(.text("héllo")), .receive(.text("héllo")), .expect(.binary(Self.binary)),
                .receive(.binary(Self.binary)),
            ]))
        let seen = try await closedByTheApp(try await realm(kind, scenario: closedByTheApp, stub: stub))
        let expected = Seen(
            status: 101, received: [.text("héllo"), .binary(Self.binary)], closeCode: .normalClosure,
            closeReason: "done", endsRead: [true, true], sendAfterEnd: "\(WebSocketError.closed)",
            summary: "1000 done true 2/11 2/11")
        #expect(seen == expected, "\(kind)")
    }

    @Test(arguments: Kind.allCases)
    func aSocketTheServerClosesLooksTheSame(_ kind: Kind) async throws {
        let stub = StubBackend().on(
            .path("/close"), answer: .webSocket([.close(WebSocketCloseCode(rawValue: 4001), reason: "bye")]))
        let seen = try await closedByTheServer(try await realm(kind, scenario: closedByTheServer, stub: stub))
        let expected = Seen(
            status: 101, closeCode: WebSocketCloseCode(rawValue: 4001), closeReason: "bye",
            endsRead: [true, true, true], sendAfterEnd: "\(WebSocketError.closed)",
            summary: "4001 bye true 0/0 0/0")
        #expect(seen == expected, "\(kind)")
    }
}
