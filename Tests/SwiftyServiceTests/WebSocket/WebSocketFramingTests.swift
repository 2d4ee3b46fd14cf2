import Foundation
import Testing

@testable import SwiftyService

/// RFC 6455 framing without a network: the RFC's own example frames (section 5.7), masking, fragmentation,
/// control frames between fragments, UTF-8 across fragments, reserved bits and opcodes, the size limit.
@Suite struct WebSocketFramingTests {
    private func frames(from bytes: [UInt8], limit: Int = 1 << 20, chunk: Int = 1) throws -> [WebSocketFrame]
    {
        var decoder = WebSocketFrameDecoder(maximumPayloadSize: limit)
        var frames: [WebSocketFrame] = []
        var offset = 0
        while offset < bytes.count {
            decoder.append(bytes[offset..<min(offset + chunk, bytes.count)])
            offset += chunk
            while let frame = try decoder.nextFrame() { frames.append(frame) }
        }
        return frames
    }

    private func messages(from bytes: [UInt8], limit: Int = 1 << 20) throws -> [WebSocketReceiver.Event] {
        var receiver = WebSocketReceiver(maximumMessageSize: limit)
        return try frames(from: bytes, limit: limit).compactMap { try receiver.receive($0) }
    }

    private func violation(_ bytes: [UInt8], limit: Int = 1 << 20) -> WebSocketError? {
        do {
            _ = try messages(from: bytes, limit: limit)
            return nil
        } catch {
            return error as? WebSocketError
        }
    }

    /// A large payload skips the buffer once its header has come (`WebSocketFrameDecoder.directPayload`): whatever
    /// the pieces the bytes arrive in, the frames before, the large one and those behind it come out whole, in order.
    @Test(arguments: [1, 7, 1000, 65_536, 70_000, 1 << 20])
    func aLargeFrameBetweenSmallOnesArrivesWholeInAnyPieces(_ chunk: Int) throws {
        let large = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let exact = Data(repeating: 7, count: WebSocketFrameDecoder.directPayload)
        var bytes = WebSocketFrame(opcode: .text, payload: Data("before".utf8)).encoded(maskingKey: nil)
        bytes += WebSocketFrame(opcode: .binary, payload: large).encoded(maskingKey: nil)
        bytes += WebSocketFrame(opcode: .ping, payload: Data("p".utf8)).encoded(maskingKey: nil)
        bytes += WebSocketFrame(opcode: .binary, payload: exact).encoded(maskingKey: nil)
        bytes += WebSocketFrame(opcode: .text, payload: Data("after".utf8)).encoded(maskingKey: nil)
        let payloads = try frames(from: bytes, chunk: chunk).map(\.payload)
        #expect(payloads == [Data("before".utf8), large, Data("p".utf8), exact, Data("after".utf8)])
    }

    @Test func theRFCsUnmaskedTextFrameReadsAsHello() throws {
        #expect(try messages(from: [0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f]) == [.message(.text("Hello"))])
    }

    @Test func theRFCsMaskedTextFrameIsWrittenAndReadByAServer() throws {
        let bytes: [UInt8] = [0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58]
        let frame = WebSocketFrame(opcode: .text, payload: Array("Hello".utf8))
        #expect(frame.encoded(maskingKey: [0x37, 0xfa, 0x21, 0x3d]) == bytes)
        var serverSide = WebSocketFrameDecoder(maximumPayloadSize: 125, expectsMaskedFrames: true)
        serverSide.append(bytes)
        #expect(try serverSide.nextFrame() == frame)
    }

