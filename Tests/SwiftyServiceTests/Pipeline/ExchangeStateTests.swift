import Foundation
import Testing

@testable import SwiftyService

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The exchange's states alone, without threads or a network: which event wins, what each one asks for,
/// with a head phase and a body that may follow it.
@Suite struct ExchangeStateTests {
    typealias State = ExchangeState<String, Body>

    /// A body still arriving, as the state machine sees one: something to stop.
    final class Body: Sendable {}

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

    /// A deadline that never fires within a test.
    static func farDeadline() -> Deadline { Deadline(after: 3600) {} }

    @Test func aWholeAnswerSettlesOnceAndEveryWaiterIsToldInOrder() {
        var state = State()
        guard case .waiting = state.add(told.waiter("a")) else { Issue.record("a should wait"); return }
        guard case .send = state.start() else { Issue.record("the work starts"); return }
        guard case .skip = state.start() else { Issue.record("the work starts once"); return }
        guard case .waiting = state.add(told.waiter("b")) else { Issue.record("b should wait"); return }
        guard case .settle = state.head() else { Issue.record("the head settles"); return }
        guard case .discard = state.head() else { Issue.record("a second head is discarded"); return }
        guard case let .finish(waiters, _) = state.settled("ok", body: nil) else {
            Issue.record("a whole answer finishes the exchange"); return
        }
        waiters.tell("ok")
        #expect(told.all == ["a:ok", "b:ok"])
        #expect(state.outcome == "ok" && state.isFinished)
        guard case let .decided(outcome) = state.add(told.waiter("late")) else {
            Issue.record("a late waiter gets the outcome at once"); return
        }
        #expect(outcome == "ok")
    }

    @Test func aCancellationBeforeTheHeadWinsAndTheHeadIsDiscarded() {
        var state = State()
        _ = state.add(told.waiter("a"))
        _ = state.start()
        guard case let .fail(waiters, _, _) = state.end("cancelled") else {
            Issue.record("the waiters hear the cancellation"); return
        }
        #expect(waiters.count == 1)
        guard case .discard = state.head() else {
            Issue.record("the late head is not settled: its effects must not happen"); return
        }
        #expect(state.outcome == "cancelled")
    }

    @Test func aTimeoutBeforeTheHeadStopsTheWorkAndCallsNothingOffTwice() {
        var state = State()
        let work = BackendTask {}
        _ = state.start()
        guard case .keep = state.attach(work) else { Issue.record("the work's stopper is kept"); return }
        guard case .keep = state.keep(Self.farDeadline()) else { Issue.record("the deadline is kept"); return }
        guard case let .fail(_, stopWork, deadline) = state.end("timed out") else {
            Issue.record("the deadline ends the exchange"); return
        }
        #expect(stopWork != nil, "the work in flight is stopped")
        #expect(deadline != nil, "the deadline is called off (it fired; cancelling it is harmless)")
        guard case .none = state.end("cancelled") else { Issue.record("ended once"); return }
        guard case .discard = state.head() else { Issue.record("the late head is discarded"); return }
    }

    @Test func aCancellationWhileAWholeAnswerSettlesChangesNothing() {
        var state = State()
        _ = state.add(told.waiter("a"))
        _ = state.start()
        _ = state.head()
        guard case .none = state.end("cancelled") else { Issue.record("the head is the commit point"); return }
        guard case let .finish(waiters, _) = state.settled("ok", body: nil) else {
            Issue.record("the answer is the outcome"); return
        }
        #expect(waiters.count == 1)
        #expect(state.outcome == "ok")
    }

    @Test func aCancellationWhileAStreamedHeadSettlesStopsItsBodyAtOnce() {
        var state = State()
        _ = state.add(told.waiter("a"))
        _ = state.start()
        _ = state.head()
        guard case .none = state.end("cancelled") else { Issue.record("the head is the commit point"); return }
        guard case let .stream(waiters, stopBody) = state.settled("head", body: Body()) else {
            Issue.record("the head goes to its waiters"); return
        }
        #expect(waiters.count == 1 && stopBody == "cancelled", "the body that follows is stopped with it")
        #expect(state.isFinished, "nothing is left to stop later")
    }

