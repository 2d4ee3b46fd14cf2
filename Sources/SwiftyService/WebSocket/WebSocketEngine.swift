import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#elseif canImport(Musl)
import Musl
#endif

/// One open WebSocket over a byte stream, driven by a thread of its own: it reads only while the reader has
/// room (so a slow reader slows the server down), answers pings, writes messages in order with control
/// frames between them, keeps the connection alive with pings, and carries out the close handshake.
final class WebSocketEngine: WebSocketChannel, @unchecked Sendable {
    let subprotocol: String?
    let compression: WebSocketCompression?
    private let options: WebSocketOptions
    private let shared: Locked<Shared>
    /// Held while the connection is read or written, by the engine's thread or by a sender that writes its own
    /// frame: libcurl's handle (and TLS) must not be used by two threads at once, and frames must not interleave.
    /// Taken before `shared` when both are.
    private let wire: Locked<Wire>
    private let wakeRead: Int32
    private let wakeWrite: Int32
    /// Held by whoever reads the connection and carries out the protocol: the engine's thread for a turn of its
    /// loop (not while it waits), or a reader that waits for a message (``readOnReadersTurn()``). Taken before
    /// `wire` and `shared`. It counts the turns readers took (a value of no size trips ThreadSanitizer's
    /// access checks).
    private let driver = Locked.make(0)
    // The state below is the driver's: touched only under `driver`.
    private let stream: any WebSocketByteStream
    private var decoder: WebSocketFrameDecoder
    private var receiver: WebSocketReceiver
    private let deflater: MessageDeflater?

    private struct Outgoing {
        /// The frame's bytes, or the message for the engine's thread to compress and frame (compression must go
        /// in the order the messages are sent, as each may refer to the ones before).
        let payload: Payload
        /// The bytes counted against the send buffer.
        let size: Int
        let done: CheckedContinuation<Void, any Error>?

        enum Payload {
            case frame([UInt8])
            case message(WebSocketMessage)
        }
    }

    /// The frame being written; the connection has taken `offset` of its bytes.
    private struct Wire {
        var pending: [UInt8] = []
        var offset = 0
        /// The sender waiting for `pending` to be written, if one waits.
        var done: CheckedContinuation<Void, any Error>?

        var isWriting: Bool { offset < pending.count }
    }

    private enum End {
        case closed
        case failed(WebSocketError)
    }

    private struct Shared: WaitsForWebSocketMessages {
        var inbound: [WebSocketMessage] = []
        var inboundHead = 0
        var inboundBytes = 0
        /// Readers waiting for a message, first come first served; there are some only while none is queued.
        var readers = WebSocketReaders()
        var outgoing: [Outgoing] = []
        /// The bytes of `outgoing`, which the engine has not taken yet.
        var outgoingBytes = 0
        var closeRequest: (code: WebSocketCloseCode, reason: String)?
        var closure: (code: WebSocketCloseCode?, reason: String)?
        var end: End?
        var closeWaiters: [CheckedContinuation<Void, Never>] = []
        /// The engine stopped reading for want of room: the reader who makes room wakes it.
        var starved = false
        /// The engine queued a close frame or failed: a frame written after it would break the protocol.
        var sendsEnded = false
        /// Readers' brief waits to skip, and how many the last miss set (``takeWithinBriefWait()``).
        var briefWaitSkips = 0
        var briefWaitMisses = 0

        var queuedCount: Int { inbound.count - inboundHead }
        var acceptsSends: Bool { end == nil && !sendsEnded && closeRequest == nil && closure == nil }
    }

