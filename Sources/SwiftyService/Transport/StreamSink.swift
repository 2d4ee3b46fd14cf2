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
///
/// The decisions are `StreamSinkState`'s, a pure state machine; this class holds it under a lock and acts
/// after letting go of it.
public final class StreamSink: ArrivingBody {
    /// The most body bytes a stream holds that its consumer has not read yet: 256 KiB.
    public static let capacity = 256 * 1024

    /// A reader waiting for a chunk or the end, woken without either: it takes what came under the lock.
    typealias Reader = UnsafeContinuation<Void, Never>

    let request: URLRequest
    private let state: Locked<StreamSinkState<Reader>>

    /// What a tap sees of a stream (for recording it, or storing it in a cache).
    package enum Tapped: Sendable {
        /// The head.
        case head(Response)
        /// A chunk the reader will get.
        case chunk(Data)
        /// The end: `nil` when the body is complete.
        case end(ServiceError?)
    }

    init(request: URLRequest, onHead: @escaping @Sendable (Result<Response, any Error>) -> Void) {
        self.request = request
        state = .make(StreamSinkState(capacity: Self.capacity, onHead: onHead))
    }

    /// A sink that holds a whole body already: for answers that never reached a streaming backend.
    init(whole response: Response) {
        request = response.request
        state = .make(StreamSinkState(capacity: Self.capacity, whole: response.data))
    }

    // MARK: The backend's side

    /// The response head (status and headers; its data is ignored): call once, before any chunk. The head's
    /// listener gets it with this sink as its body, still arriving.
    public func head(_ response: Response) {
        var head = response
        head.data = Data()
        let listener = state.withLock { state -> StreamSinkState<Reader>.Listener? in
            guard let listener = state.head() else { return nil }
            for tap in state.taps { tap(.head(head)) }
            return listener
        }
        listener?(.success(head.arriving(self)))
    }

    /// Offers the next chunk of the body. `true`: taken. `false`: the buffer is full; keep the chunk, stop
    /// reading, and offer it again after the ``whenDrained(_:)`` handler runs.
    public func offer(_ chunk: Data) -> Bool {
        guard !chunk.isEmpty else { return true }
        return take(chunk, force: false)
    }

    /// Appends `chunk` whatever the buffer holds: for a body that is in memory already.
    package func forceAppend(_ chunk: Data) {
        guard !chunk.isEmpty else { return }
        _ = take(chunk, force: true)
    }

    private func take(_ chunk: Data, force: Bool) -> Bool {
        let offer = state.withLock { state -> StreamSinkState<Reader>.Offer in
            let offer = state.offer(chunk, force: force)
            if case .taken = offer {
                for tap in state.taps { tap(.chunk(chunk)) }
            }
            return offer
        }
        switch offer {
        case let .taken(reader):
            // Woken after the lock is let go: a resume can wait for the reader task's own lock, which that task
            // holds while its cancellation handler stops this sink (and takes this lock).
            reader?.resume()
            return true
        case .swallowed: return true
        case .refused: return false
        }
    }

    /// Sets what to call once a refused producer may offer again; it runs on the consumer's thread.
    public func whenDrained(_ handler: @escaping @Sendable () -> Void) {
        state.withLock { $0.whenDrained(handler) }
    }

    /// The body is complete.
    public func finish() {
        end(nil, stopping: false)
    }

    /// The transfer failed; before the head, the request fails, after it, the body does.
    public func fail(_ error: any Error) {
        end(ServiceError(error, request: request), stopping: false, cause: error)
    }

    /// Whether the consumer has stopped or the body ended: a backend may stop sending.
    public var isEnded: Bool { state.withLock { $0.isEnded } }

    /// Hands over a whole answer at once: its head, its body as one chunk, the end; or its failure.
    /// For a backend's answers that arrive whole (a redirect it did not follow, a transfer without a delegate).
    public func deliver(_ answer: Result<Response, any Error>) {
        switch answer {
        case let .success(response):
            head(response)
            forceAppend(response.data)
            finish()
        case let .failure(error):
            fail(error)
        }
    }

    // MARK: SwiftyService's side

    /// Keeps the transfer's stopper; stops it now if the stream was stopped meanwhile.
    func attach(_ task: BackendTask) {
        if state.withLock({ $0.attach(task) }) { task.cancel() }
    }

    /// Stops the stream: the consumer hears `error` (unless the body ended already) and the transfer stops.
    func stop(with error: ServiceError) {
        end(error, stopping: true)
    }

    /// Stops the stream as cancelled.
    func cancel() {
        stop(with: .cancelled(request))
    }

