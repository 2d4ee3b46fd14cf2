import Foundation
import ProcessProbes

/// One named check and whether it passed.
struct Check {
    let name: String
    let passed: Bool
    let detail: String
}

/// Resident memory after the warm-up and at the end, and every 10,000 requests in between.
struct MemoryTrail {
    let warmup: Int
    private(set) var warmKB: Int?
    private(set) var warmHeap: Int?
    private(set) var series: [(sent: Int, kilobytes: Int, heap: Int?)] = []
    private(set) var endKB = 0
    private(set) var endHeap: Int?
    private(set) var requests = 0

    init(warmup: Int) { self.warmup = warmup }

    mutating func note(sent: Int) {
        if sent == warmup {
            warmKB = residentKilobytes()
            warmHeap = heapInUse()
        }
        if sent.isMultiple(of: 10_000) { series.append((sent, residentKilobytes(), heapInUse())) }
    }

    mutating func finish(residentKB: Int, heap: Int?, requests: Int) {
        endKB = residentKB
        endHeap = heap
        self.requests = requests
    }

    /// Bytes of growth per request after the warm-up, if there were requests after it.
    var growthPerRequest: Double? {
        guard let warmKB, requests > warmup else { return nil }
        return Double(endKB - warmKB) * 1024 / Double(requests - warmup)
    }

    /// Bytes of malloc heap in use gained per request after the warm-up.
    var heapGrowthPerRequest: Double? {
        guard let warmHeap, let endHeap, requests > warmup else { return nil }
        return Double(endHeap - warmHeap) / Double(requests - warmup)
    }
}

/// A phase's figures, as lines, and its checks.
final class PhaseReport {
    let name: String
    private(set) var lines: [String] = []
    private(set) var checks: [Check] = []

    init(_ name: String) { self.name = name }

    func line(_ text: String) { lines.append(text) }

    /// The figures and checks every phase has: how its requests went, how it settled after them, and
    /// that each was answered exactly once.
    func traffic(_ traffic: Traffic, rest: Rest, teardown: Teardown) {
        let summary = traffic.ledger.summary(sent: traffic.ledger.count)
        requests(summary, traffic, changes: rest.changes)
        line(
            "  settling: in-flight drained \(traffic.drained ? "yes" : "NO (30 s)"), objects released \(rest.released ? "yes" : "NO (\(rest.releaseWait) s)"), teardown settled \(teardown.settled ? "yes" : "NO") after \(String(format: "%.1f", teardown.seconds)) s"
        )
        exactlyOnce(summary)
    }

    func check(_ name: String, _ passed: Bool, _ detail: String) {
        checks.append(Check(name: name, passed: passed, detail: detail))
    }

    var failed: [Check] { checks.filter { !$0.passed } }

    private func requests(_ summary: Ledger.Summary, _ traffic: Traffic, changes: Int) {
        let (wall, concurrency, forms) = (traffic.wall, traffic.concurrency, traffic.forms)
        line(
            String(
                format:
                    "  %d requests in %.1f s (%.0f req/s; sent in %.1f s), in flight %d–%d (peak %d), %d realm changes",
                summary.sent, wall, Double(summary.sent) / wall, traffic.sendingTime, concurrency.lowerBound,
                concurrency.upperBound, traffic.gate.peakInFlight, changes))
        line(
            "  forms: "
                + Plan.Form.allCases.map { "\($0.rawValue) \(forms[$0] ?? 0)" }.joined(separator: ", ")
                + "; cancellations attempted: \(summary.cancelAttempts)")
        line("  outcomes: " + Self.tally(summary.tally) + " = \(summary.tallyTotal) (sent \(summary.sent))")
        for label in summary.byLabel.keys.sorted() where summary.byLabel.count > 1 {
            let outcomes = summary.byLabel[label]!
            line("    \(label): " + Self.tally(outcomes) + " = \(outcomes.values.reduce(0, +))")
        }
        check(
            "\(name): outcome tally adds up to the requests sent", summary.tallyTotal == summary.sent,
            "tally \(summary.tallyTotal), sent \(summary.sent)")
        check(
            "\(name): no error other than ServiceError", (summary.tally[.foreign] ?? 0) == 0,
            "\(summary.tally[.foreign] ?? 0) foreign errors")
        let unexpected = summary.unexpected.sorted { $0.key < $1.key }.map { "\($0.key) ×\($0.value)" }
        check(
            "\(name): every outcome is the one its scenario must give (or cancelled, if cancelled)",
            summary.unexpectedTotal == 0,
            unexpected.isEmpty
                ? "0 unexpected"
                : "\(summary.unexpectedTotal) unexpected: \(unexpected.joined(separator: "; ")); e.g. \(summary.unexpectedExamples.joined(separator: ", "))"
        )
    }

    private func exactlyOnce(_ summary: Ledger.Summary) {
        line(
            "  answered exactly once: \(summary.answeredOnce); more than once: \(summary.answeredMoreThanOnce); never: \(summary.neverAnswered)"
        )
        check(
            "\(name): no request answered twice", summary.answeredMoreThanOnce == 0,
            "\(summary.answeredMoreThanOnce) answered more than once \(summary.repeatedExamples.joined(separator: ", "))"
        )
        check(
            "\(name): every request answered", summary.neverAnswered == 0,
            "\(summary.neverAnswered) never answered \(summary.neverExamples.joined(separator: ", "))")
    }