    /// An engine over `stream`, whose first bytes after the handshake's head are `leftover`, compressing as
    /// `deflate` says when the server agreed to; it starts at once.
    init(
        stream: any WebSocketByteStream, leftover: [UInt8], subprotocol: String?,
        deflate: WebSocketDeflate? = nil,
        options: WebSocketOptions
    ) {
        self.stream = stream
        self.subprotocol = subprotocol
        self.options = options
        compression = deflate?.agreed
        deflater = deflate?.deflater
        decoder = WebSocketFrameDecoder(maximumPayloadSize: options.maximumMessageSize)
        decoder.acceptsCompressedFrames = deflate != nil
        decoder.append(leftover)
        receiver = WebSocketReceiver(
            maximumMessageSize: options.maximumMessageSize, inflater: deflate?.inflater)
        shared = .make(Shared())
        wire = .make(Wire())
        var fds: [Int32] = [-1, -1]
        _ = pipe(&fds)
        for fd in fds { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
        (wakeRead, wakeWrite) = (fds[0], fds[1])
        let thread = Thread { [self] in run() }
        thread.name = "SwiftyService.WebSocket"
        thread.start()
    }

    // The wake-up pipe lives as long as the engine: a reader may still wake it after the socket ended, and a
    // descriptor closed then could be another connection's by the time it writes.
    deinit {
        systemClose(wakeRead)
        systemClose(wakeWrite)
    }

    var closure: (code: WebSocketCloseCode?, reason: String)? { shared.withLock { $0.closure } }

    /// The bytes of whole messages waiting for a reader.
    var bufferedByteCount: Int { shared.withLock { $0.inboundBytes } }

    func send(_ message: WebSocketMessage) async throws {
        // With nothing queued or being written, the sender writes its frame itself: no hop to the engine's thread
        // and back, which is most of a small message's round trip.
        switch try writeDirectly(message) {
        case .written: return
        case .begun:
            wake()
            return
        case .queue: break
        }
        let bytes: Outgoing.Payload
        let size: Int
        if deflater != nil, message.byteCount >= WebSocketDeflate.smallestCompressed {
            (bytes, size) = (.message(message), message.byteCount)
        } else {
            let frame = Self.frame(message)
            (bytes, size) = (.frame(frame), frame.count)
        }
        // Within the send buffer a message is queued and the sender goes on at once, with no hop to the engine's
        // thread and back; past it, the sender waits until its message is written.
        let queued = shared.withLock { state -> Bool? in
            guard state.acceptsSends else { return nil }
            guard state.outgoingBytes < Self.sendBuffer else { return false }
            state.outgoing.append(Outgoing(payload: bytes, size: size, done: nil))
            state.outgoingBytes += size
            return true
        }
        switch queued {
        case nil: throw WebSocketError.closed
        case true?: wake()
        case false?:
            try await withCheckedThrowingContinuation { (done: CheckedContinuation<Void, any Error>) in
                let refused = shared.withLock { state -> Bool in
                    guard state.acceptsSends else { return true }
                    state.outgoing.append(Outgoing(payload: bytes, size: size, done: done))
                    state.outgoingBytes += size
                    return false
                }
                if refused { done.resume(throwing: WebSocketError.closed) } else { wake() }
            }
        }
    }

    private enum DirectWrite {
        /// The whole frame went to the connection.
        case written
        /// Part of it did; the engine writes the rest once the connection takes more.
        case begun
        /// Messages wait before it, a frame is half written, or the message is large: it goes through the queue.
        case queue
    }

    /// Writes `message`'s frame on the caller's thread when nothing waits before it.
    private func writeDirectly(_ message: WebSocketMessage) throws -> DirectWrite {
        guard message.byteCount < Self.sendBuffer / 4 else { return .queue }
        return try wire.withLock { wire in
            let clear = shared.withLock { state -> Bool? in
                guard state.acceptsSends else { return nil }
                return state.outgoing.isEmpty
            }
            guard let clear else { throw WebSocketError.closed }
            guard clear, !wire.isWriting else { return .queue }
            let compressing = message.byteCount >= WebSocketDeflate.smallestCompressed
            wire.pending = Self.frame(message, deflater: compressing ? deflater : nil)
            // A connection that failed is the engine's to find and report; the frame waits for it like a queued one.
            let written = (try? wire.pending.withUnsafeBytes { try stream.write($0) }) ?? 0
            wire.offset = written
            if written == wire.pending.count {
                wire.pending = []
                wire.offset = 0
                return .written
            }
            return .begun
        }
    }

    /// The masked frame of `message`, compressed (RSV1) when `deflater` is given and makes it smaller.
    private static func frame(_ message: WebSocketMessage, deflater: MessageDeflater? = nil) -> [UInt8] {
        let (opcode, payload): (WebSocketFrame.Opcode, Data) =
            switch message {
            case let .text(text): (.text, Data(text.utf8))
            case let .binary(data): (.binary, data)
            }
        var frame = WebSocketFrame(opcode: opcode, payload: payload)
        if let compressed = deflater.flatMap({ deflater in payload.withUnsafeBytes { deflater.compress($0) } }
        ) {
            frame.payload = Data(compressed)
            frame.isCompressed = true
        }
        return frame.encoded(maskingKey: WebSocketFrame.randomMaskingKey())
    }

    /// How many bytes of messages may wait for the connection before a sender waits for its own to be written.
    private static let sendBuffer = 256 * 1024

    func receive() async throws -> WebSocketMessage? {
        if let message = takeWithinBriefWait() {
            wakeIfStarved()
            return message
        }
        let next = try await shared.awaitMessage { state in
            if state.queuedCount > 0 { return .success(take(&state)) }
            switch state.end {
            case .closed?: return .success(nil)
            case let .failed(error)?: return .failure(error)
            case nil: return nil
            }
        }
        if next != nil { wakeIfStarved() }
        return next
    }

    /// A message taken makes room: the engine, if it stopped reading for want of it, may read again.
    private func wakeIfStarved() {
        let starved = shared.withLock { state in
            defer { state.starved = false }
            return state.starved
        }
        if starved { wake() }
    }

    /// How long a reader looks for a message before it parks, on a machine of more than one core: an answer over
    /// loopback or a LAN often comes within it, and a reader that takes it itself spares the engine's thread a
    /// hand-over to another thread (half of a small message's round trip here).
    private static let briefWait: UInt64 = ProcessInfo.processInfo.activeProcessorCount > 1 ? 50_000 : 0

    /// The next message if one comes within ``briefWait``. A wait that
    /// ends empty-handed makes the next ones skip it (1, then doubling to 256 with each miss in a row); one that gets a message
    /// ends the skipping: a server that answers slowly costs a reader's thread one brief wait per 256 messages.
    private func takeWithinBriefWait() -> WebSocketMessage? {
        guard Self.briefWait > 0 else { return nil }
        let waiting = shared.withLock { state -> Bool in
            if state.queuedCount > 0 { return true }
            guard state.end == nil, state.readers.isEmpty else { return false }
            guard state.briefWaitSkips == 0 else {
                state.briefWaitSkips -= 1
                return false
            }
            return true
        }
        guard waiting else { return nil }
        let deadline = Self.now() + Self.briefWait
        while true {
            let message = shared.withLock { state -> WebSocketMessage? in
                guard state.queuedCount > 0 else { return nil }
                state.briefWaitMisses = 0
                return take(&state)
            }
            if let message { return message }
            // The reader reads the connection itself when the engine's thread is waiting on it; what it finds is in
            // the queue for the next look. Work that is the engine's (a pong to send, an end) wakes it.
            let engineHasWork = driver.withLockIfAvailable { readersTurns in
                readersTurns += 1
                return readOnReadersTurn()
            }
            if engineHasWork == true { wake() }
            if shared.withLock({ $0.queuedCount > 0 }) { continue }
            // Looked at every microsecond, not as fast as it can: each look is a system call and a lock.
            let next = Self.now() + 1_000
            if next > deadline { break }
            while Self.now() < next {}
        }
        shared.withLock { state in
            state.briefWaitMisses = min(max(state.briefWaitMisses * 2, 1), 256)
            state.briefWaitSkips = state.briefWaitMisses
        }
        return nil
    }

    private func take(_ state: inout Shared) -> WebSocketMessage {
        let message = state.inbound[state.inboundHead]
        state.inboundHead += 1
        state.inboundBytes -= message.byteCount
        if state.inboundHead == state.inbound.count {
            state.inbound.removeAll(keepingCapacity: true)
            state.inboundHead = 0
        }
        return message
    }

    func close(code: WebSocketCloseCode, reason: String) async {
        await withCheckedContinuation { (ended: CheckedContinuation<Void, Never>) in
            let done = shared.withLock { state -> Bool in
                if state.end != nil { return true }
                if state.closeRequest == nil { state.closeRequest = (code, reason) }
                state.closeWaiters.append(ended)
                return false
            }
            if done { ended.resume() } else { wake() }
        }
    }

    /// Also called by ``WebSocket``'s deinit: a socket nobody holds closes with 1001 (going away).
    func abandon() {
        let ended = shared.withLock { state -> Bool in
            if state.end == nil, state.closeRequest == nil { state.closeRequest = (.goingAway, "") }
            return state.end != nil
        }
        if !ended { wake() }
    }

    private func wake() {
        var byte: UInt8 = 1
        _ = systemWrite(wakeWrite, &byte, 1)
    }

    // MARK: The thread

    private var control: [[UInt8]] = []
    private var closeQueued = false
    private var closeSent = false
    private var closeReceived = false
    private var readEnded = false
    private var failure: WebSocketError?
    private var closeDeadline: UInt64?
    /// Where what comes after the server's close frame is read, to be dropped.
    private var discarded = [UInt8](repeating: 0, count: 4096)
    /// Whether a read may find bytes: `false` once one found none, until `poll` says the socket is readable.
    private var mayHaveBytes = true
    private var nextPing: UInt64?
    private var pongDeadline: UInt64?

    /// How much one read asks the connection for.
    private static let readSize = 256 * 1024
    /// A read under this size that gave less than was asked is taken to have emptied a plain socket.
    private static let smallRead = 16 * 1024
    /// How many reads one turn of the thread's loop makes at most.
    private static let readsPerTurn = 16

    private static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }
    private static func nanoseconds(_ interval: TimeInterval) -> UInt64 { UInt64(max(0, interval) * 1e9) }

