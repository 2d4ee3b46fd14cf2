import Foundation

/// One RFC 6455 frame: what the codec reads and writes; messages are assembled from frames elsewhere.
struct WebSocketFrame: Sendable, Equatable {
    enum Opcode: UInt8, Sendable {
        case continuation = 0x0
        case text = 0x1
        case binary = 0x2
        case close = 0x8
        case ping = 0x9
        case pong = 0xA

        var isControl: Bool { rawValue & 0x8 != 0 }
    }

    var isFinal: Bool
    var opcode: Opcode
    /// RSV1, which `permessage-deflate` sets on the first frame of a compressed message (RFC 7692, 6).
    var isCompressed: Bool
    /// `Data`, so that a binary message is handed out with no copy past the one from the read buffer.
    var payload: Data

    init(isFinal: Bool = true, opcode: Opcode, isCompressed: Bool = false, payload: Data = Data()) {
        self.isFinal = isFinal
        self.opcode = opcode
        self.isCompressed = isCompressed
        self.payload = payload
    }

    init(isFinal: Bool = true, opcode: Opcode, isCompressed: Bool = false, payload: [UInt8]) {
        self.init(isFinal: isFinal, opcode: opcode, isCompressed: isCompressed, payload: Data(payload))
    }

    /// The frame's bytes, masked with `maskingKey` when one is given (a client must mask every frame).
    func encoded(maskingKey: [UInt8]?) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(payload.count + 14)
        bytes.append((isFinal ? 0x80 : 0) | (isCompressed ? 0x40 : 0) | opcode.rawValue)
        let maskBit: UInt8 = maskingKey == nil ? 0 : 0x80
        switch payload.count {
        case 0...125:
            bytes.append(maskBit | UInt8(payload.count))
        case 126...0xFFFF:
            bytes.append(maskBit | 126)
            bytes.append(UInt8(payload.count >> 8))
            bytes.append(UInt8(truncatingIfNeeded: payload.count))
        default:
            bytes.append(maskBit | 127)
            let length = UInt64(payload.count)
            for shift in stride(from: 56, through: 0, by: -8) {
                bytes.append(UInt8(truncatingIfNeeded: length >> UInt64(shift)))
            }
        }
        guard let maskingKey else { return bytes + payload }
        bytes.append(contentsOf: maskingKey)
        let start = bytes.count
        bytes.append(contentsOf: payload)
        bytes.withUnsafeMutableBytes { buffer in
            Self.mask(UnsafeMutableRawBufferPointer(rebasing: buffer[start...]), with: maskingKey)
        }
        return bytes
    }

    /// XORs `bytes` with the key repeated, four bytes at a time where it can (the same in both directions).
    static func mask(_ bytes: UnsafeMutableRawBufferPointer, with key: [UInt8]) {
        guard let base = bytes.baseAddress else { return }
        let count = bytes.count
        let word = UInt32(key[0]) | UInt32(key[1]) << 8 | UInt32(key[2]) << 16 | UInt32(key[3]) << 24
        var index = 0
        while index + 4 <= count {
            base.storeBytes(
                of: base.loadUnaligned(fromByteOffset: index, as: UInt32.self) ^ word, toByteOffset: index,
                as: UInt32.self)
            index += 4
        }
        while index < count {
            base.storeBytes(
                of: base.load(fromByteOffset: index, as: UInt8.self) ^ key[index & 3], toByteOffset: index,
                as: UInt8.self)
            index += 1
        }
    }

    /// A fresh masking key from the system's CSPRNG: RFC 6455 wants it unpredictable to the application's
    /// peer, so that a script cannot choose the bytes an intermediary sees.
    static func randomMaskingKey() -> [UInt8] { MaskingKeys.next() }
}

/// Masking keys from the system's CSPRNG, drawn 1,024 at a time: one system call per frame was a tenth of a small
/// message's round trip on loopback.
enum MaskingKeys {
    private struct Pool {
        var bytes: [UInt8] = []
        var next = 0
    }

    private static let pool = Locked.make(Pool())
    private static let poolSize = 4096

    static func next() -> [UInt8] {
        while true {
            let key = pool.withLock { pool -> [UInt8]? in
                guard pool.next + 4 <= pool.bytes.count else { return nil }
                defer { pool.next += 4 }
                return Array(pool.bytes[pool.next..<pool.next + 4])
            }
            if let key { return key }
            let fresh = freshBytes()
            pool.withLock { pool in
                if pool.next + 4 > pool.bytes.count { (pool.bytes, pool.next) = (fresh, 0) }
            }
        }
    }