    /// The process's figures before the phase, at rest after it (backends still in place), and after
    /// the backends are gone; `socketBound` is how many connections the live backends may keep at rest.
    func leaks(
        before: ProcessFigures, atRest: ProcessFigures, after: ProcessFigures, peak: ProcessFigures,
        socketsLabel: String?, socketBound: Int = 0
    ) {
        line("  process figures         before   peak  at rest  after teardown")
        func row(_ title: String, _ value: (ProcessFigures) -> Int) {
            let cells = [before, peak, atRest, after].map { value($0) < 0 ? "–" : String(value($0)) }
            line(
                "    " + title.padding(toLength: 20, withPad: " ", startingAt: 0)
                    + cells.map { $0.leftPadded(8) }.joined())
        }
        row("file descriptors") { $0.descriptors }
        row("threads") { $0.threads }
        row("SwiftyCurl threads") { $0.curlThreads }
        if let socketsLabel { row("sockets to \(socketsLabel)") { $0.sockets } }
        row("VmRSS (KB)") { $0.residentKB }
        row("malloc in use (KB)") { $0.heapKB }
        check(
            "\(name): file descriptors back to the baseline after teardown",
            after.descriptors <= before.descriptors,
            "before \(before.descriptors), after \(after.descriptors)")
        check(
            "\(name): thread count back to the baseline after teardown", after.threads <= before.threads,
            "before \(before.threads), after \(after.threads); names before [\(before.threadNames.sorted().joined(separator: ", "))], after [\(after.threadNames.sorted().joined(separator: ", "))]"
        )
        check(
            "\(name): no SwiftyCurl thread after teardown", after.curlThreads == 0,
            "\(after.curlThreads) left")
        if socketsLabel != nil {
            check(
                "\(name): sockets to the server at rest within the backends' connection limits",
                atRest.sockets <= socketBound, "\(atRest.sockets) open, limit \(socketBound)")
            check(
                "\(name): no socket to the server after teardown", after.sockets == 0, "\(after.sockets) open"
            )
        }
    }

    /// Resident memory and malloc heap growth after the warm-up, each per request against its bound.
    func memory(_ trail: MemoryTrail, bound: Double, heapBound: Double) {
        let series = trail.series.map { "\($0.sent / 1000)k:\($0.kilobytes / 1024)MB" }.joined(separator: " ")
        let heapSeries = trail.series.map { "\($0.sent / 1000)k:\(($0.heap ?? 0) >> 20)MB" }.joined(
            separator: " ")
        guard let growth = trail.growthPerRequest, let warm = trail.warmKB else {
            line("  VmRSS: too few requests after the warm-up to judge growth (\(series))")
            return
        }
        line(
            String(
                format:
                    "  VmRSS after %d-request warm-up %d KB, at rest %d KB: %+d KB over %d requests = %.1f bytes/request (bound %.0f)",
                trail.warmup, warm, trail.endKB, trail.endKB - warm, trail.requests - trail.warmup, growth,
                bound))
        line("  VmRSS every 10,000 sent: \(series)")
        check(
            "\(name): resident memory growth after the warm-up under \(Int(bound)) bytes/request",
            growth <= bound,
            String(format: "%.1f bytes/request", growth))
        guard let heapGrowth = trail.heapGrowthPerRequest, let warmHeap = trail.warmHeap,
            let endHeap = trail.endHeap
        else { return }
        line(
            String(
                format:
                    "  malloc heap in use after the warm-up %d KB, at rest %d KB: %+d KB = %.1f bytes/request (bound %.0f)",
                warmHeap >> 10, endHeap >> 10, (endHeap - warmHeap) >> 10, heapGrowth, heapBound))
        line("  malloc heap in use every 10,000 sent: \(heapSeries)")
        check(
            "\(name): malloc heap growth after the warm-up under \(Int(heapBound)) bytes/request",
            heapGrowth <= heapBound,
            String(format: "%.1f bytes/request", heapGrowth))
    }

    func objects(watch: Watch) {
        let (handles, sampled) = (watch.handles.alive.count, watch.handles.added)
        line(
            "  per-request objects still alive at rest: completion closures \(watch.callbacks.alive) of \(watch.callbacks.created), RequestHandles \(handles) of \(sampled) sampled"
        )
        check(
            "\(name): the library let go of every completion closure", watch.callbacks.alive == 0,
            "\(watch.callbacks.alive) of \(watch.callbacks.created) alive")
        check(
            "\(name): every sampled RequestHandle deallocated", handles == 0, "\(handles) of \(sampled) alive"
        )
    }

    /// A backend's own record: every send called back exactly once, and the closure let go of.
    func backend(_ stats: BackendStats) {
        let figures = stats.figures
        line(
            "  \(stats.name): asked to send \(figures.sent), called back \(figures.completed) (\(figures.sent - figures.completed) never, \(figures.repeated) more than once), closures still held \(stats.completions.alive)"
        )
        check(
            "\(name): \(stats.name) called back exactly once per send",
            figures.sent == figures.completed && figures.repeated == 0,
            "\(figures.sent - figures.completed) sends never called back, \(figures.repeated) called back again"
        )
        check(
            "\(name): \(stats.name) let go of every completion closure", stats.completions.alive == 0,
            "\(stats.completions.alive) still held")
    }

    func render() -> String {
        var text = "== phase \(name)\n" + lines.joined(separator: "\n") + "\n"
        let failures = failed
        text += "  checks: \(checks.count - failures.count) of \(checks.count) passed\n"
        for check in failures { text += "  FAILED: \(check.name): \(check.detail)\n" }
        return text
    }

    private static func tally(_ outcomes: [Outcome: Int]) -> String {
        outcomes.sorted { $0.key < $1.key }.map { "\($0.key.rawValue) \($0.value)" }.joined(separator: ", ")
    }
}

extension String {
    func leftPadded(_ width: Int) -> String {
        count >= width ? " " + self : String(repeating: " ", count: width - count) + self
    }
}