    private func run() {
        driver.withLock { _ in
            if let interval = options.pingInterval { nextPing = Self.now() + Self.nanoseconds(interval) }
        }
        var readable = false
        while true {
            // One turn under `driver`, the wait outside it: a reader may take a turn meanwhile.
            let wait = driver.withLock { _ -> (events: Int16, timeout: Int32)? in
                if readable { mayHaveBytes = true }
                return turn()
            }
            guard let wait else { return }
            readable = waitForEvents(wait.events, timeout: wait.timeout)
        }
    }

    /// Reads, writes and keeps time once; what to wait for next, or `nil` once the socket has ended.
    private func turn() -> (events: Int16, timeout: Int32)? {
        let (room, closeRequest) = shared.withLock { state in
            (Self.hasRoom(&state, options), state.closeRequest)
        }
        if let closeRequest, !closeQueued, failure == nil {
            queueClose(code: closeRequest.code, reason: closeRequest.reason)
        }
        // After our close frame the messages that still come are dropped, so the reader's room does not matter.
        let reading = (room || closeSent || closeReceived) && !readEnded && failure == nil
        if reading { readAvailable() }
        if failure == nil || closeSent == false { writeAvailable() }
        if let ended = finished() {
            finish(ended)
            return nil
        }
        checkTimers()
        if let ended = finished() {
            finish(ended)
            return nil
        }
        let polling = reading && !readEnded && failure == nil
        let events = Int16(
            (polling || (closeSent && !readEnded) ? POLLIN : 0) | (hasPendingWrites ? POLLOUT : 0))
        let now = Self.now()
        let deadlines = [closeDeadline, pongDeadline, nextPing, lingerDeadline].compactMap { $0 }
        let timeout = deadlines.min().map { Int32(clamping: ($0 > now ? $0 - now : 0) / 1_000_000 + 1) } ?? -1
        return (events, timeout)
    }

