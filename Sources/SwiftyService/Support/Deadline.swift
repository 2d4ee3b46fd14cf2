import Foundation

/// What a deadline ends when it passes; the deadline holds it until then, or until it is called off.
protocol DeadlineTarget: AnyObject, Sendable {
    /// The deadline of `seconds` passed before it was called off.
    func deadlinePassed(after seconds: TimeInterval)
}

/// A one-shot timer that can be called off, letting go of what it would end at once (`asyncAfter` would
/// hold it until the deadline, however long before that the work it guards ended). Its owner calls it off
/// when the work ends: a value, it does not call itself off when let go of.
///
/// Deadlines of ``sweptFrom`` seconds or more — the default deadline every buffered request gets — share one
/// timer that looks at them every ``sweepInterval``: a timer of their own would cost each request a couple of
/// microseconds and a kernel timer, for a deadline that nearly never passes. Shorter ones, set by hand, get a
/// timer of their own and fire on time.
struct Deadline: @unchecked Sendable {
    // DispatchSourceTimer is thread-safe (cancel may race the handler); it is not annotated Sendable.
    private enum Timer {
        case own(any DispatchSourceTimer)
        case swept(DeadlineSweeper.Ticket)
    }

    private let timer: Timer

    /// Deadlines this long or longer are swept, at most ``sweepInterval`` late (a third of a percent of them).
    static let sweptFrom: TimeInterval = 30
    static let sweepInterval: TimeInterval = 0.1

    /// Tells `target` after `seconds`, unless called off first. A swept deadline costs no allocation.
    init(after seconds: TimeInterval, ending target: some DeadlineTarget) {
        if seconds >= Self.sweptFrom {
            timer = .swept(DeadlineSweeper.shared.add(after: seconds, target))
        } else {
            timer = .own(Self.ownTimer(after: seconds) { target.deadlinePassed(after: seconds) })
        }
    }

    /// Runs `action` on a global queue after `seconds`, unless called off first. `swept` chooses the timer
    /// (for tests); by default, deadlines of ``sweptFrom`` seconds or more are swept.
    init(after seconds: TimeInterval, swept: Bool? = nil, _ action: @escaping @Sendable () -> Void) {
        if swept ?? (seconds >= Self.sweptFrom) {
            timer = .swept(DeadlineSweeper.shared.add(after: seconds, Action(action)))
        } else {
            timer = .own(Self.ownTimer(after: seconds, action))
        }
    }

    private static func ownTimer(
        after seconds: TimeInterval, _ action: @escaping @Sendable () -> Void
    ) -> any DispatchSourceTimer {
        let own = DispatchSource.makeTimerSource(queue: .global())
        own.schedule(deadline: .now() + seconds)
        // The handler does not capture the timer: a fired one-shot timer then holds nothing but `action`
        // until it is called off.
        own.setEventHandler(handler: action)
        own.activate()
        return own
    }

    /// Calls the deadline off; what it would end is not told unless that has started already. Calling it off
    /// again does nothing.
    func cancel() {
        switch timer {
        case let .own(timer): timer.cancel()
        case let .swept(ticket): DeadlineSweeper.shared.remove(ticket)
        }
    }

    /// A closure as a deadline's target.
    private final class Action: DeadlineTarget {
        let action: @Sendable () -> Void
        init(_ action: @escaping @Sendable () -> Void) { self.action = action }
        func deadlinePassed(after seconds: TimeInterval) { action() }
    }
}

/// The long deadlines of the process, looked at together by one timer. The timer runs while there are any, and
/// a second more: requests sent one after another, each with its deadline, start it once.
///
/// The deadlines are kept in slots that are used again: adding one and calling it off hashes nothing and,
/// once the slots have grown to the most deadlines waiting at once, allocates nothing.
final class DeadlineSweeper: @unchecked Sendable {
    static let shared = DeadlineSweeper()

    /// A deadline's slot, and which use of the slot it is: a ticket of an earlier use calls off nothing.
    struct Ticket: Sendable {
        fileprivate let slot: Int
        fileprivate let use: UInt64
    }

    private struct Slot {
        var use: UInt64 = 0
        var due: UInt64 = 0
        var seconds: TimeInterval = 0
        var target: (any DeadlineTarget)?
    }

    private let lock = NSLock()
    private var slots: [Slot] = []
    private var freeSlots: [Int] = []
    private var uses: UInt64 = 0
    /// Runs while there are deadlines, and ``idleSweeps`` sweeps after; under `lock`.
    private var timer: (any DispatchSourceTimer)?
    private var sweepsWithoutEntries = 0
    private static let idleSweeps = Int(1 / Deadline.sweepInterval)

    func add(after seconds: TimeInterval, _ target: any DeadlineTarget) -> Ticket {
        let due = DispatchTime.now().uptimeNanoseconds + UInt64(min(seconds, .longestTimeout) * 1e9)
        return lock.withLock {
            uses += 1
            let slot = freeSlots.popLast() ?? slots.count
            if slot == slots.count { slots.append(Slot()) }
            slots[slot] = Slot(use: uses, due: due, seconds: seconds, target: target)
            if timer == nil { timer = startTimer() }
            return Ticket(slot: slot, use: uses)
        }
    }

    /// The deadlines waiting, and whether the timer runs (for tests).
    var state: (waiting: Int, timerRuns: Bool) {
        lock.withLock { (slots.count - freeSlots.count, timer != nil) }
    }

    func remove(_ ticket: Ticket) {
        // The target is let go of after the lock: releasing it may release what it holds.
        let target = lock.withLock { () -> (any DeadlineTarget)? in
            guard slots[ticket.slot].use == ticket.use, slots[ticket.slot].target != nil else { return nil }
            return free(ticket.slot)
        }
        withExtendedLifetime(target) {}
    }

    /// Empties a slot for another deadline; what its deadline would have ended. Under `lock`.
    private func free(_ slot: Int) -> (any DeadlineTarget)? {
        let target = slots[slot].target
        slots[slot].target = nil
        freeSlots.append(slot)
        return target
    }

    private func startTimer() -> any DispatchSourceTimer {
        let timer = DispatchSource.makeTimerSource(queue: .global())
        let nanoseconds = Int(Deadline.sweepInterval * 1e9)
        let interval = DispatchTimeInterval.nanoseconds(nanoseconds)
        timer.schedule(
            deadline: .now() + interval, repeating: interval, leeway: .nanoseconds(nanoseconds / 2))
        timer.setEventHandler { [weak self] in self?.sweep() }
        timer.activate()
        return timer
    }

    private func sweep() {
        let now = DispatchTime.now().uptimeNanoseconds
        let due = lock.withLock { () -> [(any DeadlineTarget, TimeInterval)] in
            var due: [(any DeadlineTarget, TimeInterval)] = []
            for slot in slots.indices where slots[slot].target != nil && slots[slot].due <= now {
                if let target = free(slot) { due.append((target, slots[slot].seconds)) }
            }
            sweepsWithoutEntries = slots.count == freeSlots.count ? sweepsWithoutEntries + 1 : 0
            if sweepsWithoutEntries > Self.idleSweeps, let timer {
                timer.cancel()
                self.timer = nil
                sweepsWithoutEntries = 0
            }
            return due
        }
        for (target, seconds) in due { target.deadlinePassed(after: seconds) }
    }
}
