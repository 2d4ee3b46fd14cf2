import Foundation

// A soak run: 100,000 requests through stubs and 100,000 through a real httpbin, with random
// cancellations, faults and realm changes; every request must end exactly once, and what the process
// holds (descriptors, threads, sockets, memory, per-request objects) must come back. See scripts/soak.
//
//   scripts/soak                                   (builds in release, starts httpbin, runs everything)
//   SwiftyServiceSoak --url http://127.0.0.1:PORT [--stub-requests N] [--real-requests N]
//       [--phase stub|real] [--warmup N] [--concurrency 16-64] [--seed N] [--max-growth BYTES]
//       [--max-stub-heap-growth BYTES] [--max-real-heap-growth BYTES] [--churn SECONDS] [--legacy-urlcache]
//       [--backends urlsession,curl,legacy]

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

    static func parse(_ arguments: [String]) -> Options {
        var options = Options()
        options.url = ProcessInfo.processInfo.environment["HTTPBIN_URL"].flatMap(URL.init(string:))
        var index = 0
        func value() -> String {
            index += 1
            guard index < arguments.count else { usage("\(arguments[index - 1]) needs a value") }
            return arguments[index]
        }
        func number(_ text: String) -> Int {
            guard let number = Int(text.replacingOccurrences(of: "_", with: "")) else {
                usage("not a number: \(text)")
            }
            return number
        }
        while index < arguments.count {
            switch arguments[index] {
            case "--url": options.url = URL(string: value())
            case "--stub-requests": options.stubRequests = number(value())
            case "--real-requests": options.realRequests = number(value())
            case "--phase": options.phases = [value()]
            case "--warmup": options.warmup = number(value())
            case "--seed": options.seed = UInt64(number(value()))
            case "--max-growth": options.maxGrowthPerRequest = Double(number(value()))
            case "--max-stub-heap-growth": options.maxStubHeapGrowthPerRequest = Double(number(value()))
            case "--max-real-heap-growth": options.maxRealHeapGrowthPerRequest = Double(number(value()))
            case "--churn": options.churnInterval = Double(value()) ?? 5
            case "--legacy-urlcache": options.legacyURLCache = true
            case "--backends":
                let names = value().split(separator: ",").map(String.init)
                options.backends = Kind.allCases.filter { names.contains($0.option) }
                guard options.backends.count == names.count, !names.isEmpty else {
                    usage("--backends takes a comma-separated list of urlsession, curl, legacy")
                }
            case "--concurrency":
                let parts = value().split(separator: "-").map { number(String($0)) }
                guard parts.count == 2, parts[0] >= 1, parts[0] <= parts[1] else {
                    usage("--concurrency LOW-HIGH")
                }
                options.concurrency = parts[0]...parts[1]
            case "--help", "-h": usage(nil)
            default: usage("unknown argument \(arguments[index])")
            }
            index += 1
        }
        guard options.phases.isSubset(of: ["stub", "real"]) else { usage("--phase stub or real") }
        if options.phases.contains("real"), options.url?.port == nil {
            usage(
                "the real-server phase needs --url http://127.0.0.1:PORT (or HTTPBIN_URL); scripts/soak starts httpbin"
            )
        }
        return options
    }
}

func usage(_ problem: String?) -> Never {
    if let problem { log("SwiftyServiceSoak: \(problem)") }
    log(
        "usage: SwiftyServiceSoak [--url URL] [--stub-requests N] [--real-requests N] [--phase stub|real] [--warmup N] [--concurrency LOW-HIGH] [--seed N] [--max-growth BYTES] [--max-stub-heap-growth BYTES] [--max-real-heap-growth BYTES] [--churn SECONDS] [--legacy-urlcache] [--backends urlsession,curl,legacy]"
    )
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