    /// A reader's turn at the connection while it waits for a message (``takeWithinBriefWait()``), under `driver`:
    /// it reads and decodes what has come itself, so that the message is not handed from the engine's thread to
    /// the reader's. Whether the engine has work of its own now (a pong or a close frame to write, an end).
    private func readOnReadersTurn() -> Bool {
        guard !readEnded, failure == nil, !closeReceived, !closeSent else { return false }
        // The reader does not poll: a read is how it finds out.
        mayHaveBytes = true
        readAvailable()
        return failure != nil || closeReceived || readEnded || !control.isEmpty
    }

    /// Reads what the connection has, frame by frame, until it has no more, the reader's room runs out, the peer
    /// breaks the protocol (then nothing more is read), or enough was read for the timers and writes to have a turn.
    private func readAvailable() {
        // A server that sends faster than the socket reads (compressed frames inflate slowly) would otherwise keep
        // the thread here, and a close timeout would never be seen.
        for turn in 0...Self.readsPerTurn {
            if !closeReceived {
                do {
                    try processFrames()
                } catch let error as WebSocketError {
                    fail(error, sendingClose: true)
                    return
                } catch {
                    fail(.connectionLost("\(error)"), sendingClose: false)
                    return
                }
            }
            // The frames of the last read were processed: the connection is polled before it is read again.
            if failure != nil || turn == Self.readsPerTurn || !mayHaveBytes { return }
            // After the peer's close frame only its end of the connection is awaited; what comes is dropped.
            if !closeReceived, !closeSent, !shared.withLock({ Self.hasRoom(&$0, options) }) { return }
            let count: Int?
            let asked = closeReceived ? discarded.count : Self.readSize
            do {
                if closeReceived {
                    count = try discarded.withUnsafeMutableBytes { bytes in
                        try wire.withLock { _ in try stream.read(into: bytes) }
                    }
                } else {
                    // Straight into the decoder's buffer: a large message is copied once, into its `Data`.
                    count = try decoder.read(upTo: asked) { bytes in
                        try wire.withLock { _ in try stream.read(into: bytes) }
                    }
                }
            } catch {
                readEnded = true
                if !closeSent { fail(.connectionLost("\(error)"), sendingClose: false) }
                return
            }
            guard let count else {
                mayHaveBytes = false
                return
            }
            // A plain socket that gave a few bytes, less than was asked, has nothing more now: poll says when it
            // has, which saves a read that would only say so (most of a small message's turn). After a large read
            // more has usually come meanwhile, and reading on is cheaper than a wait.
            if count > 0, count < min(asked, Self.smallRead), stream.drainsInOneRead { mayHaveBytes = false }
            if count == 0 {
                readEnded = true
                // After our close frame the server may end the connection without answering: still a close.
                if !closeReceived, !closeSent {
                    fail(
                        .connectionLost("the server ended the connection without a close frame"),
                        sendingClose: false)
                }
                return
            }
        }
    }

