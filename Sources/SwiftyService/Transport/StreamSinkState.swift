import Foundation

/// The life of one streamed body as a value: which events may happen in which phase, and what each one asks
/// the owner to do. Pure: no locks, no calls out; ``StreamSink`` holds it under a lock and carries the
/// actions out (the taps under that lock, so that they see the body in order; everything else after it).
///
/// A waiting reader is only woken: what it wakes to (a chunk, the end) waits here, and it takes it under the
/// lock like any other read. Nothing is handed to it from the producer's thread.
///
/// ```
/// awaitingHead ──head──▶ flowing ──finish / fail / stop──▶ ended
///      └───────────────fail / stop / finish (the head's listener hears a failure)──▶ ended
/// ```
/// The buffer holds at most `capacity` bytes the reader has not taken (plus the one chunk that crossed it):
/// past that an offer is refused, and the producer waits for the drained handler, which runs once the reader
/// has taken the buffer down to half. A reader waiting when a chunk comes takes it at once, whatever the
/// buffer holds.
struct StreamSinkState<Reader> {
    typealias Listener = @Sendable (Result<Response, any Error>) -> Void
    typealias Tap = @Sendable (StreamSink.Tapped) -> Void
    typealias EndHandler = @Sendable (_ bytes: Int64, _ error: ServiceError?) -> Void

    enum Phase {
        /// The head has not come; the listener hears it, or the failure that comes first.
        case awaitingHead(Listener)
        case flowing
        /// How the body ended: whole, or with the error that stopped it.
        case ended(Result<Void, ServiceError>)
    }

    private(set) var phase: Phase
    let capacity: Int
    private var chunks: [Data] = []
    private var first = 0
    /// The bytes held for the reader now.
    private(set) var buffered = 0
    /// The bytes of body taken from the producer so far.
    private(set) var byteCount: Int64 = 0
    private var reader: Reader?
    /// Set while the end is being told to the taps, the listener and the end handlers: a reader that asks
    /// meanwhile waits, so that what they keep is there once its loop is over.
    private var announcingEnd = false
    /// The producer was refused a chunk and waits for the drained handler.
    private var refused = false
    private var drained: (@Sendable () -> Void)?
    private var task: BackendTask?
    private(set) var taps: [Tap] = []
    private var endHandlers: [EndHandler] = []
    /// Whether a reader has started on the body: the first owns the transfer from then on.
    private(set) var isIterated = false

    init(capacity: Int, onHead listener: @escaping Listener) {
        self.capacity = capacity
        phase = .awaitingHead(listener)
    }

    /// A body that is whole already: `data` waits for the reader, and the body has ended.
    init(capacity: Int, whole data: Data) {
        self.capacity = capacity
        phase = .ended(.success(()))
        if !data.isEmpty {
            chunks = [data]
            buffered = data.count
            byteCount = Int64(data.count)
        }
    }

    var isEnded: Bool {
        if case .ended = phase { return true }
        return false
    }

    var hasReader: Bool { reader != nil }

    // MARK: The producer's events

    /// The head came: the listener to tell, and the taps to show it; `nil` when it is not the first event.
    mutating func head() -> Listener? {
        guard case let .awaitingHead(listener) = phase else { return nil }
        phase = .flowing
        return listener
    }

    /// What becomes of an offered chunk.
    enum Offer {
        /// Taken into the buffer; a reader that was waiting for it is to be woken.
        case taken(waking: Reader?)
        /// The buffer is full: the producer keeps the chunk and waits for the drained handler.
        case refused
        /// The body has ended: the chunk goes nowhere, and the producer need not wait.
        case swallowed
    }

    /// A chunk from the producer; `force` takes it however full the buffer is (a body in memory already).
    mutating func offer(_ chunk: Data, force: Bool) -> Offer {
        if isEnded { return .swallowed }
        if !force, buffered >= capacity, reader == nil {
            refused = true
            return .refused
        }
        byteCount += Int64(chunk.count)
        chunks.append(chunk)
        buffered += chunk.count
        defer { reader = nil }
        return .taken(waking: reader)
    }

    /// What the owner does once the body has ended.
    struct Ended {
        /// The head's listener, which hears the failure: the body ended before its head.
        var listener: Listener?
        var failure: ServiceError?
        /// A waiting reader, to wake once the end has been told to everyone else.
        var reader: Reader?
        /// The transfer to stop: the body was stopped from this side.
        var task: BackendTask?
        var handlers: [EndHandler]
        /// The taps, which hear of the end before anyone else.
        var taps: [Tap]
        var bytes: Int64
    }

