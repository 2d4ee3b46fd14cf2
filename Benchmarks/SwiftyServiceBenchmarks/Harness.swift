import Foundation

/// One scenario's figures, printed as a table row on stderr and a JSON line on stdout.
struct Outcome {
    enum Unit: String {
        case nanosecondsPerOperation = "ns/op"
        case requestsPerSecond = "req/s"
        case bytesPerRequest = "bytes/request"
        case megabytes = "MB"
        case seconds = "s"
        case ratio = "x"
        case megabytesPerSecond = "MB/s"
        case eventsPerSecond = "events/s"
        case microsecondsPerRequest = "µs/req"
        case connections
    }

    let scenario: String
    let ours: Double
    let baseline: Double?
    let unit: Unit
    /// The goal for `ratio` (or for `ours` when there is no baseline); `nil` reports without a goal.
    let goal: Double?
    /// Whether a higher figure is better (throughput) rather than a lower one (time, bytes).
    let higherIsBetter: Bool
    var note: String = ""
    /// The median of ratios measured in turns, where the scenario has them: steadier than the ratio of medians.
    var pairedRatio: Double? = nil

    var ratio: Double? { pairedRatio ?? baseline.map { ours / $0 } }

    var meets: Bool? {
        guard let goal else { return nil }
        let figure = ratio ?? ours
        return higherIsBetter ? figure >= goal : figure <= goal
    }

    var jsonLine: String {
        func number(_ value: Double?) -> String {
            guard let value, value.isFinite else { return "null" }
            return String(format: "%.4g", value)
        }
        let meetsText = meets.map { $0 ? "true" : "false" } ?? "null"
        return
            #"{"scenario": "\#(scenario)", "ours": \#(number(ours)), "baseline": \#(number(baseline)), "unit": "\#(unit.rawValue)", "ratio": \#(number(ratio)), "goal": \#(number(goal)), "meets": \#(meetsText), "note": \#(jsonString(note))}"#
    }

    /// `text` as a JSON string: Benchmarks/write-results puts the notes in RESULTS.md.
    private func jsonString(_ text: String) -> String {
        var escaped = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": escaped += "\\\""
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            case _ where scalar.value < 0x20: escaped += String(format: "\\u%04x", scalar.value)
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped + "\""
    }

    var tableRow: String {
        func cell(_ value: Double?, _ width: Int) -> String {
            let text = value.map { String(format: "%.3g", $0) } ?? "—"
            return text.padding(toLength: width, withPad: " ", startingAt: 0)
        }
        let goalText = goal.map { (higherIsBetter ? "≥ " : "≤ ") + String(format: "%g", $0) } ?? "—"
        let verdict = meets.map { $0 ? "meets" : "MISSES" } ?? "report"
        return scenario.padding(toLength: 36, withPad: " ", startingAt: 0) + cell(ours, 12)
            + cell(baseline, 12)
            + unit.rawValue.padding(toLength: 14, withPad: " ", startingAt: 0) + cell(ratio, 8)
            + goalText.padding(toLength: 8, withPad: " ", startingAt: 0) + verdict
            + (note.isEmpty ? "" : "  \(note)")
    }

    static let tableHeader =
        "scenario".padding(toLength: 36, withPad: " ", startingAt: 0)
        + "ours".padding(toLength: 12, withPad: " ", startingAt: 0)
        + "baseline".padding(toLength: 12, withPad: " ", startingAt: 0)
        + "unit".padding(toLength: 14, withPad: " ", startingAt: 0)
        + "ratio".padding(toLength: 8, withPad: " ", startingAt: 0) + "goal    verdict"
}

/// Keeps a value alive so the optimizer cannot drop the work that made it.
@inline(never)
func blackHole<T>(_ value: T) {
    withExtendedLifetime(value) {}
}

func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? .nan : sorted[sorted.count / 2]
}

/// Runs `ours` and `baseline` alternately, `runs` times each, and returns their median ns per operation.
func interleaved(
    runs: Int, iterations: Int, ours: () throws -> Void, baseline: () throws -> Void
) rethrows -> (ours: Double, baseline: Double) {
    var oursTimes: [Double] = []
    var baselineTimes: [Double] = []
    for _ in 0..<max(1, iterations / 10) {
        try ours()
        try baseline()
    }
    for _ in 0..<runs {
        var start = now()
        for _ in 0..<iterations { try baseline() }
        baselineTimes.append(Double(now() - start) / Double(iterations))
        start = now()
        for _ in 0..<iterations { try ours() }
        oursTimes.append(Double(now() - start) / Double(iterations))
    }
    return (median(oursTimes), median(baselineTimes))
}

/// The async form of `interleaved`.
func interleavedAsync(
    runs: Int, iterations: Int, ours: () async throws -> Void, baseline: () async throws -> Void
) async rethrows -> (ours: Double, baseline: Double) {
    var oursTimes: [Double] = []
    var baselineTimes: [Double] = []
    for _ in 0..<max(1, iterations / 10) {
        try await ours()
        try await baseline()
    }
    for _ in 0..<runs {
        var start = now()
        for _ in 0..<iterations { try await baseline() }
        baselineTimes.append(Double(now() - start) / Double(iterations))
        start = now()
        for _ in 0..<iterations { try await ours() }
        oursTimes.append(Double(now() - start) / Double(iterations))
    }
    return (median(oursTimes), median(baselineTimes))
}

/// CPU time (user + system) this process has used, in nanoseconds.
func processCPUTime() -> UInt64 {
    var usage = rusage()
    #if os(Linux)
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    #else
    getrusage(RUSAGE_SELF, &usage)
    #endif
    func nanoseconds(_ time: timeval) -> UInt64 {
        UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_usec) * 1_000
    }
    return nanoseconds(usage.ru_utime) + nanoseconds(usage.ru_stime)
}

#if os(Linux)
/// glibc's `malloc_trim`, which the Glibc module does not export: hands freed heap pages back to the system.
@_silgen_name("malloc_trim")
func mallocTrim(_ pad: Int) -> Int32
#endif

/// Resident memory of this process in bytes, after returning freed memory to the system when `trimming`.
func residentBytes(trimming: Bool = true) -> Int? {
    #if os(Linux)
    if trimming { _ = mallocTrim(0) }
    guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return nil }
    let fields = statm.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return nil }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    #else
    return nil
    #endif
}