    private func processFrames() throws {
        while !closeReceived {
            // Whole frames wait in the decoder while the reader has no room: one read of compressed frames can
            // inflate to thousands of messages.
            if !closeSent, !shared.withLock({ Self.hasRoom(&$0, options) }) { return }
            decoder.maximumPayloadSize = receiver.remainingRoom
            decoder.continuesCompressedMessage = receiver.isReceivingCompressedMessage
            guard let frame = try decoder.nextFrame() else { return }
            // After our close frame the server's messages are dropped, not inflated: only its close frame matters.
            if closeSent, !frame.opcode.isControl { continue }
            guard let event = try receiver.receive(frame) else { continue }
            switch event {
            case let .message(message):
                if closeSent { continue }
                let reader = shared.withLock { state -> WebSocketReaders.Reader? in
                    if let reader = state.readers.popFirst() { return reader }
                    state.inbound.append(message)
                    state.inboundBytes += message.byteCount
                    return nil
                }
                reader?.resume(returning: message)
            case let .ping(payload):
                // Only the latest ping needs its pong (RFC 6455, 5.5.3): a server that pings and never reads
                // cannot grow the queue.
                control.removeAll { $0.first == 0x8A }
                if !closeSent {
                    control.append(
                        WebSocketFrame(opcode: .pong, payload: payload).encoded(
                            maskingKey: WebSocketFrame.randomMaskingKey()))
                }
            case .pong:
                pongDeadline = nil
            case let .close(code, reason):
                closeReceived = true
                shared.withLock { $0.closure = (code, reason) }
                if !closeQueued { queueClose(code: code ?? .normalClosure, reason: "") }
                closeDeadline = closeDeadline ?? Self.now() + Self.nanoseconds(options.closeTimeout)
            }
        }
    }

