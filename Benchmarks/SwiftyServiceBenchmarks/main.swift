import Foundation
import SwiftyService

// Benchmarks: each scenario runs its hand-written Foundation baseline in the same process, interleaved,
// over several runs, and reports medians. A table goes to stderr, one JSON object per scenario to stdout.
//
//   scripts/bench            (starts a local nginx, builds in release, runs everything)
//   scripts/bench --quick    (few iterations: checks that it runs, not that goals are met)

let arguments = CommandLine.arguments.dropFirst()
// A live client's own process (LiveRounds.swift): it measures that one client and prints its figures.
if arguments.contains("--live-client") { exit(await liveClientMain(arguments)) }
let quick = arguments.contains("--quick")
let liveURL = arguments.firstIndex(of: "--url").flatMap {
    arguments.index(after: $0) < arguments.endIndex
        ? URL(string: arguments[arguments.index(after: $0)]) : nil
}
let only = arguments.firstIndex(of: "--only").map { arguments[arguments.index(after: $0)] }
/// `--tls-url URL --tls-ca FILE --tls-pin BASE64 [--tls-log FILE]`: the HTTPS server scripts/bench starts.
func argument(_ name: String) -> String? {
    arguments.firstIndex(of: name).flatMap {
        arguments.index(after: $0) < arguments.endIndex ? arguments[arguments.index(after: $0)] : nil
    }
}
let tlsTarget: TLSTarget? = argument("--tls-url").flatMap(URL.init(string:)).flatMap { url in
    guard let ca = argument("--tls-ca"), let pin = argument("--tls-pin") else { return nil }
    return TLSTarget(
        url: url, caFile: URL(fileURLWithPath: ca), pin: pin,
        log: argument("--tls-log").map { URL(fileURLWithPath: $0) })
}
let settings = Settings(quick: quick, liveURL: liveURL)

ServiceRealm.get("bench").setBaseURL(benchBase).addHeaders(benchHeaders).use(StubBackend())

func report(_ outcome: Outcome) {
    FileHandle.standardError.write(Data((outcome.tableRow + "\n").utf8))
    FileHandle.standardOutput.write(Data((outcome.jsonLine + "\n").utf8))
}

/// Runs `scenario` in a new process of this executable, which reports it: memory scenarios that follow
/// another in one process grow into the heap it left and read low.
func runInOwnProcess(_ scenario: String, url: URL) throws {
    let child = Process()
    child.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
    child.arguments = ["--own-process", scenario, "--url", url.absoluteString] + (quick ? ["--quick"] : [])
    try child.run()
    child.waitUntilExit()
    guard child.terminationStatus == 0, child.terminationReason == .exit else {
        throw ScenarioProcessFailed(scenario: scenario, status: child.terminationStatus)
    }
}

/// A scenario's own process failed; what it printed went to this process's output.
struct ScenarioProcessFailed: Error, CustomStringConvertible {
    let scenario: String
    /// The exit status, or the signal that ended it.
    let status: Int32
    var description: String { "\(scenario): its process failed (status \(status))" }
}

if argument("--own-process") == "upload.stream.memory" {
    report(try await uploadStreamMemory(settings))
    exit(0)
}
if argument("--own-process") == "transfer.memory.curl", let liveURL {
    report(try await transferMemory(settings, base: liveURL, curl: true))
    exit(0)
}

/// `--only dispatch.stub` runs that scenario; `--only dispatch.` (ending in a dot) every scenario under it.
func wanted(_ scenario: String) -> Bool {
    guard let only else { return true }
    return only.hasSuffix(".") ? scenario.hasPrefix(only) : scenario == only
}

