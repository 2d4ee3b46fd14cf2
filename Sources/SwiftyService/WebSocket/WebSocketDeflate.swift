import CCurlShim
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#elseif canImport(Musl)
import Musl
#endif

/// A socket's half of a negotiated `permessage-deflate`: what inflates the server's messages and what compresses
/// the client's; both used on the engine's thread only.
struct WebSocketDeflate {
    let agreed: WebSocketCompression
    let inflater: MessageInflater
    /// `nil` when the agreed window is 8 bits, which zlib's raw deflate refuses: messages then go uncompressed.
    let deflater: MessageDeflater?

    /// Messages shorter than this go uncompressed: DEFLATE's block header and the end of a flush leave them no
    /// smaller, and a message that does not shrink would cost the compression context (it is reset).
    static let smallestCompressed = 16

    /// The streams for `agreed`.
    /// - Throws: ``WebSocketError/handshakeFailed(_:)`` when zlib is missing or cannot make a stream.
    init(_ agreed: WebSocketCompression) throws {
        guard let zlib = Zlib.shared else {
            throw WebSocketError.handshakeFailed("the server agreed to permessage-deflate, and zlib could not be loaded")
        }
        guard
            let inflater = MessageInflater(
                zlib: zlib, windowBits: agreed.serverMaxWindowBits ?? 15, noContextTakeover: agreed.serverNoContextTakeover)
        else { throw WebSocketError.handshakeFailed("zlib could not start inflating") }
        self.agreed = agreed
        self.inflater = inflater
        if agreed.clientMaxWindowBits >= 9 {
            guard
                let deflater = MessageDeflater(
                    zlib: zlib, windowBits: agreed.clientMaxWindowBits, level: agreed.level,
                    noContextTakeover: agreed.clientNoContextTakeover)
            else { throw WebSocketError.handshakeFailed("zlib could not start compressing") }
            self.deflater = deflater
        } else {
            deflater = nil
        }
    }
}

/// Inflates the server's compressed messages frame by frame into one buffer that never grows past the message
/// size limit: a small message that would inflate to gigabytes stops at the limit, one byte over it.
final class MessageInflater {
    private let zlib: Zlib
    private let stream: Zlib.Stream
    private let noContextTakeover: Bool
    private var buffer: UnsafeMutableRawPointer?
    /// The bytes allocated for the message being inflated.
    private(set) var capacity = 0
    /// The bytes of the message inflated so far.
    private(set) var count = 0
    /// Whether the server ended its DEFLATE stream (a block with BFINAL) in this message: what follows is ignored
    /// and the next message starts a new stream.
    private var streamEnded = false

    /// The end of a flush, which the sender leaves out of each message (RFC 7692, 7.2.2).
    private static let tail: [UInt8] = [0x00, 0x00, 0xFF, 0xFF]
    /// How much the buffer grows by at first.
    private static let firstCapacity = 16 * 1024

    init?(zlib: Zlib, windowBits: Int, noContextTakeover: Bool) {
        self.zlib = zlib
        self.noContextTakeover = noContextTakeover
        stream = .allocate(capacity: 1)
        stream.initialize(to: czlib_stream())
        guard zlib.inflateInit2(stream, -Int32(windowBits), zlib.version, Zlib.streamSize) == Zlib.ok else {
            stream.deallocate()
            return nil
        }
    }

    deinit {
        _ = zlib.inflateEnd(stream)
        stream.deallocate()
        free(buffer)
    }

    /// Inflates one frame's payload onto the message, the final frame's followed by the tail the sender left out.
    /// - Returns: The offset in the message of the bytes this frame added.
    /// - Throws: ``WebSocketError/messageTooBig(limit:)`` as soon as the message inflates past `limit` bytes,
    ///   ``WebSocketError/protocolViolation(code:reason:)`` (1002) for data that is not DEFLATE.
    func inflate(_ payload: Data, isFinal: Bool, limit: Int) throws -> Int {
        let start = count
        try payload.withUnsafeBytes { try feed($0, limit: limit) }
        if isFinal { try Self.tail.withUnsafeBytes { try feed($0, limit: limit) } }
        return start
    }

    /// Calls `body` with the message's bytes from `start` on.
    func withBytes<Result>(from start: Int, _ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try body(UnsafeRawBufferPointer(start: buffer.map { $0 + start }, count: count - start))
    }

    /// The whole message, handed over; the inflater is ready for the next one (with a fresh context when the
    /// server does not keep its own, or ended its stream).
    func takeMessage() -> Data {
        defer {
            count = 0
            if noContextTakeover || streamEnded { _ = zlib.inflateReset(stream) }
            streamEnded = false
        }
        guard let buffer, count > 0 else { return Data() }
        // A buffer much larger than its message is copied out of, so that queued messages hold what they need.
        guard count > Self.firstCapacity, capacity - count <= count / 8 else {
            let message = Data(bytes: buffer, count: count)
            if capacity > 4 * Self.firstCapacity { release() }
            return message
        }
        self.buffer = nil
        capacity = 0
        return Data(bytesNoCopy: buffer, count: count, deallocator: .free)
    }