    /// Whether the reader has room for more messages; when it has none, the reader who makes some wakes the engine.
    private static func hasRoom(_ state: inout Shared, _ options: WebSocketOptions) -> Bool {
        let room = state.inboundBytes < options.bufferedBytes
        if !room { state.starved = true }
        return room
    }

    private func queueClose(code: WebSocketCloseCode, reason: String) {
        shared.withLock { $0.sendsEnded = true }
        closeQueued = true
        let payload: [UInt8] =
            code == .noStatusReceived ? [] : WebSocketReceiver.closePayload(code: code, reason: reason)
        control.append(
            WebSocketFrame(opcode: .close, payload: payload).encoded(
                maskingKey: WebSocketFrame.randomMaskingKey()))
        closeDeadline = closeDeadline ?? Self.now() + Self.nanoseconds(options.closeTimeout)
    }

    /// Ends the socket for `error`: a close frame with its code first when the peer broke the protocol.
    private func fail(_ error: WebSocketError, sendingClose: Bool) {
        guard failure == nil else { return }
        failure = error
        shared.withLock { $0.sendsEnded = true }
        if sendingClose, !closeQueued, let code = error.closeCode {
            closeQueued = true
            control = [
                WebSocketFrame(
                    opcode: .close, payload: WebSocketReceiver.closePayload(code: code, reason: "")
                )
                .encoded(maskingKey: WebSocketFrame.randomMaskingKey())
            ]
            closeDeadline = Self.now() + Self.nanoseconds(min(options.closeTimeout, 1))
        } else {
            readEnded = true
            control = []
        }
    }

    private func writeAvailable() {
        var written: [CheckedContinuation<Void, any Error>] = []
        var lost: (error: any Error, waiting: CheckedContinuation<Void, any Error>?)?
        wire.withLock { wire in
            while true {
                if !wire.isWriting {
                    if let done = wire.done { written.append(done) }
                    wire.done = nil
                    guard let next = nextFrame() else {
                        wire.pending = []
                        wire.offset = 0
                        return
                    }
                    (wire.pending, wire.done, wire.offset) = (next.bytes, next.done, 0)
                }
                let count: Int
                do {
                    count = try wire.pending.withUnsafeBytes { bytes in
                        try stream.write(UnsafeRawBufferPointer(rebasing: bytes[wire.offset...]))
                    }
                } catch {
                    lost = (error, wire.done)
                    (wire.pending, wire.done, wire.offset) = ([], nil, 0)
                    return
                }
                if count == 0 { return }
                wire.offset += count
            }
        }
        for done in written { done.resume() }
        guard let (error, waiting) = lost else { return }
        waiting?.resume(throwing: WebSocketError.connectionLost("\(error)"))
        if failure == nil, !closeSent { fail(.connectionLost("\(error)"), sendingClose: false) }
        readEnded = readEnded || failure != nil
    }

    /// The next frame to write: control frames first, then the senders' messages (taken under `wire`, so that a
    /// sender writing directly cannot overtake one taken here).
    private func nextFrame() -> (bytes: [UInt8], done: CheckedContinuation<Void, any Error>?)? {
        if !control.isEmpty {
            let frame = control.removeFirst()
            if frame.first == 0x88 { closeSent = true }
            return (frame, nil)
        }
        guard failure == nil, !closeSent,
            let next = shared.withLock({ state -> Outgoing? in
                guard !state.outgoing.isEmpty else { return nil }
                let next = state.outgoing.removeFirst()
                state.outgoingBytes -= next.size
                return next
            })
        else { return nil }
        switch next.payload {
        case let .frame(bytes): return (bytes, next.done)
        case let .message(message): return (Self.frame(message, deflater: deflater), next.done)
        }
    }

