/// The life of one exchange as a value: which events may happen in which phase, and what each one asks the
/// owner to do. Pure: no locks, no calls out, no clocks; ``Exchange`` holds it under a lock and carries out
/// the actions after letting go of the lock.
///
/// ```
/// idle ──start──▶ sending ──head──▶ headReceived ──settled──▶ finished
///   │                │                   │                        ▲
///   │                │                   └──settled, with a body──▶ streaming ──body ended──┘
///   └──cancel/time out/abandon─┴──────────────────────────────────────────────────────────────┘
/// ```
/// `headReceived` is the commit point: from there on the head is the outcome, and a cancellation or a
/// timeout can only stop the body that follows it (at once, if one follows). A head that comes after the
/// exchange ended is discarded. An exchange keeps a body (`streaming`) only when it is the call's own, whose
/// reader reads it; an attempt's or a shared flight's hands it on with the head.
struct ExchangeState<Outcome: Sendable, Body> {
    enum Phase {
        case idle
        /// The work is under way; what stops it, once the work has said.
        case sending(work: BackendTask?)
        /// The head came and is the outcome; its effects are being run. A cancellation or timeout that came
        /// meanwhile is kept for the body (`stopBody`).
        case headReceived
        /// The head was told; the body flows to its reader until it ends.
        case streaming(Body)
        case finished
    }

    typealias Waiter = @Sendable (Outcome) -> Void

    /// One party waiting for the outcome: a function to call, or an awaiting task to resume (which spares
    /// the awaited call a closure).
    enum Party {
        case call(Waiter)
        case resume(UnsafeContinuation<Outcome, Never>)

        func tell(_ outcome: Outcome) {
            switch self {
            case let .call(waiter): waiter(outcome)
            case let .resume(task): task.resume(returning: outcome)
            }
        }
    }

    /// The waiters to tell an outcome. Most exchanges have one: it comes without an array.
    struct Waiters {
        private(set) var first: Party?
        private(set) var others: [Party] = []

        init(first: Party? = nil, others: [Party] = []) {
            self.first = first
            self.others = others
        }

        var count: Int { (first == nil ? 0 : 1) + others.count }

        /// Tells each waiter `outcome`, in the order they came.
        func tell(_ outcome: Outcome) {
            first?.tell(outcome)
            for waiter in others { waiter.tell(outcome) }
        }
    }

    private(set) var phase = Phase.idle
    /// The outcome, once decided. Kept apart from the phase: a phase that carried it would be copied with it
    /// at every event.
    private(set) var outcome: Outcome?
    /// A cancellation or timeout that came while the head was being settled: it stops the body that follows.
    /// Kept apart from the phase for the same reason.
    private var stopBody: Outcome?
    private var deadline: Deadline?
    /// The waiter of a task that is still starting the work (``addStarting(_:)``), apart from the others.
    private var starting: Starting?
    /// Most exchanges have one waiter: it is kept inline, so that they allocate no table.
    private var firstWaiter: (id: Int, waiter: Party)?
    private var otherWaiters: [(id: Int, waiter: Party)] = []
    private var nextWaiter = 0
    /// Set when the exchange ended without its head: cancelled, timed out or abandoned.
    private var endedEarly = false
    /// Whether the exchange ends when its last waiter leaves (a shared flight nobody waits for any more).
    let endsWhenAbandoned: Bool

    init(endsWhenAbandoned: Bool = false) {
        self.endsWhenAbandoned = endsWhenAbandoned
    }

    /// Whether the exchange is over, body and all.
    var isFinished: Bool {
        if case .finished = phase { return true }
        return false
    }

    /// Whether the outcome is decided: the head came (its body may still flow), or the exchange ended.
    var isDecided: Bool {
        switch phase {
        case .idle, .sending: false
        case .headReceived, .streaming, .finished: true
        }
    }

    // MARK: The work's events

    enum StartAction {
        /// Start the work.
        case send
        /// Started already, or over: do nothing.
        case skip
    }

    mutating func start() -> StartAction {
        guard case .idle = phase else { return .skip }
        phase = .sending(work: nil)
        return .send
    }

    enum AttachAction {
        /// Kept: a cancellation stops it.
        case keep
        /// The exchange ended meanwhile: stop the work now.
        case stopNow
        /// The work answered before its stopper came back: nothing to stop.
        case drop
    }

    /// The work's stopper, once the work has started.
    mutating func attach(_ work: BackendTask) -> AttachAction {
        switch phase {
        case .sending:
            phase = .sending(work: work)
            return .keep
        case .idle, .headReceived, .streaming, .finished:
            return endedEarly ? .stopNow : .drop
        }
    }

    enum DeadlineAction {
        case keep
        /// The exchange is over: call the deadline off now.
        case callOff
    }

    mutating func keep(_ deadline: Deadline) -> DeadlineAction {
        if isFinished { return .callOff }
        self.deadline = deadline
        return .keep
    }

    enum HeadAction {
        /// It is the outcome: settle it.
        case settle
        /// The exchange ended first: discard it, and what it holds.
        case discard
    }

    /// The work answered with the head (and perhaps the whole body).
    mutating func head() -> HeadAction {
        guard case .sending = phase else { return .discard }
        phase = .headReceived
        return .settle
    }

    enum SettledAction {
        /// The exchange is over: tell the waiters, call the deadline off.
        case finish(Waiters, callOff: Deadline?)
        /// Tell the waiters the head; the body flows on, kept until it ends. When a cancellation or timeout
        /// came while settling, the body is stopped at once with it.
        case stream(Waiters, stopBody: Outcome?)
    }