    private func release() {
        free(buffer)
        buffer = nil
        capacity = 0
    }

    private func feed(_ input: UnsafeRawBufferPointer, limit: Int) throws {
        guard var next = input.baseAddress, !streamEnded else { return }
        var left = input.count
        while left > 0 {
            let piece = min(left, 1 << 30)
            stream.pointee.next_in = next.assumingMemoryBound(to: UInt8.self)
            stream.pointee.avail_in = UInt32(piece)
            try inflateAvailable(limit: limit)
            if streamEnded { return }
            next += piece
            left -= piece
        }
    }

    private func inflateAvailable(limit: Int) throws {
        while true {
            if count == capacity { try grow(limit: limit) }
            let room = capacity - count
            stream.pointee.next_out = (buffer! + count).assumingMemoryBound(to: UInt8.self)
            stream.pointee.avail_out = UInt32(clamping: room)
            let result = zlib.inflate(stream, Zlib.syncFlush)
            count += room - Int(stream.pointee.avail_out)
            if count > limit { throw WebSocketError.messageTooBig(limit: limit) }
            switch result {
            case Zlib.streamEnd:
                streamEnded = true
                return
            case Zlib.ok where stream.pointee.avail_in > 0 || stream.pointee.avail_out == 0:
                continue
            case Zlib.ok, Zlib.bufferError:
                return
            default:
                let detail = stream.pointee.msg.map { String(cString: $0) } ?? "zlib error \(result)"
                throw WebSocketError.protocolViolation(
                    code: .protocolError, reason: "a compressed message does not inflate (\(detail))")
            }
        }
    }

    /// Doubles the buffer, up to one byte past `limit`: that byte filled is how a message over the limit shows.
    private func grow(limit: Int) throws {
        let ceiling = limit == .max ? limit : limit + 1
        let larger = min(ceiling, capacity == 0 ? Self.firstCapacity : capacity + min(capacity, 1 << 30))
        guard larger > capacity, let grown = realloc(buffer, larger) else { throw WebSocketError.messageTooBig(limit: limit) }
        buffer = grown
        capacity = larger
    }
}

/// Compresses the client's messages as `permessage-deflate` wants them: raw DEFLATE flushed at the end of each
/// message, the flush's last 4 bytes (00 00 FF FF) left out.
final class MessageDeflater {
    private let zlib: Zlib
    private let stream: Zlib.Stream
    private let noContextTakeover: Bool

    init?(zlib: Zlib, windowBits: Int, level: Int, noContextTakeover: Bool) {
        self.zlib = zlib
        self.noContextTakeover = noContextTakeover
        stream = .allocate(capacity: 1)
        stream.initialize(to: czlib_stream())
        let result = zlib.deflateInit2(
            stream, Int32(level), Zlib.deflated, -Int32(windowBits), 8, Zlib.defaultStrategy, zlib.version, Zlib.streamSize)
        guard result == Zlib.ok else {
            stream.deallocate()
            return nil
        }
    }

    deinit {
        _ = zlib.deflateEnd(stream)
        stream.deallocate()
    }

    /// The message compressed, or `nil` when that would not make it smaller: then the context is reset (the server
    /// never sees those bytes, so later messages must not refer to them) and the message goes as it is.
    func compress(_ message: UnsafeRawBufferPointer) -> [UInt8]? {
        // Room for as many bytes as the message plus the tail: a result that needs more is no smaller.
        let room = message.count + 4
        var complete = false
        let output = [UInt8](unsafeUninitializedCapacity: room) { bytes, initialized in
            stream.pointee.next_out = bytes.baseAddress
            stream.pointee.avail_out = UInt32(clamping: room)
            var next = message.baseAddress
            var left = message.count
            repeat {
                let piece = min(left, 1 << 30)
                stream.pointee.next_in = next?.assumingMemoryBound(to: UInt8.self)
                stream.pointee.avail_in = UInt32(piece)
                let last = piece == left
                let result = zlib.deflate(stream, last ? Zlib.syncFlush : 0)
                guard result == Zlib.ok || result == Zlib.bufferError, stream.pointee.avail_out > 0 else { break }
                next = next.map { $0 + piece }
                left -= piece
                complete = last
            } while !complete
            initialized = room - Int(stream.pointee.avail_out)
        }
        guard complete, output.count >= 4, output.count - 4 < message.count, output.suffix(4).elementsEqual([0, 0, 0xFF, 0xFF])
        else {
            _ = zlib.deflateReset(stream)
            return nil
        }
        if noContextTakeover { _ = zlib.deflateReset(stream) }
        return Array(output.dropLast(4))
    }
}
