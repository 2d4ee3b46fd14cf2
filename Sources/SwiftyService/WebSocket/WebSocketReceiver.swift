import Foundation

/// Assembles messages from frames: fragmentation, control frames between fragments, UTF-8 checked as each
/// fragment arrives (so an invalid text fails before it is whole), the message size limit over all of a
/// message's fragments, and close frames' codes and reasons.
struct WebSocketReceiver {
    enum Event: Equatable {
        case message(WebSocketMessage)
        case ping(Data)
        case pong(Data)
        /// The peer's close frame; `code` is `nil` when it carried none.
        case close(code: WebSocketCloseCode?, reason: String)
    }

    let maximumMessageSize: Int
    private var fragments = Data()
    private var fragmentedOpcode: WebSocketFrame.Opcode?
    private var textValidator = UTF8Validator()
    /// Inflates compressed messages, when `permessage-deflate` was negotiated.
    private let inflater: MessageInflater?
    /// Whether the message being received is compressed (its first frame had RSV1).
    private(set) var isReceivingCompressedMessage = false

    init(maximumMessageSize: Int, inflater: MessageInflater? = nil) {
        self.maximumMessageSize = maximumMessageSize
        self.inflater = inflater
    }

    /// How many more bytes of data the message being received may hold, inflated: the limit for the next data frame.
    var remainingRoom: Int {
        maximumMessageSize - (isReceivingCompressedMessage ? inflater?.count ?? 0 : fragments.count)
    }

    /// What a frame means, or `nil` for a fragment of a message not yet whole.
    /// - Throws: ``WebSocketError`` when the frame breaks RFC 6455, the size limit or UTF-8.
    mutating func receive(_ frame: WebSocketFrame) throws -> Event? {
        switch frame.opcode {
        case .ping: return .ping(frame.payload)
        case .pong: return .pong(frame.payload)
        case .close: return try closeEvent(frame.payload)
        case .text, .binary:
            if fragmentedOpcode != nil {
                throw WebSocketError.protocolViolation(
                    code: .protocolError, reason: "a new message began before the fragmented one ended")
            }
            fragmentedOpcode = frame.opcode
            textValidator = UTF8Validator()
            isReceivingCompressedMessage = frame.isCompressed
        case .continuation:
            if fragmentedOpcode == nil {
                throw WebSocketError.protocolViolation(
                    code: .protocolError, reason: "a continuation frame came with no message to continue")
            }
        }
        if isReceivingCompressedMessage { return try receiveCompressed(frame) }
        if frame.payload.count > remainingRoom { throw WebSocketError.messageTooBig(limit: maximumMessageSize) }
        let isText = fragmentedOpcode == .text
        if isText, !textValidator.consume(frame.payload) || (frame.isFinal && !textValidator.isAtBoundary) {
            throw WebSocketError.protocolViolation(code: .invalidFramePayloadData, reason: "a text message is not valid UTF-8")
        }
        guard frame.isFinal else {
            fragments.append(frame.payload)
            return nil
        }
        let bytes: Data
        if fragments.isEmpty {
            bytes = frame.payload
        } else {
            fragments.append(frame.payload)
            bytes = fragments
            fragments = Data()
        }
        fragmentedOpcode = nil
        return .message(isText ? .text(String(decoding: bytes, as: UTF8.self)) : .binary(bytes))
    }

    /// A frame of a compressed message: inflated within the size limit, its text checked as it inflates.
    private mutating func receiveCompressed(_ frame: WebSocketFrame) throws -> Event? {
        guard let inflater else {
            throw WebSocketError.protocolViolation(code: .protocolError, reason: "a compressed frame came uncompressed")
        }
        let start = try inflater.inflate(frame.payload, isFinal: frame.isFinal, limit: maximumMessageSize)
        let isText = fragmentedOpcode == .text
        if isText {
            let valid = inflater.withBytes(from: start) { textValidator.consume($0) }
            if !valid || (frame.isFinal && !textValidator.isAtBoundary) {
                throw WebSocketError.protocolViolation(code: .invalidFramePayloadData, reason: "a text message is not valid UTF-8")
            }
        }
        guard frame.isFinal else { return nil }
        let bytes = inflater.takeMessage()
        fragmentedOpcode = nil
        isReceivingCompressedMessage = false
        return .message(isText ? .text(String(decoding: bytes, as: UTF8.self)) : .binary(bytes))
    }

