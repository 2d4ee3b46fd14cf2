import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A backend that hands a response over as it arrives: the head first, then the body in chunks, pausing
/// when the consumer falls behind.
///
/// Backends that are not streaming ones still serve ``SwiftyServiceProtocol/stream()``: SwiftyService
/// sends the request as usual and hands the whole body over as one chunk (held to the realm's
/// ``RealmConfiguration/setMaxResponseSize(_:)-(Int?)``), so nothing streams but nothing fails either.
public protocol StreamingBackend: NetworkBackend {
    /// Sends `request` and writes its answer into `sink`: ``StreamSink/head(_:)`` once, then
    /// ``StreamSink/offer(_:)`` for each chunk, then ``StreamSink/finish()`` or ``StreamSink/fail(_:)``.
    /// - Returns: a task whose `cancel()` stops the transfer at once and frees its connection.
    func stream(_ request: BackendRequest, into sink: StreamSink) -> BackendTask
}

/// Where a streaming backend writes one response, and the bounded buffer its consumer reads from.
///
/// The buffer holds at most ``capacity`` bytes (plus the one chunk that crossed it): ``offer(_:)`` refuses
/// a chunk when it is full, and the backend keeps that chunk, stops reading from the network and waits
/// for the handler given to ``whenDrained(_:)``, called once the consumer has read half of it.
public final class StreamSink: Sendable {
    /// The most body bytes a stream holds that its consumer has not read yet: 256 KiB.
    public static let capacity = 256 * 1024

    let request: URLRequest
    private let state = Locked.make(State())
    /// Told the head or the failure that came before it, once.
    private let headListener: Locked<(@Sendable (Result<Response, any Error>) -> Void)?>

    private struct State {
        var chunks: [Data] = []
        var first = 0
        var buffered = 0
        var headSent = false
        /// How the body ended; `nil` while it flows.
        var end: Result<Void, ServiceError>?
        var waiter: UnsafeContinuation<Data?, any Error>?
        /// The producer was refused a chunk and waits for the drained handler.
        var refused = false
        var drained: (@Sendable () -> Void)?
        var task: BackendTask?
        var deadline: Deadline?
        var iterated = false
        var byteCount: Int64 = 0
        var tap: (@Sendable (Tapped) -> Void)?
        var endHandlers: [@Sendable (Int64, ServiceError?) -> Void] = []
    }

    /// What a tap sees of a stream (for recording it).
    package enum Tapped: Sendable {
        /// The head.
        case head(Response)
        /// A chunk the reader will get.
        case chunk(Data)
        /// The end: `nil` when the body is complete.
        case end(ServiceError?)
    }

    /// Sees the head, every chunk taken and the end, on the backend's thread; set before the transfer starts.
    package func tap(_ tap: @escaping @Sendable (Tapped) -> Void) {
        state.withLock { $0.tap = tap }
    }

    init(request: URLRequest, onHead: @escaping @Sendable (Result<Response, any Error>) -> Void) {
        self.request = request
        headListener = .make(onHead)
    }

    /// A sink that holds a whole body already: for answers that never reached a streaming backend.
    convenience init(whole response: Response) {
        self.init(request: response.request, onHead: { _ in })
        state.withLock { state in
            state.headSent = true
            if !response.data.isEmpty {
                state.chunks = [response.data]
                state.buffered = response.data.count
                state.byteCount = Int64(response.data.count)
            }
            state.end = .success(())
        }
    }

    // MARK: The backend's side

    /// The response head (status and headers; its data is ignored): call once, before any chunk.
    public func head(_ response: Response) {
        let listener = state.withLock { state -> (@Sendable (Result<Response, any Error>) -> Void)? in
            guard !state.headSent, state.end == nil else { return nil }
            state.headSent = true
            return headListener.withLock { listener in
                defer { listener = nil }
                return listener
            }
        }
        var head = response
        head.data = Data()
        if listener != nil, let tap = state.withLock({ $0.tap }) { tap(.head(head)) }
        listener?(.success(head))
    }

    /// Offers the next chunk of the body. `true`: taken. `false`: the buffer is full; keep the chunk, stop
    /// reading, and offer it again after the ``whenDrained(_:)`` handler runs.
    public func offer(_ chunk: Data) -> Bool {
        guard !chunk.isEmpty else { return true }
        var tap: (@Sendable (Tapped) -> Void)?
        let taken = state.withLock { state -> Bool in
            guard state.end == nil else { return true }  // ended: swallow what is still coming
            if state.buffered >= Self.capacity, state.waiter == nil {
                state.refused = true
                return false
            }
            tap = state.tap
            state.byteCount += Int64(chunk.count)
            if let waiter = state.waiter {
                state.waiter = nil
                // Resumed under the lock, which `next()` takes again once it is back: see there.
                waiter.resume(returning: chunk)
                return true
            }
            state.chunks.append(chunk)
            state.buffered += chunk.count
            return true
        }
        tap?(.chunk(chunk))
        return taken
    }

