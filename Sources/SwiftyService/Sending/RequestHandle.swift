import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A request in flight. `cancel()` stops it; its completion then runs once, with
/// ``ServiceError/cancelled(_:attempts:)``, unless the answer had already been delivered.
public final class RequestHandle: Sendable {
    typealias Delivery = @Sendable (Result<Response, ServiceError>) -> Void

    private struct State {
        var delivery: Delivery?
        var task: BackendTask?
        var isCancelled = false
        var isFinished = false
        var deadline: Deadline?

        /// Marks the request ended and hands back what must be told or stopped: the delivery, the
        /// backend's task and the resource deadline, none of which the state keeps any longer.
        mutating func end() -> (Delivery?, BackendTask?, Deadline?) {
            isFinished = true
            defer {
                delivery = nil
                task = nil
                deadline = nil
            }
            return (delivery, task, deadline)
        }
    }

    private let state: Locked<State>
    private let request: URLRequest?
    /// The caller's progress reports, which end with a cancellation or a timeout.
    private let progress: ProgressThrottle?

    init(request: URLRequest, progress: ProgressThrottle? = nil) {
        self.request = request
        self.progress = progress
        state = .make(State())
    }

    private init() {
        request = nil
        progress = nil
        state = .make(State(isFinished: true))
    }

    /// The handle of a request that ended before it started (it could not be built).
    static let finished = RequestHandle()

    /// Whether the completion has run, or is about to.
    public var isFinished: Bool { state.withLock { $0.isFinished } }

    /// Whether ``cancel()`` was called before the request finished.
    public var isCancelled: Bool { state.withLock { $0.isCancelled } }

    /// Stops the request. Its completion runs at once with ``ServiceError/cancelled(_:attempts:)``, unless it ran
    /// already; the backend is told to stop the transfer.
    public func cancel() {
        let (delivery, task, deadline) = state.withLock { state -> (Delivery?, BackendTask?, Deadline?) in
            guard !state.isFinished else { return (nil, nil, nil) }
            state.isCancelled = true
            return state.end()
        }
        deadline?.cancel()
        if delivery != nil { progress?.stop() }
        if let delivery, let request { delivery(.failure(.cancelled(request))) }
        task?.cancel()
    }

    /// Ends the request with ``ServiceError/timedOut(_:attempts:)`` after `seconds`, unless it has ended by
    /// then: the realm's resource timeout, for every backend alike.
    func expire(after seconds: TimeInterval) {
        // The deadline holds the handle: a backend that drops its completion must still see the caller told.
        let deadline = Deadline(after: seconds) { [self] in timeOut() }
        let ended = state.withLock { state -> Bool in
            if !state.isFinished { state.deadline = deadline }
            return state.isFinished
        }
        if ended { deadline.cancel() }
    }

    private func timeOut() {
        let (delivery, task, _) = state.withLock { state -> (Delivery?, BackendTask?, Deadline?) in
            guard !state.isFinished else { return (nil, nil, nil) }
            return state.end()
        }
        // The caller hears first: stopping a transfer can take a while (URLSession on Linux waits for the
        // transfer's next event).
        if delivery != nil { progress?.stop() }
        if let delivery, let request { delivery(.failure(.timedOut(request))) }
        task?.cancel()
    }

    /// Registers where the result goes. Returns `false`, having delivered the cancellation, when the
    /// handle was cancelled before this (a task cancelled before its request started).
    func begin(delivering delivery: @escaping Delivery) -> Bool {
        let cancelled = state.withLock { state -> Bool in
            if state.isCancelled { return true }
            state.delivery = delivery
            return false
        }
        if cancelled, let request { delivery(.failure(.cancelled(request))) }
        return !cancelled
    }

    /// Remembers the backend's task so that `cancel()` reaches it; cancels it at once if `cancel()` won.
    func attach(_ task: BackendTask) {
        let cancelNow = state.withLock { state -> Bool in
            if state.isCancelled { return true }
            if !state.isFinished { state.task = task }
            return false
        }
        if cancelNow { task.cancel() }
    }

    /// Ends the request with what the backend or the chain answered, unless it was cancelled or timed out
    /// first: then `settle` — the effects of that answer (a download moved into place, the last progress
    /// reports) — runs and its outcome is delivered; otherwise `discard` cleans up after the answer. Once
    /// `settle` has begun, a cancellation comes too late and changes nothing.
    func finish(
        settling answer: Result<Response, ServiceError>,
        with settle: (Result<Response, ServiceError>) -> Result<Response, ServiceError>,
        otherwise discard: (Result<Response, ServiceError>) -> Void
    ) {
        let (delivery, _, deadline) = state.withLock { state -> (Delivery?, BackendTask?, Deadline?) in
            guard !state.isFinished else { return (nil, nil, nil) }
            return state.end()
        }
        guard let delivery else { return discard(answer) }
        deadline?.cancel()
        delivery(settle(answer))
    }

    /// Delivers the result, unless the handle was cancelled or finished already.
    func finish(_ result: Result<Response, ServiceError>) {
        let (delivery, _, deadline) = state.withLock { state -> (Delivery?, BackendTask?, Deadline?) in
            guard !state.isFinished else { return (nil, nil, nil) }
            return state.end()
        }
        deadline?.cancel()
        delivery?(result)
    }
}
