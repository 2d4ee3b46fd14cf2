import Foundation
import Testing

@testable import SwiftyService

/// A reader that stops reading stops the socket being read: the server floods (ws_server.py `/flood`), the
/// messages waiting in memory stay within the options' buffer, and reading on gets the rest in order.
@Suite(.timeLimit(.minutes(5))) struct WebSocketBackPressureTests {
    @Test func aReaderThatPausesHoldsAtMostTheBufferInMemory() async throws {
        let size = 16 * 1024
        let options = WebSocketOptions(bufferedBytes: 64 * 1024)
        let socket = try await TestEndpoint(try WebSocketServers.realm(), "flood", parameters: ["size": size])
            .webSocket(options: options)
        let engine = try #require(socket.channel as? WebSocketEngine)
        #expect(try await socket.receive() == .binary(Data(repeating: UInt8(ascii: "x"), count: size)))
        try await Task.sleep(for: .milliseconds(700))
        let buffered = engine.bufferedByteCount
        #expect(buffered >= options.bufferedBytes && buffered <= options.bufferedBytes + size)
        for _ in 0..<200 { #expect(try await socket.receive()?.byteCount == size) }
        await socket.close()
    }

    @Test func sendWaitsOnceTheConnectionAndTheSendBufferAreFull() async throws {
        // ws_misbehaving_server.py `/never-reads` reads nothing after the handshake: once the kernel's buffers
        // and the socket's send buffer (256 KiB) are full, `send` waits, so a sender cannot pile 200 MiB up.
        let socket = try await TestEndpoint(try WebSocketServers.realm("WS_MISBEHAVING_URL"), "never-reads")
            .webSocket(options: WebSocketOptions(closeTimeout: 0.5))
        let sent = Locked.make(0)
        let sender = Task {
            for _ in 0..<200 {
                try await socket.send(.binary(Data(count: 1 << 20)))
                sent.withLock { $0 += 1 }
            }
        }
        var stalled = -1
        for _ in 0..<40 {
            try await Task.sleep(for: .milliseconds(500))
            let now = sent.withLock { $0 }
            if now == stalled { break }
            stalled = now
        }
        #expect(stalled >= 1 && stalled < 64, "the sends stopped after \(stalled) MiB, what the kernel holds on loopback")
        print("send waited after \(stalled) messages of 1 MiB to a server that reads nothing")
        // Closing (the server never answers the close: the close timeout ends it) ends the waiting send too.
        await socket.close()
        await #expect(throws: ServiceError.self) { try await sender.value }
        #expect(sent.withLock { $0 } < 64)
    }

    @Test func aCancelledReaderLeavesTheSocketOpenForTheNext() async throws {
        let socket = try await TestEndpoint(try WebSocketServers.realm(), "echo").webSocket()
        let waiting = Task { try await socket.receive() }
        try await Task.sleep(for: .milliseconds(100))
        waiting.cancel()
        await #expect {
            _ = try await waiting.value
        } throws: { error in
            (error as? ServiceError)?.kind == .cancelled
        }
        try await socket.send(.text("next"))
        #expect(try await socket.receive() == .text("next"))
        await socket.close()
    }
}