    @Test func aCancellationDuringTheBodyStopsTheBodyAndTellsNoWaiterAgain() {
        var state = State()
        let body = Body()
        _ = state.add(told.waiter("a"))
        _ = state.start()
        _ = state.keep(Self.farDeadline())
        _ = state.head()
        guard case .stream(_, nil) = state.settled("head", body: body) else {
            Issue.record("the body flows on"); return
        }
        #expect(state.isDecided && !state.isFinished)
        guard case let .stopBody(stopped, deadline) = state.end("cancelled") else {
            Issue.record("a cancellation stops the body"); return
        }
        #expect(stopped === body && deadline != nil)
        #expect(state.outcome == "head", "the waiters had the head: the outcome stays")
        guard case .none = state.bodyEnded() else { Issue.record("the body's end after the stop is nothing new"); return }
    }

    @Test func aBodyThatEndsBeforeACancellationLeavesNothingToStop() {
        var state = State()
        _ = state.start()
        _ = state.keep(Self.farDeadline())
        _ = state.head()
        _ = state.settled("head", body: Body())
        guard case let .finish(deadline) = state.bodyEnded() else { Issue.record("the body's end finishes"); return }
        #expect(deadline != nil, "the call's deadline is called off with the body's end")
        guard case .none = state.end("cancelled") else { Issue.record("nothing is left to cancel"); return }
        guard case .callOff = state.keep(Self.farDeadline()) else {
            Issue.record("a deadline after the end is called off at once"); return
        }
    }

    @Test func aTimeoutDuringTheBodyStopsIt() {
        var state = State()
        let body = Body()
        _ = state.start()
        _ = state.head()
        _ = state.settled("head", body: body)
        guard case let .stopBody(stopped, _) = state.end("timed out") else {
            Issue.record("the deadline reaches the body"); return
        }
        #expect(stopped === body)
    }

    @Test func aCancellationBeforeTheStartMeansTheWorkNeverStarts() {
        var state = State()
        guard case .fail = state.end("cancelled") else { Issue.record("ended"); return }
        guard case .skip = state.start() else { Issue.record("it never starts"); return }
        guard case .stopNow = state.attach(.uncancellable) else {
            Issue.record("work attached after the end is stopped at once"); return
        }
    }

    @Test func workThatAnsweredBeforeItsStopperArrivedNeedsNoStopping() {
        var state = State()
        _ = state.start()
        _ = state.head()
        _ = state.settled("ok", body: nil)
        guard case .drop = state.attach(.uncancellable) else {
            Issue.record("nothing to stop: the answer came inside send"); return
        }
    }

    @Test func laterWaitersGetWhatTheOwnerKeepsOfAStreamedOutcome() {
        var state = State()
        _ = state.start()
        _ = state.head()
        _ = state.settled("head with its body's owner", body: Body(), keeping: "head")
        guard case let .decided(outcome) = state.add(told.waiter("late")) else { Issue.record("decided"); return }
        #expect(outcome == "head")
    }

    @Test func theLastWaiterLeavingEndsAnExchangeThatEndsWhenAbandoned() {
        var state = State(endsWhenAbandoned: true)
        guard case let .waiting(first) = state.add(told.waiter("a")),
            case let .waiting(second) = state.add(told.waiter("b"))
        else { Issue.record("both should wait"); return }
        _ = state.start()
        let one = state.remove(first, abandoned: "abandoned")
        #expect(one.waiter != nil && !state.isFinished, "another waiter still waits")
        guard case .none = one.ended else { Issue.record("not ended yet"); return }
        let two = state.remove(second, abandoned: "abandoned")
        #expect(two.waiter != nil && state.isFinished, "nobody waits: the exchange ends")
        guard case .fail = two.ended else { Issue.record("its work is stopped"); return }
        guard case .discard = state.head() else { Issue.record("the head after is discarded"); return }
    }

    @Test func leavingDoesNotEndAnExchangeThatOutlivesItsWaiters() {
        var state = State()
        guard case let .waiting(id) = state.add(told.waiter("a")) else { return }
        _ = state.start()
        _ = state.remove(id, abandoned: "abandoned")
        #expect(!state.isFinished)
        guard case .settle = state.head() else { Issue.record("the head still settles"); return }
    }

    // MARK: The waiter whose task starts the work

    @Test func anAnswerWhileItsTaskStartsTheWorkIsKeptForThatTaskToGiveItself() async {
        var state = State()
        let outcome = await withUnsafeContinuation { (task: UnsafeContinuation<String, Never>) in
            guard case .starting = state.addStarting(task) else {
                Issue.record("the first task to wait starts the work")
                return task.resume(returning: "wrong")
            }
            // The work answers before the task has finished starting it (a server on the same machine).
            _ = state.start()
            _ = state.head()
            guard case let .finish(waiters, _) = state.settled("ok", body: nil) else {
                Issue.record("a whole answer finishes")
                return task.resume(returning: "wrong")
            }
            #expect(waiters.count == 0, "the answering thread resumes nobody")
            task.resume(returning: state.sealStarting() ?? "not kept")
        }
        #expect(outcome == "ok")
        #expect(state.sealStarting() == nil, "given once")
    }