    /// Sets what to call once a refused producer may offer again; it runs on the consumer's thread.
    public func whenDrained(_ handler: @escaping @Sendable () -> Void) {
        state.withLock { $0.drained = handler }
    }

    /// The body is complete.
    public func finish() {
        end(.success(()))
    }

    /// The transfer failed; before the head, the request fails, after it, the body does.
    public func fail(_ error: any Error) {
        let listener = headListener.withLock { listener in
            defer { listener = nil }
            return listener
        }
        if let listener {
            state.withLock { $0.headSent = true }
            listener(.failure(error))
        }
        end(.failure(ServiceError(error, request: request)))
    }

    /// Whether the consumer has stopped or the body ended: a backend may stop sending.
    public var isEnded: Bool { state.withLock { $0.end != nil } }

    // MARK: SwiftyService's side

    /// Keeps the transfer's stopper; stops it now if the stream ended meanwhile.
    func attach(_ task: BackendTask) {
        let stopNow = state.withLock { state -> Bool in
            switch state.end {
            case nil:
                state.task = task
                return false
            case .success?: return false
            case .failure?: return true  // stopped (or failed) before the backend returned
            }
        }
        if stopNow { task.cancel() }
    }

    /// Keeps the deadline that stops the stream, until the stream ends.
    func keep(_ deadline: Deadline) {
        let ended = state.withLock { state -> Bool in
            guard state.end == nil else { return true }
            state.deadline = deadline
            return false
        }
        if ended { deadline.cancel() }
    }

    /// Hands over a whole answer at once: its head, its body as one chunk, the end; or its failure.
    /// For a backend's answers that arrive whole (a redirect it did not follow, a transfer without a delegate).
    public func deliver(_ answer: Result<Response, any Error>) {
        switch answer {
        case let .success(response):
            head(response)
            if !response.data.isEmpty { forceAppend(response.data) }
            finish()
        case let .failure(error):
            fail(error)
        }
    }

    /// Calls `handler` once when the body has ended — whole (`nil`), failed or stopped — with the bytes handed
    /// over; at once when it has ended already.
    func whenEnded(_ handler: @escaping @Sendable (_ bytes: Int64, _ error: ServiceError?) -> Void) {
        let ended = state.withLock { state -> (Int64, ServiceError?)? in
            guard let end = state.end else {
                state.endHandlers.append(handler)
                return nil
            }
            if case let .failure(error) = end { return (state.byteCount, error) }
            return (state.byteCount, nil)
        }
        if let (bytes, error) = ended { handler(bytes, error) }
    }

    /// Appends `chunk` whatever the buffer holds: for a body that is in memory already.
    package func forceAppend(_ chunk: Data) {
        guard !chunk.isEmpty else { return }
        let tap = state.withLock { state -> (@Sendable (Tapped) -> Void)? in
            guard state.end == nil else { return nil }
            state.byteCount += Int64(chunk.count)
            // A reader may be waiting already (the head went first): it takes the chunk, or it would
            // hear of the end next and miss the body.
            if let waiter = state.waiter {
                state.waiter = nil
                waiter.resume(returning: chunk)
            } else {
                state.chunks.append(chunk)
                state.buffered += chunk.count
            }
            return state.tap
        }
        tap?(.chunk(chunk))
    }

    /// The bytes held for the reader now.
    var bufferedBytes: Int { state.withLock { $0.buffered } }

    /// The bytes of body handed over so far.
    var byteCount: Int64 { state.withLock { $0.byteCount } }

    /// Marks the body as being read by an iterator; `true` for the first, which owns the transfer from then on.
    func startIterating() -> Bool {
        state.withLock { state in
            defer { state.iterated = true }
            return !state.iterated
        }
    }

    var isIterated: Bool { state.withLock { $0.iterated } }

    /// Whether a reader is waiting for the next chunk (for tests).
    var hasWaitingReader: Bool { state.withLock { $0.waiter != nil } }

    /// Stops the stream: the consumer hears `error` (unless the body ended already) and the transfer stops.
    func stop(with error: ServiceError) {
        let (task, deadline, ended) = state.withLock { state -> (BackendTask?, Deadline?, Ended?) in
            guard state.end == nil else { return (nil, nil, nil) }
            state.end = .failure(error)
            state.chunks = []
            state.first = 0
            state.buffered = 0
            defer {
                state.task = nil
                state.deadline = nil
                state.drained = nil
                state.tap = nil
                state.endHandlers = []
            }
            return (state.task, state.deadline, Ended(handlers: state.endHandlers, bytes: state.byteCount))
        }
        deadline?.cancel()
        ended?.tell(error)
        // A stream stopped before its head fails its attempt with the same error.
        let listener = headListener.withLock { listener in
            defer { listener = nil }
            return listener
        }
        listener?(.failure(error))
        wakeReader()
        task?.cancel()
    }

    /// Stops the stream as cancelled.
    func cancel() {
        stop(with: .cancelled(request))
    }

