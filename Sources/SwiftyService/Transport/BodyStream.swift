import Foundation

/// A request body read from an `AsyncSequence` of `Data` chunks, once: a task iterates the sequence into a
/// bounded buffer that the backend drains as the socket takes bytes, and waits while the buffer is full.
///
/// One-shot: the first trip to the backend claims it; any later trip (a retry, a 307/308 redirect) is refused
/// with ``BodyStreamError``, since the bytes already sent cannot be read again.
final class BodyStream: Sendable {
    /// The length the caller declared, sent as `Content-Length`; `nil`: unknown, sent chunked.
    let length: Int64?
    /// Bytes the buffer holds before the producing task waits; a chunk larger than what is left is taken
    /// whole, so at most this plus one chunk is held.
    static let capacity = 1 << 20

    private let produce: @Sendable (BodyStream) async -> Void
    private let state = Locked<State>.make(State())

    private struct State {
        var claimed = false
        var started = false
        var chunks: [Data] = []
        /// Bytes of `chunks[0]` taken already.
        var offset = 0
        var buffered = 0
        var produced: Int64 = 0
        var taken: Int64 = 0
        var ended = false
        var failure: (any Error)?
        var stopped = false
        var producer: Task<Void, Never>?
        var producerWaiting: CheckedContinuation<Void, Never>?
        /// Called once when bytes, the end or a failure arrive for a reader that found the buffer empty.
        var readerWaiting: (@Sendable () -> Void)?
    }

    init<Chunks: AsyncSequence & Sendable>(_ chunks: Chunks, length: Int64?) where Chunks.Element == Data {
        self.length = length
        produce = { stream in
            do {
                var iterator = chunks.makeAsyncIterator()
                while let chunk = try await iterator.next() {
                    guard await stream.put(chunk) else { return }
                }
                stream.end(nil)
            } catch {
                stream.end(error)
            }
        }
    }

    /// The bytes taken from the buffer so far: what the backend sent, or collected.
    var bytesSent: Int64 { state.withLock { $0.taken } }

    /// Claims the body for a trip to the backend; `false` when a trip had it already.
    func claim() -> Bool {
        state.withLock { state in
            defer { state.claimed = true }
            return !state.claimed
        }
    }

    /// What a read from the buffer found.
    enum Read {
        /// `count` bytes were copied.
        case bytes(Int)
        /// Nothing yet: `whenReadable` will be called once there is.
        case wait
        /// The body is over.
        case end
        /// The sequence threw, or gave another length than the one declared.
        case failed(any Error)
    }

    /// Copies the next bytes into `buffer` without waiting; starts the producing task on the first read.
    /// On `.wait`, `whenReadable` is called (once, from any thread) when a read would find more.
    func read(into buffer: UnsafeMutableRawBufferPointer, whenReadable: @escaping @Sendable () -> Void)
        -> Read
    {
        startProducing()
        let (read, producer) = state.withLock { state -> (Read, CheckedContinuation<Void, Never>?) in
            if let failure = state.failure { return (.failed(failure), nil) }
            if state.chunks.isEmpty {
                guard state.ended else {
                    state.readerWaiting = whenReadable
                    return (.wait, nil)
                }
                if let length, state.taken != length {
                    return (
                        .failed(BodyStreamError.lengthMismatch(declared: length, produced: state.taken)), nil
                    )
                }
                return (.end, nil)
            }
            var count = 0
            while count < buffer.count, !state.chunks.isEmpty {
                let chunk = state.chunks[0]
                let part = min(buffer.count - count, chunk.count - state.offset)
                let start = chunk.startIndex + state.offset
                chunk.copyBytes(
                    to: buffer.baseAddress!.advanced(by: count).assumingMemoryBound(to: UInt8.self),
                    from: start..<start + part)
                count += part
                state.offset += part
                if state.offset == chunk.count {
                    state.chunks.removeFirst()
                    state.offset = 0
                }
            }
            state.buffered -= count
            state.taken += Int64(count)
            // The producer goes on once half the buffer is free: fewer hand-overs than at every read.
            guard state.buffered <= Self.capacity / 2, let waiting = state.producerWaiting else {
                return (.bytes(count), nil)
            }
            state.producerWaiting = nil
            return (.bytes(count), waiting)
        }
        producer?.resume()
        return read
    }

    /// The whole body in memory, for a backend that does not stream it (read once, like a stream).
    func collect() async throws -> Data {
        var data = Data()
        // What the length declares, up to 64 MiB: a length is a claim, not memory to set aside at once.
        if let length { data.reserveCapacity(Int(clamping: Swift.min(length, 64 << 20))) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 * 1024, alignment: 1)
        defer { buffer.deallocate() }
        while true {
            let readable = Signal()
            switch read(into: buffer, whenReadable: readable.fire) {
            case let .bytes(count):
                data.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            case .wait: await readable.wait()
            case .end: return data
            case let .failed(error): throw error
            }
        }
    }