    @Test func aTaskThatHasStartedTheWorkBeforeTheAnswerIsResumedByTheAnsweringThread() async {
        var state = State()
        var told = 0
        let outcome = await withUnsafeContinuation { (task: UnsafeContinuation<String, Never>) in
            _ = state.addStarting(task)
            _ = state.start()
            #expect(state.sealStarting() == nil, "nothing came while it started")
            _ = state.head()
            guard case let .finish(waiters, _) = state.settled("ok", body: nil) else {
                Issue.record("a whole answer finishes")
                return task.resume(returning: "wrong")
            }
            told = waiters.count
            waiters.tell("ok")
        }
        #expect(outcome == "ok" && told == 1)
    }

    @Test func aCancellationWhileItsTaskStartsTheWorkIsKeptForThatTask() async {
        var state = State()
        let outcome = await withUnsafeContinuation { (task: UnsafeContinuation<String, Never>) in
            _ = state.addStarting(task)
            _ = state.start()
            guard case let .fail(waiters, _, _) = state.end("cancelled") else {
                Issue.record("a cancellation before the head ends the exchange")
                return task.resume(returning: "wrong")
            }
            #expect(waiters.count == 0, "the cancelling thread resumes nobody")
            task.resume(returning: state.sealStarting() ?? "not kept")
        }
        #expect(outcome == "cancelled")
        guard case let .decided(late) = state.add(told.waiter("late")) else {
            Issue.record("a waiter after the end gets the outcome at once"); return
        }
        #expect(late == "cancelled")
    }
}

/// A streamed body's buffer alone: the head, back-pressure, the reader, the end, and the races between them.
@Suite struct StreamSinkStateTests {
    typealias State = StreamSinkState<String>

    final class Heard: @unchecked Sendable {
        private let lock = NSLock()
        private var values: [String] = []
        var all: [String] { lock.withLock { values } }
        func add(_ value: String) { lock.withLock { values.append(value) } }
    }

    let heard = Heard()

    func state(capacity: Int = 8) -> State {
        State(capacity: capacity) { [heard] result in
            switch result {
            case let .success(head): heard.add("head \(head.statusCode)")
            case let .failure(error): heard.add("failed \(error)")
            }
        }
    }

    static let head = Response(request: URLRequest(url: URL(string: "http://h/")!), statusCode: 200)

    func chunk(_ text: String) -> Data { Data(text.utf8) }

    @Test func theHeadIsToldOnceAndChunksReachTheReaderInOrder() {
        var state = state()
        state.head()?(.success(Self.head))
        #expect(state.head() == nil, "a second head goes nowhere")
        guard case .taken(nil) = state.offer(chunk("ab"), force: false),
            case .taken(nil) = state.offer(chunk("cd"), force: false)
        else { Issue.record("both chunks are buffered"); return }
        guard case let .chunk(first, _) = state.next(), case let .chunk(second, _) = state.next()
        else { Issue.record("the reader takes them"); return }
        #expect(first == chunk("ab") && second == chunk("cd"))
        let ended = state.end(nil, stopping: false)
        #expect(ended?.failure == nil && ended?.bytes == 4)
        guard case .wait = state.next(), state.wait("reader") else {
            Issue.record("while the taps hear of the end, a reader waits"); return
        }
        #expect(state.endAnnounced() == "reader", "and is handed back to be woken once they have")
        guard case .end(.success) = state.next() else { Issue.record("then, woken, it reads the end"); return }
        #expect(heard.all == ["head 200"])
    }

    @Test func aFullBufferRefusesUntilTheReaderHasTakenHalf() {
        var state = state(capacity: 8)
        _ = state.head()
        state.whenDrained { [heard] in heard.add("drained") }
        for piece in ["1234", "5678"] { _ = state.offer(chunk(piece), force: false) }
        guard case .refused = state.offer(chunk("9"), force: false) else { Issue.record("full: refused"); return }
        guard case let .chunk(_, drained) = state.next() else { Issue.record("a chunk"); return }
        drained?()
        #expect(heard.all == ["drained"], "half taken: the producer may offer again")
        guard case .taken = state.offer(chunk("9"), force: false) else { Issue.record("taken now"); return }
    }