    /// The body ends: whole (`nil`), failed by the producer, or stopped by this side (`stopping`, which also
    /// drops what is buffered and stops the transfer). `nil` when it had ended already.
    mutating func end(_ error: ServiceError?, stopping: Bool) -> Ended? {
        var listener: Listener?
        switch phase {
        case .ended: return nil
        case let .awaitingHead(waiting): listener = waiting
        case .flowing: break
        }
        phase = .ended(error.map { .failure($0) } ?? .success(()))
        if stopping {
            chunks = []
            first = 0
            buffered = 0
        }
        let ended = Ended(
            listener: listener, failure: error, reader: reader, task: stopping ? task : nil,
            handlers: endHandlers, taps: taps, bytes: byteCount)
        reader = nil
        task = nil
        drained = nil
        endHandlers = []
        taps = []
        announcingEnd = true
        return ended
    }

    /// The end has been told to everyone but the reader: the reader that came to wait meanwhile, if any.
    mutating func endAnnounced() -> Reader? {
        announcingEnd = false
        defer { reader = nil }
        return reader
    }

    // MARK: The reader's events

    /// What a reader asking for the next chunk gets.
    enum Next {
        /// A chunk, and the producer's drained handler to run when this one brought the buffer down.
        case chunk(Data, drained: (@Sendable () -> Void)?)
        case end(Result<Void, ServiceError>)
        /// Nothing yet: the reader is to wait (``wait(_:)``) and ask again once woken.
        case wait
        /// Another reader is waiting on the same body.
        case busy
    }

    /// The next chunk, the end, or nothing yet.
    mutating func next() -> Next {
        if first < chunks.count { return .chunk(pop(), drained: drainedHandler()) }
        if let end = readableEnd { return .end(end) }
        return reader == nil ? .wait : .busy
    }

    /// Keeps `waiting` to wake with the next chunk or the end; `false` when it is not kept and should ask
    /// again at once (something came meanwhile, or another reader waits).
    mutating func wait(_ waiting: Reader) -> Bool {
        guard first == chunks.count, readableEnd == nil, reader == nil else { return false }
        reader = waiting
        return true
    }

    /// How the body ended, once that is there for the reader: everyone else has heard.
    private var readableEnd: Result<Void, ServiceError>? {
        guard case let .ended(outcome) = phase, !announcingEnd else { return nil }
        return outcome
    }

    /// Marks the body as being read; `true` for the first reader.
    mutating func startIterating() -> Bool {
        defer { isIterated = true }
        return !isIterated
    }

    private mutating func pop() -> Data {
        let chunk = chunks[first]
        chunks[first] = Data()
        first += 1
        buffered -= chunk.count
        if first == chunks.count {
            chunks.removeAll(keepingCapacity: true)
            first = 0
        } else if first >= 64 {
            chunks.removeFirst(first)
            first = 0
        }
        return chunk
    }

    /// The producer's handler when it was refused and the buffer is now down to half.
    private mutating func drainedHandler() -> (@Sendable () -> Void)? {
        guard refused, buffered <= capacity / 2 else { return nil }
        refused = false
        return drained
    }

    // MARK: What the owner keeps

    mutating func whenDrained(_ handler: @escaping @Sendable () -> Void) {
        drained = handler
    }

    /// Keeps the transfer's stopper; `true` when it must be stopped now (the body was stopped meanwhile).
    mutating func attach(_ stopper: BackendTask) -> Bool {
        switch phase {
        case .ended(.failure): return true
        case .ended(.success): return false
        case .awaitingHead, .flowing:
            task = stopper
            return false
        }
    }

    /// Keeps an end handler; or, when the body has ended, what to call it with now.
    mutating func whenEnded(_ handler: @escaping EndHandler) -> (bytes: Int64, error: ServiceError?)? {
        switch phase {
        case let .ended(.failure(error)): return (byteCount, error)
        case .ended(.success): return (byteCount, nil)
        case .awaitingHead, .flowing:
            endHandlers.append(handler)
            return nil
        }
    }

    /// What a tap added now has missed.
    enum Joined {
        /// Nothing yet: it sees the body from its first byte.
        case fromTheStart
        /// These chunks are held for the reader and have not been shown to it; the rest it sees as it comes.
        case after([Data])
        /// The body came whole before the tap, and is all still held for the reader: these chunks are it.
        case whole([Data])
        /// The reader has taken bytes already, or the body failed: the tap cannot see it whole.
        case tooLate
    }

    /// Adds a tap, which sees every chunk from now on and the end.
    mutating func addTap(_ tap: @escaping Tap) -> Joined {
        if byteCount > Int64(buffered) { return .tooLate }
        switch phase {
        case .ended(.success): return .whole(Array(chunks[first...]))
        case .ended(.failure): return .tooLate
        case .awaitingHead, .flowing: break
        }
        taps.append(tap)
        return buffered == 0 ? .fromTheStart : .after(Array(chunks[first...]))
    }
}