    /// The outcome is ready; `body`, when the exchange keeps a body that is still arriving. Later waiters
    /// get `kept` (the outcome, unless the owner keeps less of it).
    mutating func settled(_ outcome: Outcome, body: Body?, keeping kept: Outcome? = nil) -> SettledAction {
        guard case .headReceived = phase else { return .finish(Waiters(), callOff: nil) }
        self.outcome = kept ?? outcome
        answerStarting(with: outcome)
        let stop = stopBody
        stopBody = nil
        let told = takeWaiters()
        guard let body else {
            phase = .finished
            return .finish(told, callOff: takeDeadline())
        }
        phase = stop == nil ? .streaming(body) : .finished
        return .stream(told, stopBody: stop)
    }

    enum BodyEndAction {
        /// The exchange is over: call its deadline off.
        case finish(callOff: Deadline?)
        case none
    }

    /// The body kept ended, whole or not.
    mutating func bodyEnded() -> BodyEndAction {
        guard case .streaming = phase else { return .none }
        phase = .finished
        return .finish(callOff: takeDeadline())
    }

    // MARK: Endings from outside

    enum EndAction {
        case none
        /// Before the head: the waiters hear `outcome`, the work stops, the deadline is called off.
        case fail(Waiters, stopWork: BackendTask?, callOff: Deadline?)
        /// During the body: it stops with `outcome`; the deadline is called off.
        case stopBody(Body, callOff: Deadline?)
    }

    /// Ends the exchange with `outcome` (cancelled, timed out, abandoned), whatever phase it is in.
    mutating func end(_ outcome: Outcome) -> EndAction {
        switch phase {
        case .idle, .sending:
            var work: BackendTask?
            if case let .sending(running) = phase { work = running }
            endedEarly = true
            phase = .finished
            self.outcome = outcome
            answerStarting(with: outcome)
            return .fail(takeWaiters(), stopWork: work, callOff: takeDeadline())
        case .headReceived:
            if stopBody == nil { stopBody = outcome }
            return .none
        case let .streaming(body):
            phase = .finished
            return .stopBody(body, callOff: takeDeadline())
        case .finished:
            return .none
        }
    }

    // MARK: Waiters

    /// Where a new waiter stands.
    enum Joined {
        /// It waits, under this number.
        case waiting(Int)
        /// The outcome is decided: it gets this at once.
        case decided(Outcome)
    }

    /// A new waiter: its number, or the outcome to give it at once.
    mutating func add(_ waiter: @escaping Waiter) -> Joined {
        add(.call(waiter))
    }

    /// A new waiter of either kind: its number, or the outcome to give it at once.
    mutating func add(_ party: Party) -> Joined {
        if let outcome { return .decided(outcome) }
        nextWaiter += 1
        if firstWaiter == nil {
            firstWaiter = (nextWaiter, party)
        } else {
            otherWaiters.append((nextWaiter, party))
        }
        return .waiting(nextWaiter)
    }

    private var hasWaiters: Bool { firstWaiter != nil || !otherWaiters.isEmpty || starting != nil }

    // MARK: The waiter that starts the work

    /// A task's waiter while that task is still starting the work: an outcome decided meanwhile is kept for
    /// it, and the task gives it to itself once it has started the work (``sealStarting()``), rather than the
    /// answering thread resuming a task that has not suspended yet — an ordering of the runtime's that
    /// ThreadSanitizer does not see, and reported as a race on the task's frame.
    enum Starting {
        case open(UnsafeContinuation<Outcome, Never>)
        /// The outcome came while the task was starting the work.
        case answered(Outcome)
    }

    /// Where a task that goes on to start the work stands.
    enum StartingJoined {
        /// The outcome is decided: the task gets this at once.
        case decided(Outcome)
        /// Kept as the starting waiter, until ``sealStarting()``.
        case starting
        /// Another task is starting it: this one waits as any other waiter.
        case waiting
    }

    /// A waiter whose task goes on to start the work.
    mutating func addStarting(_ task: UnsafeContinuation<Outcome, Never>) -> StartingJoined {
        if let outcome { return .decided(outcome) }
        guard starting == nil else {
            _ = add(.resume(task))
            return .waiting
        }
        starting = .open(task)
        return .starting
    }

    /// The starting task has started the work: the outcome when it came meanwhile, for that task to give
    /// itself; `nil` when it has not, and the task now waits as any other waiter.
    mutating func sealStarting() -> Outcome? {
        defer { starting = nil }
        switch starting {
        case let .answered(outcome)?:
            return outcome
        case let .open(task)?:
            _ = add(.resume(task))
            return nil
        case nil:
            return nil
        }
    }

    /// The outcome, for a starting waiter that has not sealed yet.
    private mutating func answerStarting(with outcome: Outcome) {
        if case .open = starting { starting = .answered(outcome) }
    }

    /// A waiter leaves before the outcome: it alone is to be told it left. When it was the last one and the
    /// exchange ends when abandoned, the exchange ends too (with `abandoned`, which no waiter hears).
    mutating func remove(_ id: Int, abandoned: Outcome) -> (waiter: Party?, ended: EndAction) {
        let waiter: Party
        if let first = firstWaiter, first.id == id {
            waiter = first.waiter
            firstWaiter = nil
        } else if let index = otherWaiters.firstIndex(where: { $0.id == id }) {
            waiter = otherWaiters.remove(at: index).waiter
        } else {
            return (nil, .none)
        }
        guard endsWhenAbandoned, !hasWaiters else { return (waiter, .none) }
        return (waiter, end(abandoned))
    }

    private mutating func takeWaiters() -> Waiters {
        defer {
            firstWaiter = nil
            otherWaiters = []
        }
        return Waiters(
            first: firstWaiter?.waiter, others: otherWaiters.isEmpty ? [] : otherWaiters.map(\.waiter))
    }

    private mutating func takeDeadline() -> Deadline? {
        defer { deadline = nil }
        return deadline
    }
}