    @Test func aWaitingReaderIsWokenForTheNextChunkHoweverFullTheBuffer() {
        var state = state(capacity: 1)
        _ = state.head()
        guard case .wait = state.next(), state.wait("reader") else { Issue.record("nothing yet: it waits"); return }
        guard case .busy = state.next(), !state.wait("second") else {
            Issue.record("a second reader is told, and not kept"); return
        }
        guard case .taken(waking: "reader") = state.offer(chunk("abc"), force: false) else {
            Issue.record("the waiting reader is woken"); return
        }
        let stillWaiting = state.hasReader
        #expect(!stillWaiting, "a reader is woken once")
        guard case let .chunk(taken, _) = state.next() else { Issue.record("and takes the chunk"); return }
        #expect(taken == chunk("abc"))
    }

    @Test func aReaderIsNotKeptWaitingWhenSomethingCameBetweenItsLookAndItsWait() {
        var state = state()
        _ = state.head()
        guard case .wait = state.next() else { Issue.record("nothing yet"); return }
        _ = state.offer(chunk("a"), force: false)
        let keptWithAChunkThere = state.wait("reader")
        #expect(!keptWithAChunkThere, "a chunk came meanwhile: ask again")
        _ = state.next()
        _ = state.end(nil, stopping: false)
        let keptWhileTheEndIsTold = state.wait("reader")
        #expect(keptWhileTheEndIsTold, "the end is still being told to the others: it waits")
        #expect(state.endAnnounced() == "reader")
        let keptAfter = state.wait("reader")
        #expect(!keptAfter, "the end is there now: ask again")
    }

    @Test func aReaderThatGoesAwayWhileTheBodyFlowsStopsTheTransferAndDropsWhatIsBuffered() {
        var state = state()
        _ = state.head()
        _ = state.attach(BackendTask {})
        _ = state.offer(chunk("held"), force: false)
        let ended = state.end(.cancelled(URLRequest(url: URL(string: "http://h/")!)), stopping: true)
        #expect(ended?.task != nil, "the transfer is stopped")
        #expect(state.endAnnounced() == nil)
        guard case .swallowed = state.offer(chunk("late"), force: false) else {
            Issue.record("what the producer still sends goes nowhere"); return
        }
        guard case .end(.failure(.cancelled)) = state.next() else {
            Issue.record("nothing buffered is handed out after the stop"); return
        }
        let again = state.end(nil, stopping: false)
        #expect(again == nil, "the body ends once")
    }

    @Test func aFailureAfterTheHeadStillHandsOverWhatCameBeforeIt() {
        var state = state()
        _ = state.head()
        _ = state.offer(chunk("part"), force: false)
        let ended = state.end(.timedOut(URLRequest(url: URL(string: "http://h/")!)), stopping: false)
        #expect(ended?.task == nil, "the producer failed: it has nothing left to stop")
        _ = state.endAnnounced()
        guard case .chunk = state.next(), case .end(.failure(.timedOut)) = state.next() else {
            Issue.record("the part, then the failure"); return
        }
    }

    @Test func anEndBeforeTheHeadIsTheHeadsFailure() {
        var state = state()
        let ended = state.end(.cancelled(URLRequest(url: URL(string: "http://h/")!)), stopping: true)
        #expect(ended?.listener != nil, "the head's listener hears it")
        #expect(state.head() == nil)
    }

    @Test func aTapAddedAfterChunksWereBufferedSeesThemAndOneAddedAfterTheReaderStartedDoesNot() {
        var state = state()
        _ = state.head()
        _ = state.offer(chunk("a"), force: false)
        guard case let .after(missed) = state.addTap({ _ in }) else { Issue.record("it catches up"); return }
        #expect(missed == [chunk("a")])
        _ = state.next()
        _ = state.offer(chunk("b"), force: false)
        guard case .tooLate = state.addTap({ _ in }) else {
            Issue.record("the reader has taken bytes it cannot see"); return
        }
    }

    @Test func aTransferAttachedAfterTheStopIsStoppedAtOnce() {
        var state = state()
        _ = state.end(.cancelled(URLRequest(url: URL(string: "http://h/")!)), stopping: true)
        let stopNow = state.attach(BackendTask {})
        #expect(stopNow)
        var finished = self.state()
        _ = finished.head()
        _ = finished.end(nil, stopping: false)
        let stopFinished = finished.attach(BackendTask {})
        #expect(!stopFinished, "a body that came whole has nothing to stop")
    }
}
