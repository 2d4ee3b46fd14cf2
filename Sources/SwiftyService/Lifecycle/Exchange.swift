import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What an exchange's answer does beyond being told: effects that belong to it alone.
protocol Settling: Sendable {
    /// Turns the answer into the outcome and carries out its effects (a download moved into place, the
    /// last progress reports); runs only for the answer that is the outcome.
    func settle(_ answer: Exchange.Outcome) -> Exchange.Outcome
    /// Cleans up after an answer that came when the exchange had ended without it.
    func discard(_ answer: Exchange.Outcome)
    /// The exchange ended before its head (cancelled, timed out, abandoned) with `outcome`: nothing more may
    /// be reported.
    func stop(_ outcome: Exchange.Outcome)
}

extension Settling {
    func settle(_ answer: Exchange.Outcome) -> Exchange.Outcome { answer }
    func discard(_ answer: Exchange.Outcome) {}
    func stop(_ outcome: Exchange.Outcome) {}
}

/// An answer with no effects of its own: an attempt's, a shared flight's.
struct PlainAnswer: Settling {}

/// One unit of work with one outcome — a call, one attempt at it, a flight that coalesced callers share —
/// and every party waiting for that outcome. The one place that decides which outcome wins (the head, a
/// cancellation, a timeout), runs that outcome's effects only for it, and tells each waiter exactly once.
/// A call's exchange that is answered with a head whose body is still arriving keeps that body until it
/// ends: a cancellation or the call's deadline then stops the body.
///
/// The decisions are ``ExchangeState``'s; this class holds it under a lock and acts outside the lock.
final class Exchange: DeadlineTarget {
    typealias Outcome = Result<Response, ServiceError>
    typealias Waiter = @Sendable (Outcome) -> Void

    /// The request that cancellations and timeouts name, as a `URLRequest` only when one of them does.
    private let sent: SentRequest
    var request: URLRequest { sent.urlRequest }
    private let settling: any Settling
    /// Whether a streamed answer's body stays with the exchange until it ends (a call's), rather than
    /// going on with the head (an attempt's, a flight's).
    private let keepsBody: Bool
    // A `Locked` box, not a `Mutex` held inline (one allocation less): ThreadSanitizer does not see the
    // ordering of the Synchronization module's lock on Linux, and reported its critical sections as races.
    private let state: Locked<ExchangeState<Outcome, any ArrivingBody>>

    convenience init(request: URLRequest, endsWhenAbandoned: Bool = false) {
        self.init(sent: .given(request), endsWhenAbandoned: endsWhenAbandoned)
    }

    init(
        sent: SentRequest, settling: any Settling = PlainAnswer(), endsWhenAbandoned: Bool = false,
        keepsBody: Bool = false
    ) {
        self.sent = sent
        self.settling = settling
        self.keepsBody = keepsBody
        state = .make(ExchangeState(endsWhenAbandoned: endsWhenAbandoned))
    }

    /// An exchange over before it began: a request that could not be built.
    init(failed error: ServiceError) {
        sent = .given(URLRequest(url: .placeholder))
        settling = PlainAnswer()
        keepsBody = false
        var finished = ExchangeState<Outcome, any ArrivingBody>()
        _ = finished.end(.failure(error))
        state = .make(finished)
    }

    /// The outcome, once there is one.
    var outcome: Outcome? { state.withLock { $0.outcome } }

    /// Whether the outcome is decided (or being settled).
    var isFinished: Bool { state.withLock { $0.isDecided } }

    /// Whether the exchange ended as cancelled.
    var isCancelled: Bool {
        guard case let .failure(error)? = outcome else { return false }
        return error.kind == .cancelled
    }

    /// Starts the work, once: `work` gets the function to call with the answer and returns what stops it.
    func start(_ work: (@escaping @Sendable (Outcome) -> Void) -> BackendTask) {
        start { (exchange: Exchange) in work { answer in exchange.answer(answer) } }
    }

    /// Starts the work, once: `work` gets this exchange, to give it the answer with ``answer(_:)``, and
    /// returns what stops it. (No function is made to answer with: one allocation less per request.)
    func start(_ work: (Exchange) -> BackendTask) {
        guard case .send = state.withLock({ $0.start() }) else { return }
        let task = work(self)
        if case .stopNow = state.withLock({ $0.attach(task) }) { task.cancel() }
    }

    /// The work's answer: the head (with the whole body, or the body arriving), or the failure. Only the first
    /// answer counts, and only before the exchange ended.
    func answer(_ answer: Outcome) {
        // Settled here, on the answering thread, not by the awaiting task: a task resumed with the bare answer
        // was often resumed before it had suspended (its transfer starts inside its continuation's body), and
        // ThreadSanitizer, blind to the runtime's ordering there, reported the resume against the task's frame.
        guard case .settle = state.withLock({ $0.head() }) else { return settling.discard(answer) }
        let outcome = settling.settle(answer)
        let body = keepsBody ? outcome.streamedBody : nil
        // A kept body's owner goes to the waiters alone: held here, it would keep a stream let go of running.
        let kept = body == nil ? nil : outcome.map { $0.whole(Data()) }
        switch state.withLock({ $0.settled(outcome, body: body, keeping: kept) }) {
        case let .finish(waiters, deadline):
            deadline?.cancel()
            waiters.tell(outcome)
        case let .stream(waiters, stop):
            // Told before the waiters: a body that ended already finishes the exchange now.
            body?.whenEnded { [self] _, _ in bodyEnded() }
            waiters.tell(outcome)
            if case let .failure(error)? = stop { body?.stop(with: error) }
        }
    }