FileHandle.standardError.write(Data((Outcome.tableHeader + "\n").utf8))
if wanted("build.get") { report(buildGet(settings)) }
if wanted("build.get.encodable") { report(buildGetEncodable(settings)) }
if wanted("build.post") { report(buildPost(settings)) }
if wanted("dispatch.stub.async") { report(await dispatchStubAsync(settings)) }
if wanted("dispatch.stub") { report(dispatchStub(settings)) }
if wanted("dispatch.stub.typed") { report(await dispatchStubTyped(settings)) }
if wanted("dispatch.concurrent") { report(await dispatchConcurrent(settings)) }
if wanted("cache.hit") { report(await cacheHit(settings)) }
if wanted("cache.disk.hit") { report(await cacheDiskHit(settings)) }
if let liveURL {
    for inFlight in [1, 8] {
        for outcome in try liveScenarios(settings, base: liveURL, inFlight: inFlight, wanted: wanted) {
            report(outcome)
        }
    }
    if wanted("live.curl.metrics") {
        report(try await liveCurlMetrics(settings, base: liveURL))
    }
    if wanted("live.curl.h2.concurrent8") || wanted("live.curl.h2.concurrent8.connections") {
        if let h2 = argument("--h2-url").flatMap(URL.init(string:)), let tlsTarget {
            for outcome in try liveCurlH2(settings, url: h2, caFile: tlsTarget.caFile, statusBase: liveURL)
            where wanted(outcome.scenario) {
                report(outcome)
            }
        } else {
            FileHandle.standardError.write(
                Data("live.curl.h2.concurrent8: skipped, no --h2-url and --tls-url given (nginx only)\n".utf8))
        }
    }
    if wanted("live.curl.tls") {
        if let tlsTarget {
            report(try await liveCurlTLS(settings, target: tlsTarget))
        } else {
            FileHandle.standardError.write(
                Data("live.curl.tls: skipped, no --tls-url given (nginx only)\n".utf8))
        }
    }
} else {
    FileHandle.standardError.write(
        Data("live.*: skipped, no --url given (scripts/bench starts a server)\n".utf8))
}
if wanted("memory.retained") { report(memoryRetained(settings)) }
if wanted("generate.large") || wanted("generate.stripe") || wanted("generate.large.compile") {
    if let generator = argument("--generator"), let descriptions = argument("--descriptions") {
        for outcome in try generateLarge(settings, generator: generator, descriptions: URL(fileURLWithPath: descriptions)) {
            report(outcome)
        }
    } else {
        FileHandle.standardError.write(
            Data("generate.*: skipped, no --generator and --descriptions given (scripts/bench gives them)\n".utf8))
    }
}
if let url = argument("--range-url").flatMap(URL.init(string:)), wanted("download.resume.overhead") {
    report(try await downloadResumeOverhead(settings, rangeURL: url))
} else if wanted("download.resume.overhead") {
    FileHandle.standardError.write(Data("download.resume.overhead: skipped, no --range-url given (scripts/bench gives it)\n".utf8))
}
if let liveURL, wanted("transfer.memory") { report(try await transferMemory(settings, base: liveURL)) }
if let liveURL, wanted("transfer.memory.curl") { try runInOwnProcess("transfer.memory.curl", url: liveURL) }
if let liveURL, wanted("upload.stream.memory") { try runInOwnProcess("upload.stream.memory", url: liveURL) }
if let url = argument("--ws-url").flatMap(URL.init(string:)), let rawPort = argument("--ws-raw-port").flatMap(Int.init) {
    let target = WebSocketTarget(url: url, rawPort: rawPort)
    if wanted("ws.echo") { report(try await webSocketEcho(settings, target: target)) }
    if wanted("ws.throughput") { report(try await webSocketThroughput(settings, target: target)) }
    if wanted("ws.memory") { report(try await webSocketMemory(settings, target: target)) }
} else if wanted("ws.echo") || wanted("ws.throughput") || wanted("ws.memory") {
    FileHandle.standardError.write(Data("ws.*: skipped, no --ws-url and --ws-raw-port given (scripts/bench gives them)\n".utf8))
}
if let liveURL {
    if wanted("stream.throughput") { report(try await streamThroughput(settings, base: liveURL)) }
    if wanted("stream.memory") { report(try await streamMemory(settings, base: liveURL)) }
    if wanted("stream.sse") { report(try await streamSSE(settings, base: liveURL)) }
}
