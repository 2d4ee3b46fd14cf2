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

    /// How `body` ended.
    init(of body: () throws -> Void) {
        do {
            try body()
            self = .success
        } catch {
            self = Outcome(error)
        }
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
final class Gate: Sendable {
    private struct State {
        var inFlight = 0
        var limit: Int
        var peak = 0
        var waiter: CheckedContinuation<Void, Never>?

        /// Takes a place if one is free.
        mutating func take() -> Bool {
            guard inFlight < limit else { return false }
            inFlight += 1
            peak = max(peak, inFlight)
            return true
        }
    }

    private let state: Locked<State>

    init(limit: Int) { state = Locked(State(limit: limit)) }

    var current: Int { state.value.inFlight }
    var peakInFlight: Int { state.value.peak }

    /// A new limit; a higher one lets the waiting driver in at once.
    func setLimit(_ limit: Int) {
        let waiter = state.withLock { gate -> CheckedContinuation<Void, Never>? in
            gate.limit = limit
            guard let waiter = gate.waiter, gate.take() else { return nil }
            gate.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Takes a place, waiting for one if all are taken (a single driver waits at a time).
    func acquire() async {
        if state.withLock({ $0.take() }) { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { gate in
                if gate.take() { return true }
                gate.waiter = continuation
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Gives a place back, straight to the waiting driver if there is one.
    func release() {
        let waiter = state.withLock { gate -> CheckedContinuation<Void, Never>? in
            if let waiter = gate.waiter, gate.inFlight - 1 < gate.limit {
                gate.waiter = nil
                return waiter
            }
            gate.inFlight -= 1
            return nil
        }
        waiter?.resume()
    }
}