    private func bodyEnded() {
        if case let .finish(deadline) = state.withLock({ $0.bodyEnded() }) { deadline?.cancel() }
    }

    /// Ends the exchange as cancelled: before its head, the outcome is the cancellation and the work is
    /// told to stop; during its body, the body stops.
    func cancel() {
        end(.failure(.cancelled(request)))
    }

    /// Ends the exchange as timed out after `seconds`, unless it has ended by then.
    func expire(after seconds: TimeInterval) {
        // The deadline holds the exchange: work that never answers must still end for its waiters.
        let deadline = Deadline(after: seconds, ending: self)
        if case .callOff = state.withLock({ $0.keep(deadline) }) { deadline.cancel() }
    }

    /// Ends the exchange as timed out: its deadline passed first.
    func deadlinePassed(after seconds: TimeInterval) {
        end(.failure(.deadlinePassed(request, after: seconds)))
    }

    private func end(_ outcome: Outcome) {
        carryOut(state.withLock { $0.end(outcome) }, outcome)
    }

    private func carryOut(_ action: ExchangeState<Outcome, any ArrivingBody>.EndAction, _ outcome: Outcome) {
        switch action {
        case .none: return
        case let .fail(waiters, work, deadline):
            deadline?.cancel()
            settling.stop(outcome)
            // The waiters hear first: stopping a transfer can take a while (URLSession on Linux waits for the
            // transfer's next event).
            waiters.tell(outcome)
            work?.cancel()
        case let .stopBody(body, deadline):
            deadline?.cancel()
            if case let .failure(error) = outcome { body.stop(with: error) }
        }
    }

    /// Adds a waiter, told the outcome once: now if there is one, later otherwise. Returns its number while
    /// it waits, for ``stopWaiting(_:)``.
    @discardableResult
    func wait(_ waiter: @escaping Waiter) -> Int? {
        switch state.withLock({ $0.add(waiter) }) {
        case let .waiting(id): return id
        case let .decided(outcome):
            waiter(outcome)
            return nil
        }
    }

    /// One waiter stops waiting: it alone is told the exchange was cancelled. The last one to leave an
    /// exchange that ends when abandoned ends it.
    func stopWaiting(_ id: Int) {
        let cancelled = Outcome.failure(.cancelled(request))
        let removed = state.withLock { $0.remove(id, abandoned: cancelled) }
        guard let waiter = removed.waiter else { return }
        let ended = removed.ended
        // It hears first, as in `carryOut`; then, if nobody else waits, the work stops.
        waiter.tell(cancelled)
        carryOut(ended, cancelled)
    }

    /// Waits for the outcome in a task. When the task is cancelled, the wait ends at once as cancelled; with
    /// `cancelling`, the exchange itself is cancelled, otherwise only this wait stops.
    func outcome(cancelling: Bool) async -> Outcome {
        if cancelling {
            // Cancelling the exchange ends every wait, this one included (a wait that starts after it gets the
            // outcome at once): nothing to remember about this wait.
            return await withTaskCancellationHandler {
                await untilFinished()
            } onCancel: {
                cancel()
            }
        }
        let wait = Locked.make(WaitState())
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
                let id = self.wait { continuation.resume(returning: $0) }
                let cancelledMeanwhile = wait.withLock { wait -> Bool in
                    wait.id = id
                    return wait.cancelled
                }
                if cancelledMeanwhile, let id { stopWaiting(id) }
            }
        } onCancel: {
            let id = wait.withLock { wait -> Int? in
                wait.cancelled = true
                return wait.id
            }
            if let id { stopWaiting(id) }
        }
    }

    /// Waits for the outcome, whatever happens to the task meanwhile; `starting` runs once the wait is in
    /// place, so that the waiter hears the outcome itself rather than what the exchange keeps of it.
    // Nonsending: the wait runs on its caller's executor, with no switch on the way in or back.
    nonisolated(nonsending) func untilFinished(starting: () -> Void = {}) async -> Outcome {
        var gaveItself = false
        // Unchecked: the exchange tells each waiter exactly once, which is what a checked continuation would
        // check, at the cost of an allocation per request.
        let outcome = await withUnsafeContinuation { continuation in
            switch state.withLock({ $0.addStarting(continuation) }) {
            case let .decided(outcome):
                gaveItself = true
                continuation.resume(returning: outcome)
                starting()
            case .waiting:
                starting()
            case .starting:
                starting()
                // An answer that came while the work started is this thread's to give: resumed from the
                // answering thread before its task suspended, the runtime's ordering is all that orders the two,
                // and ThreadSanitizer, blind to it, reported the resume against the task's frame (in CI).
                if let answered = state.withLock({ $0.sealStarting() }) {
                    gaveItself = true
                    continuation.resume(returning: answered)
                }
            }
        }
        // Resumed by the answering thread, which built the outcome and then released this lock: taking it once
        // more orders that work before ours for ThreadSanitizer too.
        if !gaveItself { state.withLock { _ in } }
        return outcome
    }

    private struct WaitState {
        var id: Int?
        var cancelled = false
    }
}

extension Exchange {
    /// `waiter`, told on `queue` when there is one.
    static func waiter(_ waiter: @escaping Waiter, on queue: DispatchQueue?) -> Waiter {
        guard let queue else { return waiter }
        return { outcome in queue.async { waiter(outcome) } }
    }
}

extension Result where Success == Response {
    /// The body of a successful answer that is still arriving.
    var streamedBody: (any ArrivingBody)? {
        guard case let .success(response) = self else { return nil }
        return response.arrivingBody
    }
}