    private func end(_ outcome: Result<Void, ServiceError>) {
        // The tap hears of the end before the reader can: what it records is there once the loop is over.
        let tap = state.withLock { state -> (@Sendable (Tapped) -> Void)? in
            defer { state.tap = nil }
            return state.end == nil ? state.tap : nil
        }
        if case let .failure(error) = outcome { tap?(.end(error)) } else { tap?(.end(nil)) }
        let (deadline, ended) = state.withLock { state -> (Deadline?, Ended?) in
            guard state.end == nil else { return (nil, nil) }
            state.end = outcome
            state.task = nil
            state.drained = nil
            defer {
                state.deadline = nil
                state.endHandlers = []
            }
            return (state.deadline, Ended(handlers: state.endHandlers, bytes: state.byteCount))
        }
        deadline?.cancel()
        if case let .failure(error) = outcome { ended?.tell(error) } else { ended?.tell(nil) }
        // A waiting consumer has read everything there was; it hears of the end after everyone else.
        wakeReader()
    }

    /// Tells a waiting consumer how the body ended. Resumed under the lock, which `next()` takes again once
    /// it is back: see there.
    private func wakeReader() {
        state.withLock { state in
            guard let waiter = state.waiter, let end = state.end else { return }
            state.waiter = nil
            switch end {
            case .success: waiter.resume(returning: nil)
            case let .failure(error): waiter.resume(throwing: error)
            }
        }
    }

    /// The end handlers to call, taken out of the state under its lock.
    private struct Ended {
        let handlers: [@Sendable (Int64, ServiceError?) -> Void]
        let bytes: Int64

        func tell(_ error: ServiceError?) {
            for handler in handlers { handler(bytes, error) }
        }
    }

    /// The next chunk; `nil` at the end of the body. Cancelling the task stops the stream.
    func next() async throws -> Data? {
        if let ready = try take() { return ready }
        // The producer resumes this wait while it holds the lock; taking the lock once more when back orders
        // its work before ours for ThreadSanitizer too, which does not see the runtime's own hand-over (a
        // chunk's resume was once reported as a race with this task's frame, as in `Exchange.untilFinished`).
        defer { state.withLock { _ in } }
        return try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { continuation in
                enum Step {
                    case chunk(Data, (@Sendable () -> Void)?)
                    case ended(Result<Void, ServiceError>)
                    case waiting
                }
                let step = state.withLock { state -> Step in
                    if state.first < state.chunks.count { return .chunk(pop(&state), drainedHandler(&state)) }
                    if let end = state.end { return .ended(end) }
                    // Two loops over one body at once: the second is told, the first keeps its place.
                    guard state.waiter == nil else {
                        return .ended(.failure(.transport(request, underlying: StreamAlreadyRead())))
                    }
                    state.waiter = continuation
                    return .waiting
                }
                switch step {
                case let .chunk(chunk, drained):
                    continuation.resume(returning: chunk)
                    drained?()
                case .ended(.success): continuation.resume(returning: nil)
                case let .ended(.failure(error)): continuation.resume(throwing: error)
                case .waiting: break
                }
            }
        } onCancel: {
            cancel()
        }
    }

    /// A chunk or the end without waiting; `nil` when the consumer must wait.
    private func take() throws -> Data?? {
        let (step, drained) = state.withLock {
            state -> (Result<Data?, ServiceError>?, (@Sendable () -> Void)?) in
            if state.first < state.chunks.count { return (.success(pop(&state)), drainedHandler(&state)) }
            switch state.end {
            case .success?: return (.success(nil), nil)
            case let .failure(error)?: return (.failure(error), nil)
            case nil: return (nil, nil)
            }
        }
        drained?()
        guard let step else { return nil }
        return .some(try step.get())
    }

    private func pop(_ state: inout State) -> Data {
        let chunk = state.chunks[state.first]
        state.chunks[state.first] = Data()
        state.first += 1
        state.buffered -= chunk.count
        if state.first == state.chunks.count {
            state.chunks.removeAll(keepingCapacity: true)
            state.first = 0
        } else if state.first >= 64 {
            state.chunks.removeFirst(state.first)
            state.first = 0
        }
        return chunk
    }

    /// The producer's handler when it was refused and the buffer is now half empty.
    private func drainedHandler(_ state: inout State) -> (@Sendable () -> Void)? {
        guard state.refused, state.buffered <= Self.capacity / 2 else { return nil }
        state.refused = false
        return state.drained
    }

    /// Reads the rest of the body into memory, up to `limit` bytes (the rest is left unread): for error bodies.
    func collect(limit: Int) async throws -> Data {
        var data = Data()
        while data.count < limit, let chunk = try await next() {
            data.append(chunk.prefix(limit - data.count))
        }
        return data
    }
}

/// A second loop read a stream's body while another was reading it: a body can be read by one loop.
struct StreamAlreadyRead: Error, CustomStringConvertible {
    var description: String { "the stream's body is being read by another loop; a body can be read once" }
}