    /// `poolSize` bytes from the kernel's CSPRNG (`/dev/urandom`), or from `SystemRandomNumberGenerator` eight at a
    /// time where that cannot be read.
    private static func freshBytes() -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: poolSize)
        let descriptor = open("/dev/urandom", O_RDONLY | O_CLOEXEC)
        if descriptor >= 0 {
            defer { systemClose(descriptor) }
            var filled = 0
            while filled < bytes.count {
                let count = bytes.withUnsafeMutableBytes {
                    systemRead(descriptor, $0.baseAddress! + filled, $0.count - filled)
                }
                guard count > 0 else { break }
                filled += count
            }
            if filled == bytes.count { return bytes }
        }
        var generator = SystemRandomNumberGenerator()
        for index in stride(from: 0, to: bytes.count, by: 8) {
            withUnsafeBytes(of: generator.next() as UInt64) { word in
                for offset in 0..<8 { bytes[index + offset] = word[offset] }
            }
        }
        return bytes
    }
}

/// Reads frames from bytes as they arrive, checking each header before its payload is read, so that a frame
/// that breaks the protocol or the size limit is refused without reading any of it.
struct WebSocketFrameDecoder {
    /// The largest data frame payload accepted; a header announcing more fails at once. The connection lowers
    /// it to the room left in a fragmented message.
    var maximumPayloadSize: Int
    /// Whether frames must be masked (a server's decoder) or must not be (a client's).
    let expectsMaskedFrames: Bool
    /// Whether `permessage-deflate` was negotiated: RSV1 may then mark the first frame of a data message.
    var acceptsCompressedFrames = false
    /// Whether the message being received is compressed: its continuation frames are then held to
    /// ``compressedPayloadLimit(room:)`` instead of the room itself.
    var continuesCompressedMessage = false
    /// Received bytes from `readIndex` to `filled`; past `filled`, room that reads go straight into.
    private var buffer: [UInt8] = []
    private var readIndex = 0
    private var filled = 0
    /// A large frame whose payload is still arriving, read straight into its own storage: the buffer would cost
    /// a second copy of every byte (the payload's `Data` is made from it).
    private var large: LargeFrame?

    /// Payloads at least this large skip the buffer once their header has come.
    static let directPayload = 64 * 1024

    private final class LargeFrame {
        let isFinal: Bool
        let opcode: WebSocketFrame.Opcode
        let isCompressed: Bool
        let storage: UnsafeMutableRawBufferPointer
        var received = 0
        /// Set once the storage belongs to the frame's `Data`.
        var handedOver = false

        init(isFinal: Bool, opcode: WebSocketFrame.Opcode, isCompressed: Bool, count: Int) {
            self.isFinal = isFinal
            self.opcode = opcode
            self.isCompressed = isCompressed
            storage = .allocate(byteCount: count, alignment: 16)
        }

        var room: Int { storage.count - received }

        /// The whole frame, its payload the storage itself (no copy).
        func frame() -> WebSocketFrame {
            handedOver = true
            let payload = Data(
                bytesNoCopy: storage.baseAddress!, count: storage.count,
                deallocator: .custom { bytes, _ in
                    bytes.deallocate()
                })
            return WebSocketFrame(
                isFinal: isFinal, opcode: opcode, isCompressed: isCompressed, payload: payload)
        }

        deinit { if !handedOver { storage.deallocate() } }
    }

    init(maximumPayloadSize: Int, expectsMaskedFrames: Bool = false) {
        self.maximumPayloadSize = maximumPayloadSize
        self.expectsMaskedFrames = expectsMaskedFrames
    }

    /// The bytes received and not yet part of a returned frame.
    var bufferedByteCount: Int { filled - readIndex + (large?.received ?? 0) }

