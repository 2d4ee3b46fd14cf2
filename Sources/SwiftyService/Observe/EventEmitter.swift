import Foundation

/// One call's events on their way to the realm's observers: in order, each once, never after the last.
///
/// Events can come from several threads at once (an answer and a cancellation); the first to find the queue
/// idle delivers everything queued, in order, outside the lock. An observer may thus cancel the request it
/// is told about: the cancellation's event queues behind the one being delivered.
final class EventEmitter: Sendable {
    let id: RequestID
    private let observers: [any RequestObserver]
    private let state = Locked.make(State())

    private struct State {
        var queue: [RequestEvent] = []
        var delivering = false
        /// Set once `completed` or `failed` is queued: later events are dropped.
        var ended = false
        /// Set once `webSocketEnded` is queued.
        var socketEnded = false
    }

    private static let counter = Locked.make(UInt64(0))

    init(observers: [any RequestObserver]) {
        self.observers = observers
        id = RequestID(
            value: Self.counter.withLock { count in
                count += 1
                return count
            })
    }

    /// Queues `kind` and delivers the queue unless another thread is delivering it.
    func emit(_ kind: RequestEvent.Kind) {
        let event = RequestEvent(requestID: id, kind: kind, date: Date())
        let deliverNow = state.withLock { state -> Bool in
            // A socket's end comes after the `completed` of the handshake that opened it.
            if case .webSocketEnded = kind {
                guard state.ended, !state.socketEnded else { return false }
                state.socketEnded = true
            } else if state.ended {
                return false
            }
            if case .completed = kind { state.ended = true }
            if case .failed = kind { state.ended = true }
            state.queue.append(event)
            guard !state.delivering else { return false }
            state.delivering = true
            return true
        }
        guard deliverNow else { return }
        while let next = state.withLock({ state -> RequestEvent? in
            guard !state.queue.isEmpty else {
                state.delivering = false
                return nil
            }
            return state.queue.removeFirst()
        }) {
            for observer in observers { observer.observe(next) }
        }
    }

    /// The call's outcome as its last event.
    func finish(_ outcome: Result<Response, ServiceError>, metrics: [TransferMetrics]) {
        switch outcome {
        case let .success(response): emit(.completed(response))
        case let .failure(error):
            emit(.failed(error, metrics: error.metrics.isEmpty ? metrics : error.metrics))
        }
    }
}

extension EventEmitter: TransferReporting {
    func redirected(from: URL, to: URL, statusCode: Int) {
        emit(.redirected(from: from, to: to, statusCode: statusCode))
    }

    func waitingForConnection(_ wait: ConnectionWait) {
        emit(.waitingForConnection(wait))
    }
}

/// The metrics of one call's attempts, in the order they ended (attempts through middleware).
final class MetricsLog: Sendable {
    private let entries = Locked.make([TransferMetrics]())

    var all: [TransferMetrics] { entries.value }

    func add(_ metrics: TransferMetrics) {
        entries.withLock { $0.append(metrics) }
    }
}
