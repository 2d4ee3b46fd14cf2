import Foundation
import Testing

@testable import SwiftyService

/// permessage-deflate (RFC 7692) without a network: the offer, the checks of the server's answer (sections 5 and
/// 7.1), the RFC's own compressed frames (section 7.2.3), context takeover, RSV1, and inflating within the limit.
@Suite struct WebSocketCompressionNegotiationTests {
    private func agreement(_ answer: String?, offer: WebSocketCompression? = .deflate) throws -> WebSocketCompression? {
        try WebSocketCompression.agreement(to: offer, answer: answer)
    }

    private func refusal(_ answer: String, offer: WebSocketCompression? = .deflate) -> String? {
        do {
            _ = try agreement(answer, offer: offer)
            return nil
        } catch let WebSocketError.handshakeFailed(reason) {
            return reason
        } catch {
            return "\(error)"
        }
    }

    @Test func theOfferNamesWhatTheClientAsksFor() {
        #expect(WebSocketCompression.deflate.offer == "permessage-deflate; client_max_window_bits")
        let strict = WebSocketCompression(
            clientNoContextTakeover: true, serverNoContextTakeover: true, clientMaxWindowBits: 3, serverMaxWindowBits: 10)
        #expect(
            strict.offer
                == "permessage-deflate; client_no_context_takeover; server_no_context_takeover; server_max_window_bits=10; client_max_window_bits")
        #expect(strict.clientMaxWindowBits == 9)
        let fields = WebSocketHandshake(compression: .deflate).requestHeaders
        #expect(fields.contains { $0.name == "Sec-WebSocket-Extensions" && $0.value == "permessage-deflate; client_max_window_bits" })
        #expect(!WebSocketHandshake().requestHeaders.contains { $0.name == "Sec-WebSocket-Extensions" })
    }

    @Test func theServersAnswerSetsTheAgreedParameters() throws {
        #expect(try agreement(nil) == nil)
        #expect(try agreement("") == nil)
        #expect(try agreement("permessage-deflate") == .deflate)
        #expect(
            try agreement("permessage-deflate; server_max_window_bits=12; client_max_window_bits=12")
                == WebSocketCompression(clientMaxWindowBits: 12, serverMaxWindowBits: 12))
        #expect(try agreement(#"Permessage-Deflate ; client_max_window_bits = "10""#)?.clientMaxWindowBits == 10)
        let takeover = try #require(try agreement("permessage-deflate; client_no_context_takeover; server_no_context_takeover"))
        #expect(takeover.clientNoContextTakeover && takeover.serverNoContextTakeover)
        let asked = WebSocketCompression(serverNoContextTakeover: true, serverMaxWindowBits: 10)
        #expect(
            try agreement("permessage-deflate; server_no_context_takeover; server_max_window_bits=9", offer: asked)
                == WebSocketCompression(serverNoContextTakeover: true, serverMaxWindowBits: 9))
        // A window of 8 bits, which zlib cannot compress with: agreed, and messages go uncompressed.
        let tiny = try #require(try agreement("permessage-deflate; client_max_window_bits=8"))
        #expect(tiny.clientMaxWindowBits == 8)
        #expect(try WebSocketDeflate(tiny).deflater == nil)
    }

    @Test func anAnswerOutsideTheOfferFailsTheHandshakeNamingWhy() {
        #expect(refusal("x-webkit-deflate-frame")?.contains("not offered: x-webkit-deflate-frame") == true)
        #expect(refusal("permessage-deflate", offer: nil)?.contains("not offered: permessage-deflate") == true)
        #expect(refusal("permessage-deflate, permessage-deflate")?.contains("more than one") == true)
        #expect(refusal("permessage-deflate; server_max_window_bits=7")?.contains("not a number from 8 to 15") == true)
        #expect(refusal("permessage-deflate; server_max_window_bits=16") != nil)
        #expect(refusal("permessage-deflate; server_max_window_bits=010") != nil)
        #expect(refusal("permessage-deflate; client_max_window_bits") != nil)
        #expect(refusal("permessage-deflate; server_no_context_takeover=1")?.contains("has a value") == true)
        #expect(refusal("permessage-deflate; server_no_context_takeover; server_no_context_takeover")?.contains("repeated") == true)
        #expect(refusal("permessage-deflate; mystery=1")?.contains("unknown parameter mystery") == true)
        #expect(refusal(#"permessage-deflate; client_max_window_bits="10"#)?.contains("unterminated quote") == true)
        let asked = WebSocketCompression(serverNoContextTakeover: true, serverMaxWindowBits: 10)
        #expect(refusal("permessage-deflate; server_no_context_takeover; server_max_window_bits=12", offer: asked) != nil)
        #expect(refusal("permessage-deflate; server_no_context_takeover", offer: asked)?.contains("server_max_window_bits=10") == true)
        #expect(refusal("permessage-deflate; server_max_window_bits=10", offer: asked)?.contains("server_no_context_takeover") == true)
        let headers = [
            "upgrade": "websocket", "connection": "Upgrade", "sec-websocket-accept": "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=",
            "Sec-WebSocket-Extensions": "permessage-deflate",
        ]
        #expect(throws: WebSocketError.self) { try WebSocketHandshake(key: "dGhlIHNhbXBsZSBub25jZQ==").validate(headers: headers) }
        let agreed = try? WebSocketHandshake(compression: .deflate, key: "dGhlIHNhbXBsZSBub25jZQ==").validate(headers: headers)
        #expect(agreed?.compression == .deflate)
    }

    /// Reads `bytes` as a client with permessage-deflate agreed: the messages, or the first failure.
    private func read(_ bytes: [UInt8], limit: Int = 1 << 20, serverNoContextTakeover: Bool = false)
        -> (messages: [WebSocketMessage], failure: WebSocketError?)
    {
        let inflater = MessageInflater(zlib: Zlib.shared!, windowBits: 15, noContextTakeover: serverNoContextTakeover)
        var decoder = WebSocketFrameDecoder(maximumPayloadSize: limit)
        decoder.acceptsCompressedFrames = true
        var receiver = WebSocketReceiver(maximumMessageSize: limit, inflater: inflater)
        decoder.append(bytes)
        var messages: [WebSocketMessage] = []
        do {
            while true {
                decoder.maximumPayloadSize = receiver.remainingRoom
                decoder.continuesCompressedMessage = receiver.isReceivingCompressedMessage
                guard let frame = try decoder.nextFrame() else { return (messages, nil) }
                if case let .message(message)? = try receiver.receive(frame) { messages.append(message) }
            }
        } catch {
            return (messages, error as? WebSocketError)
        }
    }

    @Test func theRFCsCompressedFramesInflateToHello() {
        let hello = WebSocketMessage.text("Hello")
        #expect(read([0xc1, 0x07, 0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00]).messages == [hello])
        // Fragmented, and with the second message referring to the first (a shared window).
        #expect(read([0x41, 0x03, 0xf2, 0x48, 0xcd, 0x80, 0x04, 0xc9, 0xc9, 0x07, 0x00]).messages == [hello])
        let shared: [UInt8] = [0xc1, 0x07, 0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00, 0xc1, 0x05, 0xf2, 0x00, 0x11, 0x00, 0x00]
        #expect(read(shared).messages == [hello, hello])
        // Without context takeover the second message's reference reaches into nothing: a protocol error.
        let reset = read(shared, serverNoContextTakeover: true)
        #expect(reset.messages == [hello])
        #expect(reset.failure?.closeCode == .protocolError)
        // A block with BFINAL set, then a message in a new stream; two blocks in one message.
        #expect(
            read([0xc1, 0x08, 0xf3, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00, 0x00, 0xc1, 0x07, 0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00])
                .messages == [hello, hello])
        #expect(
            read([0xc1, 0x0d, 0xf2, 0x48, 0x05, 0x00, 0x00, 0x00, 0xff, 0xff, 0xca, 0xc9, 0xc9, 0x07, 0x00]).messages == [hello])
    }

    @Test func rsv1IsCompressionOnlyOnTheFirstDataFrameOnceAgreed() {
        #expect(read([0xc9, 0x00]).failure?.closeCode == .protocolError)
        #expect(read([0x41, 0x03, 0xf2, 0x48, 0xcd, 0xc0, 0x04, 0xc9, 0xc9, 0x07, 0x00]).failure?.closeCode == .protocolError)
        #expect(read([0xa1, 0x00]).failure?.closeCode == .protocolError)
        #expect(read([0xc1, 0x03, 0xff, 0xff, 0xff]).failure?.closeCode == .protocolError)
        var plain = WebSocketFrameDecoder(maximumPayloadSize: 100)
        plain.append([0xc1, 0x07, 0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00])
        #expect(throws: WebSocketError.protocolViolation(code: .protocolError, reason: "a reserved bit is set (no extension was negotiated)")) {
            try plain.nextFrame()
        }
        // Inflated text is checked as UTF-8: "κ" then 0xFF.
        let deflater = MessageDeflater(zlib: Zlib.shared!, windowBits: 15, level: 6, noContextTakeover: true)!
        let invalid = Data(repeating: 0x61, count: 40) + Data([0xce, 0xba, 0xff])
        let compressed = invalid.withUnsafeBytes { deflater.compress($0) }!
        let frame = WebSocketFrame(opcode: .text, isCompressed: true, payload: compressed).encoded(maskingKey: nil)
        #expect(read(frame).failure?.closeCode == .invalidFramePayloadData)
    }

    @Test func aCompressedBombStopsInflatingOneBytePastTheLimit() throws {
        let deflater = try #require(MessageDeflater(zlib: Zlib.shared!, windowBits: 15, level: 6, noContextTakeover: false))
        let zeros = Data(count: 64 << 20)
        let bomb = try #require(zeros.withUnsafeBytes { deflater.compress($0) })
        #expect(bomb.count < 128 << 10)
        let limit = 1 << 20
        let inflater = try #require(MessageInflater(zlib: Zlib.shared!, windowBits: 15, noContextTakeover: false))
        var receiver = WebSocketReceiver(maximumMessageSize: limit, inflater: inflater)
        #expect(throws: WebSocketError.messageTooBig(limit: limit)) {
            try receiver.receive(WebSocketFrame(opcode: .binary, isCompressed: true, payload: bomb))
        }
        #expect(inflater.capacity <= limit + 1)
        // The frame decoder holds a compressed frame to what could inflate within the room, with DEFLATE's slack.
        #expect(WebSocketFrameDecoder.compressedPayloadLimit(room: limit) < limit + limit / 1000 + 100)
        #expect(WebSocketFrameDecoder.compressedPayloadLimit(room: .max) == .max)
    }

    @Test func compressedMessagesRoundTripAndThoseThatWouldGrowAreLeftAlone() throws {
        for noContextTakeover in [false, true] {
            let deflater = try #require(
                MessageDeflater(zlib: Zlib.shared!, windowBits: 10, level: 1, noContextTakeover: noContextTakeover))
            let inflater = try #require(MessageInflater(zlib: Zlib.shared!, windowBits: 10, noContextTakeover: noContextTakeover))
            var generator = SystemRandomNumberGenerator()
            let noise = Data((0..<4096).map { _ in UInt8.random(in: 0...255, using: &generator) })
            let texts = (0..<5).map { Data(String(repeating: "message \($0) says hello; ", count: 2000).utf8) }
            for message in [texts[0], texts[1], noise, texts[2], noise + texts[3], texts[4]] {
                guard let compressed = message.withUnsafeBytes({ deflater.compress($0) }) else {
                    #expect(message == noise, "only the noise is left uncompressed")
                    continue
                }
                #expect(compressed.count < message.count)
                _ = try inflater.inflate(Data(compressed), isFinal: true, limit: 1 << 20)
                #expect(inflater.takeMessage() == message)
            }
        }
    }
}