    private func closeEvent(_ data: Data) throws -> Event {
        let payload = [UInt8](data)
        guard !payload.isEmpty else { return .close(code: nil, reason: "") }
        guard payload.count >= 2 else {
            throw WebSocketError.protocolViolation(code: .protocolError, reason: "a close frame holds one byte")
        }
        let code = WebSocketCloseCode(rawValue: UInt16(payload[0]) << 8 | UInt16(payload[1]))
        guard code.mayBeSent else {
            throw WebSocketError.protocolViolation(code: .protocolError, reason: "the close code \(code.rawValue) may not be sent")
        }
        let reasonBytes = Array(payload[2...])
        var validator = UTF8Validator()
        guard validator.consume(reasonBytes), validator.isAtBoundary else {
            throw WebSocketError.protocolViolation(code: .invalidFramePayloadData, reason: "a close reason is not valid UTF-8")
        }
        return .close(code: code, reason: String(decoding: reasonBytes, as: UTF8.self))
    }

    /// The payload of a close frame with `code` and `reason`, the reason cut at a character boundary to fit
    /// the 123 bytes a control frame leaves for it.
    static func closePayload(code: WebSocketCloseCode, reason: String) -> [UInt8] {
        var reasonBytes = Array(reason.utf8)
        if reasonBytes.count > 123 {
            var cut = 123
            while cut > 0, reasonBytes[cut] & 0xC0 == 0x80 { cut -= 1 }
            reasonBytes = Array(reasonBytes[..<cut])
        }
        return [UInt8(code.rawValue >> 8), UInt8(truncatingIfNeeded: code.rawValue)] + reasonBytes
    }
}

/// Checks UTF-8 a piece at a time (Unicode's table 3-7 of well-formed sequences: no overlong forms, no
/// surrogates, nothing above U+10FFFF), so that a sequence split across fragments is judged whole.
struct UTF8Validator {
    private var remaining = 0
    private var lowest: UInt8 = 0x80
    private var highest: UInt8 = 0xBF

    /// Whether everything consumed so far ends on a whole character.
    var isAtBoundary: Bool { remaining == 0 }

    /// Consumes bytes; `false` as soon as they cannot be the start of valid UTF-8.
    mutating func consume(_ data: Data) -> Bool { data.withUnsafeBytes { consume($0) } }

    /// Consumes bytes; `false` as soon as they cannot be the start of valid UTF-8.
    mutating func consume(_ bytes: [UInt8]) -> Bool { bytes.withUnsafeBytes { consume($0) } }

    /// Consumes bytes; `false` as soon as they cannot be the start of valid UTF-8.
    mutating func consume(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var index = 0
        let count = bytes.count
        while index < count {
            // ASCII, eight bytes at a time, between characters.
            if remaining == 0, index + 8 <= count,
                bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self) & 0x8080_8080_8080_8080 == 0
            {
                index += 8
                continue
            }
            let byte = bytes[index]
            index += 1
            if remaining > 0 {
                guard byte >= lowest, byte <= highest else { return false }
                remaining -= 1
                lowest = 0x80
                highest = 0xBF
                continue
            }
            switch byte {
            case 0x00...0x7F: continue
            case 0xC2...0xDF: remaining = 1
            case 0xE0: (remaining, lowest) = (2, 0xA0)
            case 0xE1...0xEC, 0xEE...0xEF: remaining = 2
            case 0xED: (remaining, highest) = (2, 0x9F)
            case 0xF0: (remaining, lowest) = (3, 0x90)
            case 0xF1...0xF3: remaining = 3
            case 0xF4: (remaining, highest) = (3, 0x8F)
            default: return false
            }
        }
        return true
    }
}
