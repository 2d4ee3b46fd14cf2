import Foundation
import Testing

@testable import SwiftyService

/// A reader that stops reading stops the socket being read: the server floods (ws_server.py `/flood`), the
/// messages waiting in memory stay within the options' buffer, and reading on gets the rest in order.
@Suite(.timeLimit(.minutes(1))) struct WebSocketBackPressureTests {
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