    private var hasPendingWrites: Bool { !control.isEmpty || wire.withLock { $0.isWriting } }

    private func checkTimers() {
        let now = Self.now()
        if let closeDeadline, now >= closeDeadline {
            // The server did not finish the close handshake in time: the connection goes anyway.
            readEnded = true
            self.closeDeadline = nil
            forcedEnd = true
            return
        }
        if let pongDeadline, now >= pongDeadline {
            failure = .pingTimedOut
            readEnded = true
            forcedEnd = true
            return
        }
        if let ping = nextPing, now >= ping, let interval = options.pingInterval, failure == nil, !closeSent {
            control.append(
                WebSocketFrame(opcode: .ping).encoded(maskingKey: WebSocketFrame.randomMaskingKey()))
            if pongDeadline == nil { pongDeadline = now + Self.nanoseconds(options.pingTimeout) }
            nextPing = now + Self.nanoseconds(interval)
            writeAvailable()
        }
    }

    private var forcedEnd = false
    private var lingerDeadline: UInt64?
    /// How long a close frame sent for a failure is given to reach the server before the connection ends.
    private static let linger: TimeInterval = 0.25

    /// How the socket ended, once it has.
    private func finished() -> End? {
        if forcedEnd { return failure.map(End.failed) ?? .closed }
        if let failure {
            // A close frame for a protocol error goes out first, unless the connection cannot take it.
            if hasPendingWrites && !readEnded { return nil }
            guard closeSent, !readEnded else { return .failed(failure) }
            // Then a moment for the server to read it: ending the connection with unread bytes on our side
            // resets it, and a reset can drop the close frame before the server reads it. Nothing more of the
            // server's is read meanwhile.
            let now = Self.now()
            guard let lingerDeadline else {
                self.lingerDeadline = now + Self.nanoseconds(Self.linger)
                return nil
            }
            return now >= lingerDeadline ? .failed(failure) : nil
        }
        if closeSent && readEnded { return .closed }
        if closeReceived && closeSent && !hasPendingWrites { return readEnded ? .closed : nil }
        return nil
    }

    /// Waits for `events` on the connection, the wake-up pipe, or `timeout` milliseconds (-1: no timeout); whether
    /// the connection became readable (or ended).
    private func waitForEvents(_ events: Int16, timeout: Int32) -> Bool {
        var descriptors = [
            pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
            pollfd(fd: stream.descriptor, events: events, revents: 0),
        ]
        _ = poll(&descriptors, 2, timeout)
        if descriptors[0].revents != 0 {
            var drain = [UInt8](repeating: 0, count: 64)
            while systemRead(wakeRead, &drain, drain.count) > 0 {}
        }
        return descriptors[1].revents & Int16(POLLIN | POLLHUP | POLLERR) != 0
    }

    private func finish(_ end: End) {
        let writing = wire.withLock { wire in
            stream.shutdown()
            defer { wire.done = nil }
            return wire.done
        }
        writing?.resume(throwing: WebSocketError.closed)
        let (readers, senders, waiters) = shared.withLock { state in
            state.end = end
            let readers = state.readers.removeAll()
            let senders = state.outgoing
            state.outgoing = []
            let waiters = state.closeWaiters
            state.closeWaiters = []
            return (readers, senders, waiters)
        }
        for sender in senders { sender.done?.resume(throwing: WebSocketError.closed) }
        for reader in readers {
            switch end {
            case .closed: reader.resume(returning: nil)
            case let .failed(error): reader.resume(throwing: error)
            }
        }
        for waiter in waiters { waiter.resume() }
    }
}