    /// Stops the producing task and lets go of what the buffer holds: the trip is over.
    func stop() {
        let (producer, waiting) = state.withLock { state in
            state.stopped = true
            state.chunks = []
            state.buffered = 0
            if state.failure == nil { state.failure = CancellationError() }
            defer {
                state.producerWaiting = nil
                state.readerWaiting = nil
            }
            return (state.producer, (state.producerWaiting, state.readerWaiting))
        }
        producer?.cancel()
        waiting.0?.resume()
        waiting.1?()
    }

    private func startProducing() {
        let start = state.withLock { state in
            defer { state.started = true }
            return !state.started && !state.stopped
        }
        guard start else { return }
        let task = Task { await produce(self) }
        let stopped = state.withLock { state in
            state.producer = task
            return state.stopped
        }
        if stopped { task.cancel() }
    }

    /// Adds a chunk; waits while the buffer is full. `false` once the trip is over.
    private func put(_ chunk: Data) async -> Bool {
        let reader = state.withLock { state -> (@Sendable () -> Void)? in
            guard !state.stopped, !chunk.isEmpty else { return nil }
            state.produced += Int64(chunk.count)
            if let length, state.produced > length {
                state.failure = BodyStreamError.lengthMismatch(declared: length, produced: state.produced)
            } else {
                state.chunks.append(chunk)
                state.buffered += chunk.count
            }
            defer { state.readerWaiting = nil }
            return state.readerWaiting
        }
        reader?()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let wait = state.withLock { state in
                guard !state.stopped, state.failure == nil, state.buffered >= Self.capacity else {
                    return false
                }
                state.producerWaiting = continuation
                return true
            }
            if !wait { continuation.resume() }
        }
        return state.withLock { !$0.stopped && $0.failure == nil }
    }

    /// The sequence ended, or threw `error`.
    private func end(_ error: (any Error)?) {
        let reader = state.withLock { state -> (@Sendable () -> Void)? in
            state.ended = true
            if let error, state.failure == nil { state.failure = error }
            defer { state.readerWaiting = nil }
            return state.readerWaiting
        }
        reader?()
    }
}

/// A one-time wake-up: `fire` before or after `wait`, and `wait` returns once.
private final class Signal: Sendable {
    private let state = Locked<(fired: Bool, waiter: CheckedContinuation<Void, Never>?)>.make((false, nil))

    @Sendable func fire() {
        let waiter = state.withLock { state in
            state.fired = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    func wait() async {
        await withCheckedContinuation { continuation in
            let fired = state.withLock { state in
                if !state.fired { state.waiter = continuation }
                return state.fired
            }
            if fired { continuation.resume() }
        }
    }
}

/// Why a body read from a stream (``RequestBody/stream(_:length:contentType:)``) was not sent whole. It
/// reaches the caller as ``ServiceError/transport(_:underlying:attempts:)``, whose description names the
/// method and URL.
public enum BodyStreamError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A retry (the ``RetryPolicy`` middleware, or any middleware calling `next` again) would send the body a
    /// second time; a stream is read once, so that attempt is refused before anything is sent. `attempt` is
    /// the refused one.
    case cannotResendForRetry(attempt: Int)
    /// A `307` or `308` redirect to `location` asks for the body again; the redirect is not followed.
    case cannotResendForRedirect(status: Int, location: String)
    /// The connection the request went out on closed while it was sent (a kept connection the server had
    /// dropped, say), and the backend would send it again on a new one; a stream is read once, so it is not.
    case cannotResendOnNewConnection
    /// The sequence gave another number of bytes than the `length` declared for it (at least `produced`);
    /// the request is stopped rather than sent with a wrong `Content-Length`.
    case lengthMismatch(declared: Int64, produced: Int64)

    /// The cause in words.
    public var description: String {
        switch self {
        case let .cannotResendForRetry(attempt):
            "attempt \(attempt) was refused: the body is a stream, which an earlier attempt (or request) read, "
                + "and cannot be sent again; send Data or a file to make the request retryable"
        case let .cannotResendForRedirect(status, location):
            "the \(status) redirect to '\(location.abbreviatedURL)' was not followed: it asks for the body "
                + "again, and the body is a stream, read once"
        case .cannotResendOnNewConnection:
            "the connection closed while the request was sent, and the body is a stream, read once: it "
                + "cannot be sent again on a new connection"
        case let .lengthMismatch(declared, produced):
            "the body stream gave \(produced) bytes where \(declared) were declared"
        }
    }
}
