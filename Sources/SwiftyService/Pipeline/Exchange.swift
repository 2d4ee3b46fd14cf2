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
    /// The exchange ended without its answer (cancelled, timed out, abandoned) with `outcome`: nothing more
    /// may be reported.
    func stop(_ outcome: Exchange.Outcome)
}

extension Settling {
    func settle(_ answer: Exchange.Outcome) -> Exchange.Outcome { answer }
    func discard(_ answer: Exchange.Outcome) {}
    func stop(_ outcome: Exchange.Outcome) {}
}

/// An answer with no effects of its own: an attempt's, a shared flight's.
struct PlainAnswer: Settling {}

/// One unit of work with one outcome — a request, one attempt at it, a flight that coalesced callers share —
/// and every party waiting for that outcome. The one place that decides which outcome wins (the answer, a
/// cancellation, a timeout), runs that outcome's effects only for it, and tells each waiter exactly once.
///
/// The decisions are ``ExchangeState``'s; this class holds it under a lock and acts outside the lock.
final class Exchange: Sendable {
    typealias Outcome = Result<Response, ServiceError>
    typealias Waiter = @Sendable (Outcome) -> Void

    /// The request that cancellations and timeouts name.
    let request: URLRequest
    private let settling: any Settling
    private let state: Locked<ExchangeState<Outcome>>

    init(request: URLRequest, settling: any Settling = PlainAnswer(), endsWhenAbandoned: Bool = false) {
        self.request = request
        self.settling = settling
        state = .make(ExchangeState(endsWhenAbandoned: endsWhenAbandoned))
    }

    /// An exchange over before it began: a request that could not be built.
    init(failed error: ServiceError) {
        request = URLRequest(url: URL(string: "about:blank")!)
        settling = PlainAnswer()
        var finished = ExchangeState<Outcome>()
        _ = finished.start()
        _ = finished.answer()
        _ = finished.settled(.failure(error))
        state = .make(finished)
    }

    /// The outcome, once there is one.
    var outcome: Outcome? { state.withLock { $0.outcome } }

    /// Whether the outcome is decided (or being settled).
    var isFinished: Bool {
        state.withLock { state in state.phase == .settling || state.phase == .finished }
    }

    /// Whether the exchange ended as cancelled.
    var isCancelled: Bool {
        guard case let .failure(error)? = outcome else { return false }
        return error.kind == .cancelled
    }

    /// Starts the work, once: `work` gets the function to call with the answer and returns what stops it.
    func start(_ work: (@escaping @Sendable (Outcome) -> Void) -> BackendTask) {
        guard state.withLock({ $0.start() }) else { return }
        let task = work { [self] answer in self.answer(answer) }
        if !state.withLock({ $0.attach(task) }) { task.cancel() }
    }

    private func answer(_ answer: Outcome) {
        guard state.withLock({ $0.answer() }) else { return settling.discard(answer) }
        let outcome = settling.settle(answer)
        let (waiters, deadline) = state.withLock { $0.settled(outcome) }
        deadline?.cancel()
        waiters.tell(outcome)
    }

    /// Ends the exchange as cancelled, unless its outcome is decided already; the work is told to stop.
    func cancel() {
        end(.failure(.cancelled(request)))
    }

    /// Ends the exchange as timed out after `seconds`, unless it has ended by then.
    func expire(after seconds: TimeInterval) {
        // The deadline holds the exchange: work that never answers must still end for its waiters.
        let deadline = Deadline(after: seconds) { [self] in
            end(.failure(.deadlinePassed(request, after: seconds)))
        }
        if !state.withLock({ $0.keep(deadline) }) { deadline.cancel() }
    }

    private func end(_ outcome: Outcome) {
        guard let (waiters, work, deadline) = state.withLock({ $0.end(outcome) }) else { return }
        deadline?.cancel()
        settling.stop(outcome)
        // The waiters hear first: stopping a transfer can take a while (URLSession on Linux waits for the
        // transfer's next event).
        waiters.tell(outcome)
        work?.cancel()
    }

    /// Adds a waiter, told the outcome once: now if there is one, later otherwise. Returns its number while
    /// it waits, for ``stopWaiting(_:)``.
    @discardableResult
    func wait(_ waiter: @escaping Waiter) -> Int? {
        switch state.withLock({ $0.add(waiter) }) {
        case let .waiting(id): return id
        case let .finished(outcome):
            waiter(outcome)
            return nil
        }
    }

    /// One waiter stops waiting: it alone is told the exchange was cancelled. The last one to leave an
    /// exchange that ends when abandoned ends it.
    func stopWaiting(_ id: Int) {
        let cancelled = Outcome.failure(.cancelled(request))
        let (waiter, work, deadline) = state.withLock { $0.remove(id, abandoned: cancelled) }
        guard let waiter else { return }
        deadline?.cancel()
        waiter(cancelled)
        if let work {
            settling.stop(cancelled)
            work.cancel()
        }
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
                if cancelledMeanwhile, let id { cancelling ? cancel() : stopWaiting(id) }
            }
        } onCancel: {
            let id = wait.withLock { wait -> Int? in
                wait.cancelled = true
                return wait.id
            }
            if cancelling {
                cancel()
            } else if let id {
                stopWaiting(id)
            }
        }
    }

    /// Waits for the outcome, whatever happens to the task meanwhile.
    func untilFinished() async -> Outcome {
        // Unchecked: the exchange tells each waiter exactly once, which is what a checked continuation would
        // check, at the cost of an allocation per request.
        let outcome = await withUnsafeContinuation { continuation in
            wait { continuation.resume(returning: $0) }
        }
        // The answering thread built the outcome and then released this lock. Taking it once more orders that
        // work before ours for ThreadSanitizer too: a continuation resumed before its task had suspended was
        // once reported as a race (in a CI rehearsal), the runtime's own ordering being invisible to it.
        state.withLock { _ in }
        return outcome
    }

    private struct WaitState {
        var id: Int?
        var cancelled = false
    }
}
