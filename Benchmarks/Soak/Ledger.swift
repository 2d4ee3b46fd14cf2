import Foundation
import SwiftyService

/// How one request ended: success, or the kind of ``ServiceError`` it failed with.
enum Outcome: String, CaseIterable, Sendable, Comparable {
    case success
    case invalidRequest
    case transport
    case timedOut
    case cancelled
    case unacceptableStatusCode
    case decoding
    /// An error that is not a `ServiceError` (the library promises there is none).
    case foreign

    init(_ error: ServiceError) {
        self = Outcome(rawValue: error.kind.rawValue) ?? .foreign
    }

    init(_ error: any Error) {
        self = (error as? ServiceError).map(Outcome.init) ?? .foreign
    }

    static func < (lhs: Outcome, rhs: Outcome) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}

/// Every request of a phase by id: how many times it was answered, its first outcome, what it was expected
/// to end with, and whether the soak tried to cancel it.
final class Ledger: @unchecked Sendable {
    struct Entry {
        var answers: UInt8 = 0
        var outcome: Outcome?
        var expected: Outcome = .success
        var cancelAttempted = false
        var label = ""
        var scenario = ""
    }

    private let lock = NSLock()
    private var entries: [Entry]
    private var tallies: [String: [Outcome: Int]] = [:]
    private var repeated: [(id: Int, first: Outcome, again: Outcome)] = []
    private let gate: Gate

    init(count: Int, gate: Gate) {
        entries = Array(repeating: Entry(), count: count)
        self.gate = gate
    }

    var count: Int { entries.count }

    /// Declares a request before it is sent.
    func expect(_ id: Int, _ outcome: Outcome, label: String, scenario: String) {
        lock.withLock {
            entries[id].expected = outcome
            entries[id].label = label
            entries[id].scenario = scenario
        }
    }

    /// Notes that the soak is about to cancel the request (before it does, so the check never races).
    func markCancel(_ id: Int) {
        lock.withLock { entries[id].cancelAttempted = true }
    }

    /// One answer of request `id`; the first frees its place in the gate, any later one is a defect.
    func record(_ id: Int, _ outcome: Outcome) {
        let first = lock.withLock { () -> Bool in
            let entry = entries[id]
            entries[id].answers = entry.answers == .max ? .max : entry.answers + 1
            if entry.answers == 0 {
                entries[id].outcome = outcome
                tallies[entry.label, default: [:]][outcome, default: 0] += 1
                return true
            }
            if repeated.count < 1_000 { repeated.append((id, entry.outcome ?? .foreign, outcome)) }
            return false
        }
        if first { gate.release() }
    }

    struct Summary {
        var sent = 0
        var answeredOnce = 0
        var answeredMoreThanOnce = 0
        var neverAnswered = 0
        var cancelAttempts = 0
        var tally: [Outcome: Int] = [:]
        var byLabel: [String: [Outcome: Int]] = [:]
        var unexpected: [String: Int] = [:]
        var unexpectedExamples: [String] = []
        var repeatedExamples: [String] = []
        var neverExamples: [String] = []

        var tallyTotal: Int { tally.values.reduce(0, +) }
        var unexpectedTotal: Int { unexpected.values.reduce(0, +) }
    }

    /// The phase's figures; `sent` is how many ids were launched.
    func summary(sent: Int) -> Summary {
        lock.withLock {
            var summary = Summary()
            summary.sent = sent
            summary.byLabel = tallies
            for (_, outcomes) in tallies {
                for (outcome, count) in outcomes { summary.tally[outcome, default: 0] += count }
            }
            for id in 0..<sent {
                let entry = entries[id]
                if entry.cancelAttempted { summary.cancelAttempts += 1 }
                switch entry.answers {
                case 0:
                    summary.neverAnswered += 1
                    if summary.neverExamples.count < 10 {
                        summary.neverExamples.append("#\(id) \(entry.label) \(entry.scenario)")
                    }
                case 1: summary.answeredOnce += 1
                default: summary.answeredMoreThanOnce += 1
                }
                guard let outcome = entry.outcome else { continue }
                let acceptable = outcome == entry.expected || (entry.cancelAttempted && outcome == .cancelled)
                if !acceptable {
                    let key = "\(entry.scenario): expected \(entry.expected), got \(outcome)"
                    summary.unexpected[key, default: 0] += 1
                    if summary.unexpectedExamples.count < 10 {
                        summary.unexpectedExamples.append(
                            "#\(id) \(entry.label) \(key)\(entry.cancelAttempted ? " (cancel attempted)" : "")"
                        )
                    }
                }
            }
            summary.repeatedExamples = repeated.prefix(10).map { "#\($0.id): \($0.first) then \($0.again)" }
            return summary
        }
    }
}

