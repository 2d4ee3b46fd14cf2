import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// permessage-deflate (RFC 7692) on CurlBackend against the `websockets` package's servers (Tests/Servers/ws_server.py:
/// its default settings, one that demands no context takeover and 10-bit windows, one without compression) and
/// against ws_misbehaving_server.py's /deflate-* and /extension paths.
@Suite(.timeLimit(.minutes(5))) struct WebSocketCompressionTests {
    /// What ws_server.py's /extensions says the server agreed to.
    private struct ServerView: Decodable, Equatable {
        let name: String
        let client_no_context_takeover: Bool?
        let server_no_context_takeover: Bool?
        let client_max_window_bits: Int?
        let server_max_window_bits: Int?
    }

    private func socket(_ path: String, on variable: String = "WS_URL", options: WebSocketOptions = WebSocketOptions(),
                        parameters: [String: any Sendable]? = nil) async throws -> WebSocket {
        try await TestEndpoint(try WebSocketServers.realm(variable), path, parameters: parameters).webSocket(options: options)
    }

    /// Text that compresses well without being one repeated line: numbered JSON-like lines.
    private func compressibleText(_ size: Int) -> String {
        var text = ""
        var index = 0
        while text.utf8.count < size {
            text += #"{"id": \#(index), "user": "user-\#(index % 97)", "text": "message number \#(index)", "ok": true}"# + "\n"
            index += 1
        }
        return String(text.utf8.prefix(size))!
    }

    @Test func theServerAgreesToCompressionByDefaultAndBothSidesSayTheSame() async throws {
        let socket = try await socket("extensions")
        #expect(socket.compression == WebSocketCompression(clientMaxWindowBits: 12, serverMaxWindowBits: 12))
        let seen = try #require(try await socket.receive(json: [ServerView].self))
        #expect(seen == [ServerView(name: "permessage-deflate", client_no_context_takeover: false,
                                    server_no_context_takeover: false, client_max_window_bits: 12, server_max_window_bits: 12)])
        await socket.close()
    }

    @Test func compressedTextAndBinaryMessagesEchoBack() async throws {
        let socket = try await socket("echo")
        #expect(socket.compression != nil)
        var generator = SystemRandomNumberGenerator()
        let noise = Data((0..<65_536).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let messages: [WebSocketMessage] = [
            .text("héllo"), .text(compressibleText(2000)), .binary(Data((0..<300_000).map { UInt8($0 % 256) })),
            .binary(noise), .text(compressibleText(50_000)), .text(""), .text(compressibleText(2000)),
        ]
        for message in messages {
            try await socket.send(message)
            #expect(try await socket.receive() == message)
        }
        await socket.close()
        #expect(socket.closeCode == .normalClosure)
    }

    @Test func largeCompressibleMessagesGoBothWays() async throws {
        let socket = try await socket("echo")
        let text = compressibleText(8 << 20)
        try await socket.send(.text(text))
        #expect(try await socket.receive() == .text(text))
        let bytes = Data((0..<(6 << 20)).map { UInt8($0 % 251) })
        try await socket.send(.binary(bytes))
        #expect(try await socket.receive() == .binary(bytes))
        await socket.close()

        let sent = try await self.socket("text", parameters: ["size": 6 << 20])
        #expect(try await sent.receive() == .text(compressibleText(6 << 20)))
        await sent.close()
    }

    @Test func theClientsContextTakeoverAndWindowRequestsAreAgreed() async throws {
        let asked = WebSocketCompression(clientNoContextTakeover: true, serverNoContextTakeover: true, serverMaxWindowBits: 9)
        let options = WebSocketOptions(compression: asked)
        let socket = try await socket("extensions", options: options)
        #expect(socket.compression == WebSocketCompression(
            clientNoContextTakeover: true, serverNoContextTakeover: true, clientMaxWindowBits: 12, serverMaxWindowBits: 9))
        let seen = try #require(try await socket.receive(json: [ServerView].self))
        #expect(seen.first == ServerView(name: "permessage-deflate", client_no_context_takeover: true,
                                         server_no_context_takeover: true, client_max_window_bits: 12, server_max_window_bits: 9))
        await socket.close()

        let echo = try await self.socket("echo", options: options)
        for round in 0..<5 {
            let message = WebSocketMessage.text(compressibleText(10_000 + round))
            try await echo.send(message)
            #expect(try await echo.receive() == message)
        }
        await echo.close()
    }

    @Test func aServerThatDemandsNoContextTakeoverAndSmallWindowsGetsThem() async throws {
        let socket = try await socket("echo", on: "WS_STRICT_DEFLATE_URL")
        #expect(socket.compression == WebSocketCompression(
            clientNoContextTakeover: true, serverNoContextTakeover: true, clientMaxWindowBits: 10, serverMaxWindowBits: 10))
        // A random block repeated 4 KiB apart: a compressor with a window over the agreed 1 KiB would refer that far
        // back, and the server could not inflate it.
        var generator = SystemRandomNumberGenerator()
        let block = Data((0..<4096).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let repeated = Data((0..<256).flatMap { _ in block })
        for message in [WebSocketMessage.binary(repeated), .text(compressibleText(300_000)), .binary(repeated)] {
            try await socket.send(message)
            #expect(try await socket.receive() == message)
        }
        await socket.close()
        #expect(socket.closeCode == .normalClosure)
    }

    @Test func aServerWithoutCompressionAndAClientThatTurnsItOffExchangePlainMessages() async throws {
        let plain = try await socket("echo", on: "WS_UNCOMPRESSED_URL")
        #expect(plain.compression == nil)
        let text = compressibleText(100_000)
        try await plain.send(.text(text))
        #expect(try await plain.receive() == .text(text))
        await plain.close()

        let off = WebSocketOptions(compression: nil)
        let headers = try await socket("headers", options: off)
        #expect(headers.compression == nil)
        #expect(try await headers.receive(json: [String: String].self)?["sec-websocket-extensions"] == nil)
        await headers.close()
        let offered = try await socket("headers")
        #expect(
            try await offered.receive(json: [String: String].self)?["sec-websocket-extensions"]
                == "permessage-deflate; client_max_window_bits")
        await offered.close()
        let extensions = try await socket("extensions", options: off)
        #expect(try await extensions.receive() == .text("[]"))
        await extensions.close()
    }

    @Test func aCompressedMessageThatInflatesPastTheLimitFailsWith1009() async throws {
        let socket = try await socket("text", options: WebSocketOptions(maximumMessageSize: 1 << 20), parameters: ["size": 4 << 20])
        #expect(socket.compression != nil)
        let (messages, failure) = await drain(socket)
        #expect(messages.isEmpty)
        #expect(failure?.webSocketError == .messageTooBig(limit: 1 << 20))
    }

    // MARK: The misbehaving server

    private func misbehaving(_ path: String, options: WebSocketOptions = WebSocketOptions()) async throws
        -> (messages: [WebSocketMessage], error: WebSocketError?, closeCode: Int?)
    {
        let id = UUID().uuidString
        let socket = try await socket(path, on: "WS_MISBEHAVING_URL", options: options, parameters: ["id": id])
        #expect(socket.compression == .deflate)
        let (messages, failure) = await drain(socket)
        return (messages, failure?.webSocketError, try await WebSocketServers.report(id).closeCode)
    }

    @Test func aDeflateBombStopsAtTheLimitWith1009() async throws {
        let start = ContinuousClock.now
        let (messages, error, closeCode) = try await misbehaving(
            "deflate-bomb", options: WebSocketOptions(maximumMessageSize: 1 << 20))
        #expect(messages.isEmpty)
        #expect(error == .messageTooBig(limit: 1 << 20))
        #expect(closeCode == 1009)
        // 64 MiB are never inflated: the socket stops one byte past the megabyte.
        #expect(seconds(since: start) < 20)
    }

    @Test func aServerThatFloodsCompressedMessagesAndNeverClosesIsLeftAfterTheCloseTimeout() async throws {
        let socket = try await socket("deflate-flood", on: "WS_MISBEHAVING_URL", options: WebSocketOptions(closeTimeout: 0.5))
        #expect(socket.compression == WebSocketCompression(serverNoContextTakeover: true))
        #expect(try await socket.receive() == .binary(Data(count: 1 << 20)))
        let start = ContinuousClock.now
        // Messages are dropped after the close frame, uninflated, and the flood does not keep the timeout from firing.
        await socket.close()
        #expect(seconds(since: start) < 20)
    }

    @Test func dataThatDoesNotInflateIsAProtocolError() async throws {
        let (messages, error, closeCode) = try await misbehaving("deflate-invalid")
        #expect(messages.isEmpty)
        #expect(error?.closeCode == .protocolError)
        #expect(closeCode == 1002)
    }

    @Test func textThatInflatesToInvalidUTF8Closes1007() async throws {
        let (messages, error, closeCode) = try await misbehaving("deflate-bad-utf8")
        #expect(messages.isEmpty)
        #expect(error?.closeCode == .invalidFramePayloadData)
        #expect(closeCode == 1007)
    }

    @Test func rsv1OnAControlOrContinuationFrameIsAProtocolError() async throws {
        for path in ["deflate-control-rsv1", "deflate-continuation-rsv1"] {
            let (messages, error, closeCode) = try await misbehaving(path)
            #expect(messages.isEmpty, "\(path)")
            #expect(error == .protocolViolation(
                code: .protocolError,
                reason: path == "deflate-control-rsv1" ? "RSV1 is set on a control frame" : "RSV1 is set on a continuation frame"))
            #expect(closeCode == 1002, "\(path)")
        }
    }

    @Test func rsv1WithoutAgreedCompressionIsStillAProtocolError() async throws {
        for options in [WebSocketOptions(), WebSocketOptions(compression: nil)] {
            let id = UUID().uuidString
            let socket = try await socket("reserved-bit", on: "WS_MISBEHAVING_URL", options: options, parameters: ["id": id])
            #expect(socket.compression == nil)
            let (_, failure) = await drain(socket)
            #expect(failure?.webSocketError?.closeCode == .protocolError)
            #expect(try await WebSocketServers.report(id).closeCode == 1002)
        }
    }

    @Test func anExtensionAnswerOutsideTheOfferFailsTheHandshakeNamingTheURLAndTheCause() async throws {
        let refused: [(answer: String, options: WebSocketOptions, cause: String)] = [
            ("x-webkit-deflate-frame", WebSocketOptions(), "not offered: x-webkit-deflate-frame"),
            ("permessage-deflate", WebSocketOptions(compression: nil), "not offered: permessage-deflate"),
            ("permessage-deflate; server_max_window_bits=7", WebSocketOptions(), "not a number from 8 to 15"),
            ("permessage-deflate; client_max_window_bits", WebSocketOptions(), "not a number from 8 to 15"),
            ("permessage-deflate; mystery", WebSocketOptions(), "unknown parameter mystery"),
            ("permessage-deflate, permessage-deflate", WebSocketOptions(), "more than one"),
        ]
        for (answer, options, cause) in refused {
            let id = UUID().uuidString
            do {
                _ = try await socket("extension", on: "WS_MISBEHAVING_URL", options: options, parameters: ["answer": answer, "id": id])
                Issue.record("the answer '\(answer)' was accepted")
            } catch let error as ServiceError {
                guard case let .handshakeFailed(reason)? = error.webSocketError else {
                    Issue.record("expected a handshake failure for '\(answer)', got \(error)")
                    continue
                }
                #expect(reason.contains(cause), "\(answer): \(reason)")
                #expect("\(error)".contains("/extension"), "\(error)")
            }
            #expect(try await WebSocketServers.report(id).bytes == 0, "nothing is sent after a refused handshake")
        }
        let accepted = try await socket(
            "extension", on: "WS_MISBEHAVING_URL", parameters: ["answer": "permessage-deflate; server_no_context_takeover"])
        #expect(accepted.compression == WebSocketCompression(serverNoContextTakeover: true))
        #expect(try await accepted.receive() == .text("hi"))
        await accepted.close()
    }

    @Test func theClientCompressesWhatShrinksAndSetsRSV1() async throws {
        struct Seen: Decodable {
            let rsv1: Bool
            let wire: Int
            let text: String
        }
        let socket = try await socket("deflate-inspect", on: "WS_MISBEHAVING_URL")
        var generator = SystemRandomNumberGenerator()
        let noise = Data((0..<4096).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let big = compressibleText(100_000)
        let cases: [(message: WebSocketMessage, compressed: Bool)] = [
            (.text("hi"), false), (.text(big), true), (.binary(noise), false), (.text(big), true),
            (.text(compressibleText(500)), true),
        ]
        for (message, compressed) in cases {
            try await socket.send(message)
            let seen = try #require(try await socket.receive(json: Seen.self))
            #expect(seen.rsv1 == compressed)
            if case let .text(text) = message {
                #expect(seen.text == text)
                if compressed { #expect(seen.wire < text.utf8.count / 3) }
            } else {
                #expect(seen.wire == noise.count)
            }
        }
        await socket.close()
    }
}
