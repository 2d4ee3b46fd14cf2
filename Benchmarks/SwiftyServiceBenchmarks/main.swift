import Foundation
import SwiftyService
import SwiftyServiceCurl

// Benchmarks: each scenario runs its hand-written Foundation baseline in the same process, interleaved,
// over several runs, and reports medians. A table goes to stderr, one JSON object per scenario to stdout.
//
//   scripts/bench            (starts a local nginx, builds in release, runs everything)
//   scripts/bench --quick    (few iterations: checks that it runs, not that goals are met)

let arguments = CommandLine.arguments.dropFirst()
let quick = arguments.contains("--quick")
let liveURL = arguments.firstIndex(of: "--url").flatMap {
    arguments.index(after: $0) < arguments.endIndex
        ? URL(string: arguments[arguments.index(after: $0)]) : nil
}
let only = arguments.firstIndex(of: "--only").map { arguments[arguments.index(after: $0)] }
let settings = Settings(quick: quick, liveURL: liveURL)

ServiceRealm.get("bench").setBaseURL(benchBase).addHeaders(benchHeaders).use(StubBackend())

func report(_ outcome: Outcome) {
    FileHandle.standardError.write(Data((outcome.tableRow + "\n").utf8))
    FileHandle.standardOutput.write(Data((outcome.jsonLine + "\n").utf8))
}

func wanted(_ scenario: String) -> Bool { only.map { scenario.hasPrefix($0) } ?? true }

FileHandle.standardError.write(Data((Outcome.tableHeader + "\n").utf8))
if wanted("build.get") { report(buildGet(settings)) }
if wanted("build.post") { report(buildPost(settings)) }
if wanted("dispatch.stub.async") { report(await dispatchStubAsync(settings)) }
if wanted("dispatch.stub") && !(only?.hasPrefix("dispatch.stub.") ?? false) { report(dispatchStub(settings)) }
if wanted("dispatch.concurrent") { report(await dispatchConcurrent(settings)) }
if let liveURL {
    if wanted("live.sequential") {
        report(try await live(settings, base: liveURL, inFlight: 1, scenario: "live.sequential"))
    }
    if wanted("live.curl.sequential") {
        report(
            try await live(
                settings, base: liveURL, inFlight: 1, scenario: "live.curl.sequential",
                backend: try CurlBackend(),
                goal: 8))
    }
    if wanted("live.curl.concurrent8") {
        report(
            try await live(
                settings, base: liveURL, inFlight: 8, scenario: "live.curl.concurrent8",
                backend: try CurlBackend(),
                goal: 12))
    }
    if wanted("live.concurrent8") {
        report(try await live(settings, base: liveURL, inFlight: 8, scenario: "live.concurrent8"))
    }
} else {
    FileHandle.standardError.write(
        Data("live.*: skipped, no --url given (scripts/bench starts a server)\n".utf8))
}
if wanted("memory.retained") { report(memoryRetained(settings)) }
if let liveURL, wanted("transfer.memory") { report(try await transferMemory(settings, base: liveURL)) }
