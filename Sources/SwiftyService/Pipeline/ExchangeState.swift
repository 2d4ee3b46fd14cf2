/// The life of one exchange as a value: which events may happen in which phase, and what each one asks the
/// owner to do. Pure: no locks, no calls out, no clocks; ``Exchange`` holds it under a lock and carries out
/// the actions after letting go of the lock.
///
/// ```
/// idle ──start──▶ running ──answer──▶ settling ──settled──▶ finished
///   │                │                                         ▲
///   └──cancel/time out/abandon──────────────────────────────────┘
/// ```
/// `settling` is the commit point: from there on the answer is the outcome, and a cancellation changes
/// nothing. An answer that comes after the exchange finished is discarded.
struct ExchangeState<Outcome> {
    enum Phase {
        case idle
        case running
        case settling
        case finished
    }

    typealias Waiter = @Sendable (Outcome) -> Void

    /// The waiters to tell an outcome. Most exchanges have one: it comes without an array.
    struct Waiters {
        private(set) var first: Waiter?
        private(set) var others: [Waiter] = []

        init(first: Waiter? = nil, others: [Waiter] = []) {
            self.first = first
            self.others = others
        }

        var count: Int { (first == nil ? 0 : 1) + others.count }

        func forEach(_ body: (Waiter) -> Void) {
            if let first { body(first) }
            others.forEach(body)
        }

        /// Tells each waiter `outcome`, in the order they came.
        func tell(_ outcome: Outcome) {
            first?(outcome)
            for waiter in others { waiter(outcome) }
        }
    }

    private(set) var phase = Phase.idle
    /// The outcome, once finished. Kept apart from the phase: the phase is tested at every event, and a
    /// phase that carried the outcome would be copied with it each time.
    private(set) var outcome: Outcome?
    /// What stops the work in flight, once the work has said.
    private var work: BackendTask?
    private var deadline: Deadline?
    /// Most exchanges have one waiter: it is kept inline, so that they allocate no table.
    private var firstWaiter: (id: Int, waiter: Waiter)?
    private var otherWaiters: [(id: Int, waiter: Waiter)] = []
    private var nextWaiter = 0
    /// Set when the exchange ended without its answer: cancelled, timed out or abandoned.
    private var stopped = false
    /// Whether the exchange ends when its last waiter leaves (a shared flight nobody waits for any more).
    let endsWhenAbandoned: Bool

    init(endsWhenAbandoned: Bool = false) {
        self.endsWhenAbandoned = endsWhenAbandoned
    }

    var isFinished: Bool { phase == .finished }

    /// Whether the work may start: only from `idle`.
    mutating func start() -> Bool {
        guard phase == .idle else { return false }
        phase = .running
        return true
    }

    /// Keeps the work's stopper; `false` when the exchange ended without its answer and the work must be
    /// stopped now. (Work that answered before `send` returned has nothing left to stop.)
    mutating func attach(_ task: BackendTask) -> Bool {
        guard phase == .running else { return !stopped }
        work = task
        return true
    }

    /// Keeps the deadline; `false` when the exchange is over and the deadline must be called off now.
    mutating func keep(_ deadline: Deadline) -> Bool {
        guard !isFinished else { return false }
        self.deadline = deadline
        return true
    }

    /// The work answered. `true`: settle it, it is the outcome. `false`: the exchange ended first; discard it.
    mutating func answer() -> Bool {
        guard phase == .running else { return false }
        phase = .settling
        work = nil
        return true
    }

    /// The outcome is ready: the exchange is finished, and these waiters are told (and this deadline called off).
    mutating func settled(_ outcome: Outcome) -> (waiters: Waiters, deadline: Deadline?) {
        guard phase == .settling else { return (Waiters(), nil) }
        return finish(outcome)
    }

    /// Ends the exchange without its answer (cancelled, timed out): the waiters to tell, the work to stop,
    /// the deadline to call off; `nil` when it was settling or over already.
    mutating func end(_ outcome: Outcome) -> (waiters: Waiters, work: BackendTask?, deadline: Deadline?)? {
        switch phase {
        case .idle, .running:
            let task = work
            stopped = true
            let (waiters, deadline) = finish(outcome)
            return (waiters, task, deadline)
        case .settling, .finished:
            return nil
        }
    }

    private mutating func finish(_ outcome: Outcome) -> (waiters: Waiters, deadline: Deadline?) {
        phase = .finished
        self.outcome = outcome
        let told = Waiters(
            first: firstWaiter?.waiter, others: otherWaiters.isEmpty ? [] : otherWaiters.map(\.waiter))
        defer {
            firstWaiter = nil
            otherWaiters = []
            work = nil
            deadline = nil
        }
        return (told, deadline)
    }

    /// Where a new waiter stands.
    enum Joined {
        /// It waits, under this number.
        case waiting(Int)
        /// The exchange is over: it gets this outcome at once.
        case finished(Outcome)
    }

    /// A new waiter: its number, or the outcome to give it at once.
    mutating func add(_ waiter: @escaping Waiter) -> Joined {
        if let outcome { return .finished(outcome) }
        nextWaiter += 1
        if firstWaiter == nil {
            firstWaiter = (nextWaiter, waiter)
        } else {
            otherWaiters.append((nextWaiter, waiter))
        }
        return .waiting(nextWaiter)
    }

    private var hasWaiters: Bool { firstWaiter != nil || !otherWaiters.isEmpty }

    /// A waiter leaves before the outcome: it alone is to be told it left. When it was the last one and the
    /// exchange ends when abandoned, the exchange ends too (with `abandoned`, which no waiter hears) and its
    /// work is to be stopped.
    mutating func remove(_ id: Int, abandoned: Outcome) -> (
        waiter: Waiter?, work: BackendTask?, deadline: Deadline?
    ) {
        let waiter: Waiter
        if let first = firstWaiter, first.id == id {
            waiter = first.waiter
            firstWaiter = nil
        } else if let index = otherWaiters.firstIndex(where: { $0.id == id }) {
            waiter = otherWaiters.remove(at: index).waiter
        } else {
            return (nil, nil, nil)
        }
        guard endsWhenAbandoned, !hasWaiters, let ended = end(abandoned) else { return (waiter, nil, nil) }
        return (waiter, ended.work, ended.deadline)
    }
}