/// At most `limit` requests in flight: the driver waits for a place before it sends the next one.
final class Gate: @unchecked Sendable {
    private let lock = NSLock()
    private var inFlight = 0
    private var limit: Int
    private var peak = 0
    private var waiter: CheckedContinuation<Void, Never>?

    init(limit: Int) { self.limit = limit }

    var current: Int { lock.withLock { inFlight } }
    var peakInFlight: Int { lock.withLock { peak } }

    func setLimit(_ limit: Int) {
        let waiter = lock.withLock { () -> CheckedContinuation<Void, Never>? in
            self.limit = limit
            guard inFlight < limit, let waiter = self.waiter else { return nil }
            inFlight += 1
            peak = max(peak, inFlight)
            self.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    private func tryTake() -> Bool {
        lock.withLock {
            guard inFlight < limit else { return false }
            inFlight += 1
            peak = max(peak, inFlight)
            return true
        }
    }

    /// Takes a place, waiting for one if all are taken (a single driver waits at a time).
    func acquire() async {
        if tryTake() { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = lock.withLock { () -> Bool in
                if inFlight < limit {
                    inFlight += 1
                    peak = max(peak, inFlight)
                    return true
                }
                waiter = continuation
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Gives a place back, straight to the waiting driver if there is one.
    func release() {
        let waiter = lock.withLock { () -> CheckedContinuation<Void, Never>? in
            if let waiter = self.waiter, inFlight - 1 < limit {
                self.waiter = nil
                return waiter
            }
            inFlight -= 1
            return nil
        }
        waiter?.resume()
    }
}

/// Counts live instances of `Probe`: objects the soak hangs on closures it hands to the library, so that
/// a closure the library never lets go of shows up as a live probe.
final class LiveCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var live = 0
    private var made = 0

    func probe() -> Probe { Probe(self) }

    fileprivate func born() {
        lock.withLock {
            live += 1; made += 1
        }
    }
    fileprivate func died() { lock.withLock { live -= 1 } }

    var alive: Int { lock.withLock { live } }
    var created: Int { lock.withLock { made } }
}

final class Probe: Sendable {
    private let counter: LiveCounter
    init(_ counter: LiveCounter) {
        self.counter = counter
        counter.born()
    }
    deinit { counter.died() }
    func touch() {}
}

/// Weak references to a sample of the `RequestHandle`s the callback form returned.
final class HandleSample: @unchecked Sendable {
    private final class Box {
        weak var handle: RequestHandle?
        init(_ handle: RequestHandle) { self.handle = handle }
    }
    private let lock = NSLock()
    private var boxes: [Box] = []

    func add(_ handle: RequestHandle) {
        lock.withLock { boxes.append(Box(handle)) }
    }

    var sampled: Int { lock.withLock { boxes.count } }
    var alive: Int { lock.withLock { boxes.filter { $0.handle != nil }.count } }
}

/// Weak references to objects of any class, to see that they went away.
final class WeakSet<Object: AnyObject>: @unchecked Sendable {
    private final class Box {
        weak var object: Object?
        init(_ object: Object) { self.object = object }
    }
    private let lock = NSLock()
    private var boxes: [Box] = []

    func add(_ object: Object) { lock.withLock { boxes.append(Box(object)) } }
    var added: Int { lock.withLock { boxes.count } }
    var alive: [Object] { lock.withLock { boxes.compactMap(\.object) } }
}

/// A value behind a lock.
final class Shared<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
    @discardableResult
    func update<T>(_ change: (inout Value) -> T) -> T { lock.withLock { change(&stored) } }
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