    /// Ends the body; `cause` is what the head's listener hears when the body ends before its head.
    private func end(_ error: ServiceError?, stopping: Bool, cause: (any Error)? = nil) {
        guard let ended = state.withLock({ $0.end(error, stopping: stopping) }) else { return }
        // The taps hear of the end before the reader can: what they keep is there once the loop is over. (Out
        // of the lock: a tap may store what it kept; no chunk can reach a tap after the end.)
        for tap in ended.taps { tap(.end(error)) }
        ended.listener?(.failure(cause ?? error ?? StreamEndedBeforeItsHead()))
        for handler in ended.handlers { handler(ended.bytes, error) }
        // A waiting consumer has read everything there was; it hears of the end after everyone else (one that
        // came meanwhile was made to wait). Woken out of the lock, as in `take`.
        let late = state.withLock { $0.endAnnounced() }
        ended.reader?.resume()
        late?.resume()
        ended.task?.cancel()
    }

    /// Calls `handler` once when the body has ended — whole (`nil`), failed or stopped — with the bytes handed
    /// over; at once when it has ended already.
    func whenEnded(_ handler: @escaping @Sendable (_ bytes: Int64, _ error: ServiceError?) -> Void) {
        if let (bytes, error) = state.withLock({ $0.whenEnded(handler) }) { handler(bytes, error) }
    }

    /// Adds a tap that sees every chunk of the body from its first byte, and its end (at once, for a body
    /// that ended whole before). `false` when the reader has taken bytes already or the body failed: then
    /// the tap is not added.
    package func tapFromTheStart(_ tap: @escaping @Sendable (Tapped) -> Void) -> Bool {
        let joined = state.withLock { state in
            let joined = state.addTap(tap)
            // Under the lock: the producer's next chunk reaches the tap after these.
            if case let .after(chunks) = joined { for chunk in chunks { tap(.chunk(chunk)) } }
            return joined
        }
        switch joined {
        case .fromTheStart, .after: return true
        case let .whole(chunks):
            for chunk in chunks { tap(.chunk(chunk)) }
            tap(.end(nil))
            return true
        case .tooLate: return false
        }
    }

    func whenWhole(upTo limit: Int, _ whole: @escaping @Sendable (Data) -> Void) {
        let kept = Locked.make((data: Data(), over: false))
        _ = tapFromTheStart { event in
            switch event {
            case .head: break
            case let .chunk(chunk):
                kept.withLock { kept in
                    guard !kept.over else { return }
                    if kept.data.count + chunk.count > limit {
                        kept = (Data(), true)
                    } else {
                        kept.data.append(chunk)
                    }
                }
            case .end(nil):
                let (data, over) = kept.withLock { kept in
                    defer { kept = (Data(), true) }
                    return kept
                }
                if !over { whole(data) }
            case .end:
                kept.withLock { $0 = (Data(), true) }
            }
        }
    }

    /// Sees the head, every chunk taken and the end, on the backend's thread; set before the transfer starts.
    package func tap(_ tap: @escaping @Sendable (Tapped) -> Void) {
        _ = state.withLock { $0.addTap(tap) }
    }

    /// The bytes held for the reader now.
    var bufferedBytes: Int { state.withLock { $0.buffered } }

    /// The bytes of body handed over so far.
    var byteCount: Int64 { state.withLock { $0.byteCount } }

    /// Marks the body as being read by an iterator; `true` for the first, which owns the transfer from then on.
    func startIterating() -> Bool {
        state.withLock { $0.startIterating() }
    }

    var isIterated: Bool { state.withLock { $0.isIterated } }

    /// Whether a reader is waiting for the next chunk (for tests).
    var hasWaitingReader: Bool { state.withLock { $0.hasReader } }

    /// The next chunk; `nil` at the end of the body. Cancelling the task stops the stream.
    func next() async throws -> Data? {
        // The chunk or the end is always taken here, under the lock: the producer only wakes the wait, so its
        // work is ordered before ours by the lock, for ThreadSanitizer too (which does not see the runtime's
        // own hand-over of a value resumed from another thread).
        while true {
            if let ready = try answer(state.withLock { $0.next() }) { return ready }
            await withTaskCancellationHandler {
                await withUnsafeContinuation { (reader: Reader) in
                    if !state.withLock({ $0.wait(reader) }) { reader.resume() }
                }
            } onCancel: {
                cancel()
            }
        }
    }

    /// A chunk or the end (`.some`), or `nil` when the reader waits; runs the drained handler a chunk brings.
    private func answer(_ next: StreamSinkState<Reader>.Next) throws(ServiceError) -> Data?? {
        switch next {
        case let .chunk(chunk, drained):
            drained?()
            return .some(chunk)
        case .end(.success): return .some(nil)
        case let .end(.failure(error)): throw error
        case .wait: return nil
        case .busy:
            // Two loops over one body at once: the second is told, the first keeps its place.
            throw .transport(request, underlying: StreamAlreadyRead())
        }
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

/// A streaming backend ended a body it never gave the head of.
struct StreamEndedBeforeItsHead: Error, CustomStringConvertible {
    var description: String { "the backend ended the stream before its response head" }
}