    @Test func theRFCsFragmentedTextIsOneMessage() throws {
        #expect(
            try messages(from: [0x01, 0x03, 0x48, 0x65, 0x6c, 0x80, 0x02, 0x6c, 0x6f]) == [
                .message(.text("Hello"))
            ])
    }

    @Test func theRFCsPingAndPongAreControlEvents() throws {
        #expect(
            try messages(from: [0x89, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f]) == [.ping(Data("Hello".utf8))])
        let pong = WebSocketFrame(opcode: .pong, payload: Array("Hello".utf8))
        #expect(
            pong.encoded(maskingKey: [0x37, 0xfa, 0x21, 0x3d])
                == [0x8a, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58])
    }

    @Test func theRFCs256ByteAnd64KiBBinaryFramesUseTheLongLengths() throws {
        let small = WebSocketFrame(opcode: .binary, payload: [UInt8](repeating: 7, count: 256)).encoded(
            maskingKey: nil)
        #expect(Array(small.prefix(4)) == [0x82, 0x7E, 0x01, 0x00])
        let large = WebSocketFrame(opcode: .binary, payload: [UInt8](repeating: 9, count: 65536)).encoded(
            maskingKey: nil)
        #expect(Array(large.prefix(10)) == [0x82, 0x7F, 0, 0, 0, 0, 0, 1, 0, 0])
        #expect(
            try messages(from: small + large)
                == [
                    .message(.binary(Data(repeating: 7, count: 256))),
                    .message(.binary(Data(repeating: 9, count: 65536))),
                ])
    }

    @Test func framesSplitAtEveryByteReadTheSameAsWhole() throws {
        let bytes = WebSocketFrame(opcode: .binary, payload: Array(0..<200)).encoded(maskingKey: nil)
        #expect(try frames(from: bytes, chunk: 1) == frames(from: bytes, chunk: bytes.count))
    }

    @Test func aClientMasksEveryFrameWithAFreshKey() {
        let frame = WebSocketFrame(opcode: .text, payload: Array("same".utf8))
        let keys = Set((0..<20).map { _ in frame.encoded(maskingKey: WebSocketFrame.randomMaskingKey()) })
        #expect(keys.count > 15)
        #expect(keys.allSatisfy { $0[1] & 0x80 != 0 })
    }

    @Test func aControlFrameBetweenFragmentsIsDeliveredFirst() throws {
        let bytes: [UInt8] = [0x01, 0x03, 0x48, 0x65, 0x6c, 0x89, 0x01, 0x21, 0x80, 0x02, 0x6c, 0x6f]
        #expect(try messages(from: bytes) == [.ping(Data([0x21])), .message(.text("Hello"))])
    }

    @Test func reservedBitsAndOpcodesAndMaskedServerFramesAreProtocolErrors() {
        for bytes: [UInt8] in [
            [0xC1, 0x00], [0xA1, 0x00], [0x91, 0x00],  // RSV1, RSV2, RSV3
            [0x83, 0x00], [0x8B, 0x00],  // reserved data and control opcodes
            [0x81, 0x80, 1, 2, 3, 4],  // a masked frame from the server
            [0x09, 0x00],  // a fragmented ping
            [0x89, 0x7E, 0x00, 0x7E] + [UInt8](repeating: 0, count: 126),  // a ping longer than 125
            [0x80, 0x00],  // a continuation of nothing
            [0x01, 0x01, 0x41, 0x01, 0x01, 0x42],  // a new message inside a fragmented one
            [0x88, 0x01, 0x03],  // a close frame of one byte
            [0x88, 0x02, 0x03, 0xED],  // close code 1005 on the wire
        ] {
            #expect(violation(bytes)?.closeCode == .protocolError, "\(bytes.prefix(4))")
        }
    }

    @Test func invalidUTF8FailsWithTheFragmentThatBreaksIt() throws {
        // "κόσμε" then a lone continuation byte, split so that a valid two-byte character straddles fragments.
        var receiver = WebSocketReceiver(maximumMessageSize: 1000)
        #expect(try receiver.receive(WebSocketFrame(isFinal: false, opcode: .text, payload: [0xCE])) == nil)
        #expect(
            try receiver.receive(
                WebSocketFrame(isFinal: false, opcode: .continuation, payload: [0xBA, 0xE1])) == nil)
        #expect(
            throws: WebSocketError.protocolViolation(
                code: .invalidFramePayloadData, reason: "a text message is not valid UTF-8")
        ) {
            try receiver.receive(WebSocketFrame(isFinal: false, opcode: .continuation, payload: [0x41]))
        }
        #expect(violation([0x81, 0x02, 0xED, 0xA0])?.closeCode == .invalidFramePayloadData)  // a surrogate
        #expect(violation([0x81, 0x02, 0xC0, 0x80])?.closeCode == .invalidFramePayloadData)  // overlong NUL
        #expect(violation([0x81, 0x01, 0xCE])?.closeCode == .invalidFramePayloadData)  // ends mid-character
        #expect(violation([0x88, 0x03, 0x03, 0xE8, 0xFF])?.closeCode == .invalidFramePayloadData)  // close reason
        #expect(try messages(from: [0x01, 0x01, 0xCE, 0x80, 0x01, 0xBA]) == [.message(.text("κ"))])
    }

    @Test func aHeaderAnnouncingMoreThanTheLimitFailsBeforeItsPayload() {
        // A 2 GB length header alone, with no payload after it: refused at once with 1009.
        let header: [UInt8] = [0x82, 0x7F, 0, 0, 0, 0, 0x80, 0, 0, 0]
        #expect(violation(header, limit: 1 << 20) == .messageTooBig(limit: 1 << 20))
        #expect(violation(header, limit: 1 << 20)?.closeCode == .messageTooBig)
        #expect(violation([0x82, 0x7F, 0x80, 0, 0, 0, 0, 0, 0, 0])?.closeCode == .protocolError)
    }

    @Test func fragmentsAddingUpToMoreThanTheLimitFail() {
        let fragment = [UInt8](repeating: 1, count: 60)
        let bytes =
            WebSocketFrame(isFinal: false, opcode: .binary, payload: fragment).encoded(maskingKey: nil)
            + WebSocketFrame(isFinal: true, opcode: .continuation, payload: fragment).encoded(maskingKey: nil)
        #expect(violation(bytes, limit: 100) == .messageTooBig(limit: 100))
        #expect(violation(bytes, limit: 120) == nil)
    }

    @Test func closeFramesCarryCodesAndReasonsBothWays() throws {
        let payload = WebSocketReceiver.closePayload(code: .goingAway, reason: "bye")
        #expect(payload == [0x03, 0xE9, 0x62, 0x79, 0x65])
        #expect(try messages(from: [0x88, 0x05] + payload) == [.close(code: .goingAway, reason: "bye")])
        #expect(try messages(from: [0x88, 0x00]) == [.close(code: nil, reason: "")])
        let long = WebSocketReceiver.closePayload(
            code: .normalClosure, reason: String(repeating: "é", count: 100))
        #expect(long.count <= 125 && long.count % 2 == 0)
    }

    @Test func sha1MatchesTheStandardsVectors() {
        func hex(_ text: String) -> String {
            SHA1.digest(Array(text.utf8)).map { String(format: "%02x", $0) }.joined()
        }
        #expect(hex("") == "da39a3ee5e6b4b0d3255bfef95601890afd80709")
        #expect(hex("abc") == "a9993e364706816aba3e25717850c26c9cd0d89d")
        #expect(
            hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")
                == "84983e441c3bd26ebaae4aa1f95129e5e54670f1")
        #expect(hex(String(repeating: "a", count: 1000)) == "291e9a6c66994949b57ba5e650361e98fc36b1ba")
        #expect(hex(String(repeating: "x", count: 55)) == "cef734ba81a024479e09eb5a75b6ddae62e6abf1")
        #expect(hex(String(repeating: "x", count: 56)) == "901305367c259952f4e7af8323f480d59f81335b")
        #expect(hex(String(repeating: "x", count: 64)) == "bb2fa3ee7afb9f54c6dfb5d021f14b1ffe40c163")
    }

    @Test func theHandshakeChecksTheRFCsAcceptValue() throws {
        let handshake = WebSocketHandshake(
            subprotocols: ["chat", "superchat"], key: "dGhlIHNhbXBsZSBub25jZQ==")
        #expect(WebSocketHandshake.acceptValue(for: handshake.key) == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        let good = [
            "upgrade": "websocket", "connection": "Upgrade",
            "sec-websocket-accept": "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=",
        ]
        #expect(try handshake.validate(headers: good).subprotocol == nil)
        #expect(
            try handshake.validate(headers: good.merging(["Sec-WebSocket-Protocol": "chat"]) { $1 })
                .subprotocol == "chat")
        #expect(throws: WebSocketError.self) {
            try handshake.validate(headers: good.merging(["sec-websocket-accept": "x"]) { $1 })
        }
        #expect(throws: WebSocketError.self) {
            try handshake.validate(headers: good.merging(["Sec-WebSocket-Protocol": "other"]) { $1 })
        }
        #expect(throws: WebSocketError.self) {
            try handshake.validate(headers: good.merging(["upgrade": "h2c"]) { $1 })
        }
        #expect(WebSocketHandshake().key != WebSocketHandshake().key)
        #expect(Data(base64Encoded: WebSocketHandshake().key)?.count == 16)
    }

    @Test func aResponseHeadIsReadOnceItsBlankLineArrives() throws {
        let text = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
        let bytes = Array(text.utf8) + [0x81, 0x00]
        #expect(try HTTPResponseHead.parse(Array(bytes.prefix(20))) == nil)
        let parsed = try #require(try HTTPResponseHead.parse(bytes))
        #expect(parsed.head.statusCode == 101 && parsed.head.headers["Upgrade"] == "websocket")
        #expect(parsed.length == text.utf8.count)
        #expect(throws: WebSocketError.self) { try HTTPResponseHead.parse(Array("SSH-2.0\r\n\r\n".utf8)) }
    }
}
