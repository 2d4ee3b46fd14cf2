import Foundation

// A soak run: 100,000 requests through stubs and 100,000 through a real httpbin, with random
// cancellations, faults and realm changes; every request must end exactly once, and what the process
// holds (descriptors, threads, sockets, memory, per-request objects) must come back. See scripts/soak,
// which builds in release, starts httpbin and runs everything; `SwiftyServiceSoak --help` lists the options.

struct Options: Sendable {
    var url: URL?
    var stubRequests = 100_000
    var realRequests = 100_000
    var phases: Set<String> = ["stub", "real"]
    var warmup = 10_000
    var concurrency = 16...64
    var seed: UInt64 = UInt64(Date().timeIntervalSince1970)
    /// Bound on resident memory growth after the warm-up, in bytes per request.
    var maxGrowthPerRequest: Double = 1_024
    /// Bound on malloc heap growth in the stub phase, where nothing but SwiftyService allocates per request.
    var maxStubHeapGrowthPerRequest: Double = 64
    /// Bound on malloc heap growth in the real-server phase. FoundationNetworking on Linux never frees the
    /// URL libcurl parses for each task (CFURLSessionCurlHostIsEqual: 5 allocations, ~175 bytes of heap),
    /// and two thirds of the phase's requests go through URLSession: ~120 bytes per request are its.
    var maxRealHeapGrowthPerRequest: Double = 256
    /// Seconds between replacing one backend of the real phase by a new one; 0 never.
    var churnInterval: TimeInterval = 5
    /// Whether the legacy client keeps URLSessionConfiguration.default's URLCache (reproduces a
    /// FoundationNetworking crash; see RealPhase.swift).
    var legacyURLCache = false
    /// The backends of the real-server phase.
    var backends = Kind.allCases
}

extension Options {
    /// Every option, as the usage line shows it (name, then what its value looks like if it takes one),
    /// and what it sets.
    private static let flags: KeyValuePairs<String, @Sendable (inout Options, String) -> Void> = [
        "--url URL": { $0.url = URL(string: $1) },
        "--stub-requests N": { $0.stubRequests = number($1) },
        "--real-requests N": { $0.realRequests = number($1) },
        "--phase stub|real": { $0.phases = [$1] },
        "--warmup N": { $0.warmup = number($1) },
        "--concurrency LOW-HIGH": { $0.concurrency = range($1) },
        "--seed N": { $0.seed = UInt64(number($1)) },
        "--max-growth BYTES": { $0.maxGrowthPerRequest = Double(number($1)) },
        "--max-stub-heap-growth BYTES": { $0.maxStubHeapGrowthPerRequest = Double(number($1)) },
        "--max-real-heap-growth BYTES": { $0.maxRealHeapGrowthPerRequest = Double(number($1)) },
        "--churn SECONDS": { $0.churnInterval = Double($1) ?? 5 },
        "--legacy-urlcache": { options, _ in options.legacyURLCache = true },
        "--backends urlsession,curl,legacy": { $0.backends = kinds($1) },
    ]

    static let usageLine = "usage: SwiftyServiceSoak " + flags.map { "[\($0.key)]" }.joined(separator: " ")

    static func parse(_ arguments: [String]) -> Options {
        var options = Options()
        options.url = ProcessInfo.processInfo.environment["HTTPBIN_URL"].flatMap(URL.init(string:))
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            if argument == "--help" || argument == "-h" { usage(nil) }
            guard let (spec, apply) = flags.first(where: { $0.key.split(separator: " ")[0] == argument })
            else {
                usage("unknown argument \(argument)")
            }
            let takesValue = spec.contains(" ")
            guard !takesValue || !rest.isEmpty else { usage("\(argument) needs a value") }
            apply(&options, takesValue ? rest.removeFirst() : "")
        }
        guard options.phases.isSubset(of: ["stub", "real"]) else { usage("--phase stub or real") }
        if options.phases.contains("real"), options.url?.port == nil {
            usage(
                "the real-server phase needs --url http://127.0.0.1:PORT (or HTTPBIN_URL); scripts/soak starts httpbin"
            )
        }
        return options
    }

    private static func number(_ text: String) -> Int {
        guard let number = Int(text.replacingOccurrences(of: "_", with: "")) else {
            usage("not a number: \(text)")
        }
        return number
    }

    private static func range(_ text: String) -> ClosedRange<Int> {
        let parts = text.split(separator: "-").map { number(String($0)) }
        guard parts.count == 2, parts[0] >= 1, parts[0] <= parts[1] else { usage("--concurrency LOW-HIGH") }
        return parts[0]...parts[1]
    }

    private static func kinds(_ text: String) -> [Kind] {
        let names = text.split(separator: ",").map(String.init)
        let kinds = Kind.allCases.filter { names.contains($0.option) }
        guard kinds.count == names.count, !names.isEmpty else {
            usage("--backends takes a comma-separated list of urlsession, curl, legacy")
        }
        return kinds
    }
}

func usage(_ problem: String?) -> Never {
    if let problem { log("SwiftyServiceSoak: \(problem)") }
    log(Options.usageLine)
    exit(2)
}

let options = Options.parse(Array(CommandLine.arguments.dropFirst()))
print(
    "SwiftyServiceSoak: seed \(options.seed), concurrency \(options.concurrency.lowerBound)–\(options.concurrency.upperBound), warm-up \(options.warmup), bounds per request: VmRSS \(Int(options.maxGrowthPerRequest)) bytes, malloc heap \(Int(options.maxStubHeapGrowthPerRequest)) (stub) and \(Int(options.maxRealHeapGrowthPerRequest)) (real server) bytes"
)
let runStarted = now()
var reports: [PhaseReport] = []
if options.phases.contains("stub") {
    log("phase stub: \(options.stubRequests) requests")
    let report = await runStubPhase(options)
    print(report.render())
    reports.append(report)
}
if options.phases.contains("real"), let url = options.url {
    log("phase real-server: \(options.realRequests) requests to \(url.absoluteString)")
    let report = await runRealPhase(options, server: url)
    print(report.render())
    reports.append(report)
}
let failures = reports.flatMap(\.failed)
let total = reports.map(\.checks.count).reduce(0, +)
print(
    String(
        format: "== soak: %.1f s wall in all; %d of %d checks passed", now() - runStarted,
        total - failures.count, total))
for check in failures { print("FAILED: \(check.name): \(check.detail)") }
exit(failures.isEmpty ? 0 : 1)