    /// Takes `bytes` as if read; a large frame's storage takes what it has room for, and the buffer the rest.
    mutating func append(_ bytes: some Collection<UInt8>) {
        let array = Array(bytes)
        var taken = 0
        while taken < array.count {
            let count = read(upTo: array.count - taken) { room in
                let count = min(room.count, array.count - taken)
                array.withUnsafeBytes { source in
                    room.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[taken..<taken + count]))
                }
                return count
            }
            taken += count ?? 0
            // A large frame whose storage is full is complete: the bytes after it wait in the buffer.
            if let large, large.room == 0 { break }
        }
        if taken < array.count { stash(array[taken...]) }
    }

    /// Keeps `bytes` in the buffer behind a complete large frame, for the frames after it.
    private mutating func stash(_ bytes: ArraySlice<UInt8>) {
        let held = large
        large = nil
        append(bytes)
        large = held
    }

    /// Reads up to `count` bytes with `read` straight into the buffer, which makes room first: `read` gets
    /// the room and returns how many bytes it wrote (`nil` and 0 pass through, nothing added). A large frame's
    /// payload is read into its own storage instead, all that is still to come at once.
    mutating func read(upTo count: Int, _ read: (UnsafeMutableRawBufferPointer) throws -> Int?) rethrows
        -> Int?
    {
        guard count > 0 else { return 0 }
        if let large {
            // A complete frame not taken yet: nothing more is read until it is.
            guard large.room > 0 else { return nil }
            // All the payload still to come at once, whatever `count`: one system call for a megabyte, not four.
            let room = large.storage[large.received...]
            let got = try read(UnsafeMutableRawBufferPointer(rebasing: room))
            if let got, got > 0 { large.received += got }
            return got
        }
        if readIndex > 0, readIndex == filled || buffer.count - filled < count {
            buffer.withUnsafeMutableBytes { bytes in
                let live = filled - readIndex
                if live > 0 {
                    bytes.baseAddress!.copyMemory(from: bytes.baseAddress! + readIndex, byteCount: live)
                }
            }
            filled -= readIndex
            readIndex = 0
        }
        if buffer.count - filled < count {
            // Grown with memcpy and memset: appending a repeated zero goes byte by byte in unoptimized builds,
            // seconds for a few megabytes under ThreadSanitizer.
            let old = buffer
            let larger = old.count + max(count - (old.count - filled), old.count)
            buffer = [UInt8](unsafeUninitializedCapacity: larger) { bytes, initialized in
                let base = UnsafeMutableRawPointer(bytes.baseAddress!)
                old.withUnsafeBytes {
                    if let source = $0.baseAddress { base.copyMemory(from: source, byteCount: $0.count) }
                }
                memset(base + old.count, 0, larger - old.count)
                initialized = larger
            }
        }
        let start = filled
        let got = try buffer.withUnsafeMutableBytes { bytes in
            try read(UnsafeMutableRawBufferPointer(rebasing: bytes[start..<start + count]))
        }
        if let got, got > 0 { filled += got }
        return got
    }

    /// The next whole frame, or `nil` until more bytes arrive.
    /// - Throws: ``WebSocketError`` when the frame breaks RFC 6455 or the size limit.
    mutating func nextFrame() throws -> WebSocketFrame? {
        if let large {
            guard large.room == 0 else { return nil }
            self.large = nil
            return large.frame()
        }
        switch try header() {
        case let .complete(frame, length)?:
            readIndex += length
            return frame
        case let .largeBegun(head)?:
            // What of the payload has come moves to the frame's storage; the rest is read straight into it.
            let frame = LargeFrame(
                isFinal: head.isFinal, opcode: head.opcode, isCompressed: head.isCompressed,
                count: head.payloadLength)
            let start = readIndex + head.headerLength
            frame.received = filled - start
            buffer.withUnsafeBytes { bytes in
                frame.storage.baseAddress!.copyMemory(
                    from: bytes.baseAddress! + start, byteCount: frame.received)
            }
            readIndex = filled
            large = frame
            return nil
        case .needs?, nil:
            return nil
        }
    }

    private enum Parsed {
        case needs(Int)
        case complete(WebSocketFrame, length: Int)
        /// An unmasked data frame of at least ``directPayload`` bytes whose payload has not all come.
        case largeBegun(
            (
                isFinal: Bool, opcode: WebSocketFrame.Opcode, isCompressed: Bool, headerLength: Int,
                payloadLength: Int
            ))
    }

    private func header() throws -> Parsed? {
        let available = filled - readIndex
        guard available >= 2 else { return .needs(2 - available) }
        let first = buffer[readIndex]
        let second = buffer[readIndex + 1]
        guard let opcode = WebSocketFrame.Opcode(rawValue: first & 0x0F) else {
            throw WebSocketError.protocolViolation(
                code: .protocolError, reason: "unknown opcode \(first & 0x0F)")
        }
        let isCompressed = first & 0x40 != 0
        try checkReservedBits(first, opcode: opcode)
        let isFinal = first & 0x80 != 0
        let isMasked = second & 0x80 != 0
        if isMasked != expectsMaskedFrames {
            throw WebSocketError.protocolViolation(
                code: .protocolError,
                reason: isMasked ? "a server frame is masked" : "a client frame is not masked")
        }
        var headerLength = 2
        var payloadLength = UInt64(second & 0x7F)
        if opcode.isControl {
            if !isFinal {
                throw WebSocketError.protocolViolation(
                    code: .protocolError, reason: "a control frame is fragmented")
            }
            if payloadLength > 125 {
                throw WebSocketError.protocolViolation(
                    code: .protocolError, reason: "a control frame is longer than 125 bytes")
            }
        }
        if payloadLength == 126 {
            headerLength = 4
            guard available >= headerLength else { return .needs(headerLength - available) }
            payloadLength = UInt64(buffer[readIndex + 2]) << 8 | UInt64(buffer[readIndex + 3])
        } else if payloadLength == 127 {
            headerLength = 10
            guard available >= headerLength else { return .needs(headerLength - available) }
            payloadLength = (2..<10).reduce(0) { $0 << 8 | UInt64(buffer[readIndex + $1]) }
            if payloadLength >> 63 != 0 {
                throw WebSocketError.protocolViolation(
                    code: .protocolError, reason: "a frame length has its top bit set")
            }
        }
        let compressed = opcode == .continuation ? continuesCompressedMessage : isCompressed
        let limit = compressed ? Self.compressedPayloadLimit(room: maximumPayloadSize) : maximumPayloadSize
        if !opcode.isControl, payloadLength > UInt64(limit) {
            throw WebSocketError.messageTooBig(limit: maximumPayloadSize)
        }
        let maskingKeyStart = readIndex + headerLength
        if isMasked { headerLength += 4 }
        let total = headerLength + Int(payloadLength)
        guard available >= total else {
            if !isMasked, !opcode.isControl, payloadLength >= Self.directPayload {
                return .largeBegun((isFinal, opcode, isCompressed, headerLength, Int(payloadLength)))
            }
            return .needs(total - available)
        }
        let payloadStart = readIndex + headerLength
        var payload = buffer.withUnsafeBytes { bytes in
            Data(bytes: bytes.baseAddress! + payloadStart, count: Int(payloadLength))
        }
        if isMasked {
            let key = Array(buffer[maskingKeyStart..<maskingKeyStart + 4])
            payload.withUnsafeMutableBytes { WebSocketFrame.mask($0, with: key) }
        }
        return .complete(
            WebSocketFrame(isFinal: isFinal, opcode: opcode, isCompressed: isCompressed, payload: payload),
            length: total)
    }

    /// RSV2 and RSV3 are never used; RSV1 only on the first frame of a data message, once compression was agreed.
    private func checkReservedBits(_ first: UInt8, opcode: WebSocketFrame.Opcode) throws {
        if first & 0x30 != 0 {
            throw WebSocketError.protocolViolation(
                code: .protocolError, reason: "a reserved bit (RSV2 or RSV3) is set")
        }
        guard first & 0x40 != 0 else { return }
        if !acceptsCompressedFrames {
            throw WebSocketError.protocolViolation(
                code: .protocolError, reason: "a reserved bit is set (no extension was negotiated)")
        }
        if opcode.isControl {
            throw WebSocketError.protocolViolation(
                code: .protocolError, reason: "RSV1 is set on a control frame")
        }
        if opcode == .continuation {
            throw WebSocketError.protocolViolation(
                code: .protocolError, reason: "RSV1 is set on a continuation frame")
        }
    }

    /// The largest compressed payload that may still inflate within `room` bytes: DEFLATE can grow data that
    /// does not compress by 5 bytes per 64 KiB stored block, and a flush adds a few bytes to each frame.
    static func compressedPayloadLimit(room: Int) -> Int {
        let (limit, overflow) = room.addingReportingOverflow(room / 8192 + 64)
        return overflow ? .max : limit
    }
}
