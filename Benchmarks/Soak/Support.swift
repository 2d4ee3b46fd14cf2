import Foundation

/// A value behind a lock (the library has one of its own, but internal to it).
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value

    init(_ value: Value) { stored = value }

    var value: Value { lock.withLock { stored } }

    @discardableResult
    func withLock<T>(_ body: (inout Value) -> T) -> T { lock.withLock { body(&stored) } }
}

/// Live and created instances of whatever reports its birth and death here: the `Probe`s the soak hangs on
/// closures it hands to the library, and `TrackingBackend`s. One the library never lets go of stays alive.
final class LiveCounter: Sendable {
    private let counts = Locked((alive: 0, created: 0))

    var alive: Int { counts.value.alive }
    var created: Int { counts.value.created }

    func probe() -> Probe { Probe(self) }

    func born() {
        counts.withLock {
            $0.alive += 1
            $0.created += 1
        }
    }

    func died() { counts.withLock { $0.alive -= 1 } }
}

/// An object a `LiveCounter` counts while it lives; a closure that calls `touch()` keeps it alive.
final class Probe: Sendable {
    private let counter: LiveCounter

    init(_ counter: LiveCounter) {
        self.counter = counter
        counter.born()
    }

    deinit { counter.died() }

    func touch() {}
}

/// Weak references to objects of any class, to see that they went away.
final class WeakSet<Object: AnyObject>: Sendable {
    private final class Box {
        weak var object: Object?
        init(_ object: Object) { self.object = object }
    }
    private let boxes = Locked<[Box]>([])

    func add(_ object: Object) { boxes.withLock { $0.append(Box(object)) } }
    var added: Int { boxes.value.count }
    var alive: [Object] { boxes.withLock { $0.compactMap(\.object) } }
}

/// A thread of its own that runs `round` over and over, with the round's number (from 1) and state only it
/// touches, until stopped: realm changes and peak sampling go on beside the requests without taking a
/// worker of the pool.
final class LoopThread: Sendable {
    private let progress = Locked((stopping: false, rounds: 0))
    private let done = DispatchSemaphore(value: 0)

    init<State: Sendable>(_ state: State, round: @escaping @Sendable (Int, inout State) -> Void) {
        Thread.detachNewThread { [self] in
            var state = state
            while !progress.value.stopping {
                let number = progress.value.rounds + 1
                round(number, &state)
                progress.withLock { $0.rounds = number }
            }
            done.signal()
        }
    }

    /// Stops the thread after its current round and waits for it; the number of rounds it ran.
    @discardableResult
    func stop() -> Int {
        progress.withLock { $0.stopping = true }
        done.wait()
        return progress.value.rounds
    }
}

/// A small seeded generator (SplitMix64), so that a run's mix of requests can be repeated.
struct SoakRandom: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    /// True with probability `p`.
    mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &self) < p }
}

/// Waits until `condition` holds or `seconds` pass; whether it held.
func settle(within seconds: TimeInterval, _ condition: () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while !condition() {
        guard Date() < deadline else { return false }
        try? await Task.sleep(nanoseconds: 20_000_000)
    }
    return true
}

/// Waits like `settle`, but polls from a thread of its own: a `Task.sleep` every 20 ms wakes one of
/// dispatch's worker threads each time, which keeps idle workers from timing out (after 5 s) and leaves the
/// thread count above its baseline for as long as the wait lasts. Only the final resume touches the pool.
/// The polling thread is named `settlingThreadName`, which `ProcessFigures` leaves out of its counts.
func settleQuietly(within seconds: TimeInterval, _ condition: @escaping @Sendable () -> Bool) async -> Bool {
    await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
        Thread.detachNewThread {
            Thread.current.name = settlingThreadName
            let deadline = Date().addingTimeInterval(seconds)
            while !condition() {
                guard Date() < deadline else { return continuation.resume(returning: false) }
                Thread.sleep(forTimeInterval: 0.05)
            }
            continuation.resume(returning: true)
        }
    }
}

/// The name of `settleQuietly`'s polling thread.
let settlingThreadName = "soak-settling"

func now() -> TimeInterval { ProcessInfo.processInfo.systemUptime }

func log(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}
