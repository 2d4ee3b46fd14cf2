import Foundation
import Testing

@testable import SwiftyService

/// The exchange's states alone, without threads or a network: which event wins, what each one asks for.
@Suite struct ExchangeStateTests {
    typealias State = ExchangeState<String>

    /// Records what the waiters were told.
    final class Told: @unchecked Sendable {
        private let lock = NSLock()
        private var values: [String] = []
        var all: [String] { lock.withLock { values } }
        func waiter(_ name: String) -> State.Waiter {
            { [self] in
                let v = "\(name):\($0)"; lock.withLock { values.append(v) }
            }
        }
    }

    let told = Told()

    @Test func anAnswerSettlesOnceAndEveryWaiterIsToldInOrder() {
        var state = State()
        guard case .waiting = state.add(told.waiter("a")) else { Issue.record("a should wait"); return }
        let started = state.start()
        #expect(started)
        let startedAgain = state.start()
        #expect(!startedAgain, "the work starts once")
        guard case .waiting = state.add(told.waiter("b")) else { Issue.record("b should wait"); return }
        let settles = state.answer()
        #expect(settles)
        let settlesAgain = state.answer()
        #expect(!settlesAgain, "a second answer is discarded")
        let (waiters, _) = state.settled("ok")
        waiters.forEach { $0("ok") }
        #expect(told.all == ["a:ok", "b:ok"])
        #expect(state.outcome == "ok")
        guard case let .finished(outcome) = state.add(told.waiter("late")) else {
            Issue.record("a late waiter gets the outcome at once"); return
        }
        #expect(outcome == "ok")
    }

    @Test func aCancellationBeforeTheAnswerWinsAndTheAnswerIsDiscarded() {
        var state = State()
        _ = state.add(told.waiter("a"))
        _ = state.start()
        let ended = state.end("cancelled")
        #expect(ended?.waiters.count == 1)
        let lateAnswerSettles = state.answer()
        #expect(lateAnswerSettles == false, "the late answer is not settled: its effects must not happen")
        #expect(state.outcome == "cancelled")
    }

    @Test func aCancellationWhileSettlingChangesNothing() {
        var state = State()
        _ = state.add(told.waiter("a"))
        _ = state.start()
        let settles = state.answer()
        #expect(settles)
        let cancelling = state.end("cancelled")
        #expect(cancelling == nil, "settling is the commit point")
        let (waiters, _) = state.settled("ok")
        #expect(waiters.count == 1)
        #expect(state.outcome == "ok")
    }

    @Test func aCancellationBeforeTheStartMeansTheWorkNeverStarts() {
        var state = State()
        let cancelling = state.end("cancelled")
        #expect(cancelling != nil)
        let started = state.start()
        #expect(!started)
        let keepsWork = state.attach(.uncancellable)
        #expect(keepsWork == false, "work attached after the end is stopped at once")
    }

    @Test func workThatAnsweredBeforeItsStopperArrivedNeedsNoStopping() {
        var state = State()
        _ = state.start()
        let keepsWork = state.answer()
        #expect(keepsWork)
        _ = state.settled("ok")
        let settles = state.attach(.uncancellable)
        #expect(settles, "nothing to stop: the answer came inside send")
    }

    @Test func theLastWaiterLeavingEndsAnExchangeThatEndsWhenAbandoned() {
        var state = State(endsWhenAbandoned: true)
        guard case let .waiting(first) = state.add(told.waiter("a")),
            case let .waiting(second) = state.add(told.waiter("b"))
        else { Issue.record("both should wait"); return }
        _ = state.start()
        let one = state.remove(first, abandoned: "abandoned")
        #expect(one.waiter != nil && !state.isFinished, "another waiter still waits")
        let two = state.remove(second, abandoned: "abandoned")
        #expect(two.waiter != nil && state.isFinished, "nobody waits: the exchange ends")
        let settles = state.answer()
        #expect(settles == false)
    }

    @Test func leavingDoesNotEndAnExchangeThatOutlivesItsWaiters() {
        var state = State()
        guard case let .waiting(id) = state.add(told.waiter("a")) else { return }
        _ = state.start()
        _ = state.remove(id, abandoned: "abandoned")
        #expect(!state.isFinished)
        let settles = state.answer()
        #expect(settles)
    }
}
