import Foundation

/// A one-shot timer that can be called off, freeing its closure at once (`asyncAfter` would hold it until the
/// deadline, however long before that the work it guards ended). Its owner keeps it: a deadline let go of
/// is called off.
///
/// Deadlines of ``sweptFrom`` seconds or more — the default deadline every buffered request gets — share one
/// timer that looks at them every ``sweepInterval``: a timer of their own would cost each request a couple of
/// microseconds and a kernel timer, for a deadline that nearly never passes. Shorter ones, set by hand, get a
/// timer of their own and fire on time.
final class Deadline: @unchecked Sendable {
    // DispatchSourceTimer is thread-safe (cancel may race the handler); it is not annotated Sendable.
    private enum Timer {
        case own(any DispatchSourceTimer)
        case swept(Int)
    }

    private let timer: Timer

    /// Deadlines this long or longer are swept, at most ``sweepInterval`` late (a third of a percent of them).
    static let sweptFrom: TimeInterval = 30
    static let sweepInterval: TimeInterval = 0.1

    /// Runs `action` on a global queue after `seconds`, unless cancelled first. `swept` chooses the timer
    /// (for tests); by default, deadlines of ``sweptFrom`` seconds or more are swept.
    init(after seconds: TimeInterval, swept: Bool? = nil, _ action: @escaping @Sendable () -> Void) {
        if swept ?? (seconds >= Self.sweptFrom) {
            timer = .swept(DeadlineSweeper.shared.add(after: seconds, action))
            return
        }
        let own = DispatchSource.makeTimerSource(queue: .global())
        own.schedule(deadline: .now() + seconds)
        // The handler does not capture the timer: a fired one-shot timer then holds nothing but `action`
        // until the owner lets go of the deadline.
        own.setEventHandler(handler: action)
        own.activate()
        timer = .own(own)
    }

    /// Calls the deadline off; the action does not run unless it has started already.
    func cancel() {
        switch timer {
        case let .own(timer): timer.cancel()
        case let .swept(id): DeadlineSweeper.shared.remove(id)
        }
    }

    deinit { cancel() }
}

/// The long deadlines of the process, looked at together by one timer. The timer runs while there are any, and
/// a second more: requests sent one after another, each with its deadline, start it once.
final class DeadlineSweeper: @unchecked Sendable {
    static let shared = DeadlineSweeper()

    private struct Entry {
        let due: UInt64
        let action: @Sendable () -> Void
    }

    private let lock = NSLock()
    private var entries: [Int: Entry] = [:]
    private var nextID = 0
    /// Runs while there are entries, and ``idleSweeps`` sweeps after; under `lock`.
    private var timer: (any DispatchSourceTimer)?
    private var sweepsWithoutEntries = 0
    private static let idleSweeps = Int(1 / Deadline.sweepInterval)

    func add(after seconds: TimeInterval, _ action: @escaping @Sendable () -> Void) -> Int {
        let due = DispatchTime.now().uptimeNanoseconds + UInt64(min(seconds, .longestTimeout) * 1e9)
        return lock.withLock {
            nextID += 1
            entries[nextID] = Entry(due: due, action: action)
            if timer == nil { timer = startTimer() }
            return nextID
        }
    }

    /// The deadlines waiting, and whether the timer runs (for tests).
    var state: (waiting: Int, timerRuns: Bool) { lock.withLock { (entries.count, timer != nil) } }

    func remove(_ id: Int) {
        // The action is let go of after the lock: releasing it may release what it holds.
        _ = lock.withLock { entries.removeValue(forKey: id) }
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
        let due = lock.withLock { () -> [Entry] in
            var due: [Entry] = []
            for (id, entry) in entries where entry.due <= now {
                due.append(entry)
                entries[id] = nil
            }
            sweepsWithoutEntries = entries.isEmpty ? sweepsWithoutEntries + 1 : 0
            if sweepsWithoutEntries > Self.idleSweeps, let timer {
                timer.cancel()
                self.timer = nil
                sweepsWithoutEntries = 0
            }
            return due
        }
        for entry in due { entry.action() }
    }
}
