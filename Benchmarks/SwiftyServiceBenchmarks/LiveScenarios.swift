import Foundation

/// The live scenarios of one mode (`sequential`: 1 in flight, `concurrent8`: 8), from one set of rounds.
func liveScenarios(_ settings: Settings, base: URL, inFlight: Int, wanted: (String) -> Bool) throws
    -> [Outcome]
{
    let mode = inFlight == 1 ? "sequential" : "concurrent\(inFlight)"
    // The scenarios of the mode, the clients each compares, and how.
    let scenarios: [(name: String, clients: [LiveClient], outcome: (LiveRounds) -> Outcome)] = [
        (
            "live.\(mode)", [.urlSession, .rawURLSession],
            { $0.throughput("live.\(mode)", .urlSession, against: .rawURLSession, goal: 0.97) }
        ),
        (
            "live.curl.\(mode)", [.curl, .rawURLSession],
            {
                $0.throughput(
                    "live.curl.\(mode)", .curl, against: .rawURLSession, goal: inFlight == 1 ? 8 : 12)
            }
        ),
        // At 8 in flight reported without a goal: they include the hand-over between the cooperative pool and
        // the libcurl thread, which no backend can remove; the `.async` scenarios hold that part to its floor.
        (
            "live.curl.\(mode).libcurl", [.curl, .rawLibcurl],
            {
                $0.throughput(
                    "live.curl.\(mode).libcurl", .curl, against: .rawLibcurl, goal: inFlight == 1 ? 0.7 : nil)
            }
        ),
        (
            "live.curl.\(mode).cpu", [.curl, .rawLibcurl],
            { $0.cpu("live.curl.\(mode).cpu", .curl, against: .rawLibcurl, goal: inFlight == 1 ? 1.5 : nil) }
        ),
        (
            "live.curl.\(mode).connections", [.curl],
            { $0.connections("live.curl.\(mode).connections", .curl, goal: Double(inFlight)) }
        ),
        // Against the floor of any async client: libcurl's loop on a thread, awaited by plain tasks. The goals
        // are for 8 in flight; one at a time the figures are reported.
        (
            "live.curl.\(mode).async", [.curl, .rawLibcurlAsync],
            {
                $0.throughput(
                    "live.curl.\(mode).async", .curl, against: .rawLibcurlAsync, goal: inFlight > 1 ? 0.85 : nil)
            }
        ),
        (
            "live.curl.\(mode).async.cpu", [.curl, .rawLibcurlAsync],
            {
                $0.cpu(
                    "live.curl.\(mode).async.cpu", .curl, against: .rawLibcurlAsync, goal: inFlight > 1 ? 1.25 : nil)
            }
        ),
        // What `CurlBackend.executor` saves, against the same raw libcurl (a goal for its CPU at 8 in flight).
        (
            "live.curl.executor.\(mode).libcurl", [.curlExecutor, .rawLibcurl],
            {
                $0.throughput(
                    "live.curl.executor.\(mode).libcurl", .curlExecutor, against: .rawLibcurl, goal: nil)
            }
        ),
        (
            "live.curl.executor.\(mode).cpu", [.curlExecutor, .rawLibcurl],
            {
                $0.cpu(
                    "live.curl.executor.\(mode).cpu", .curlExecutor, against: .rawLibcurl,
                    goal: inFlight > 1 ? 1.5 : nil)
            }
        ),
        // The executor's own floor, without a goal: libcurl's loop as the executor of tasks that await it through
        // a continuation, against the same loop alone — what Swift's part of `curl-executor` costs by itself.
        (
            "live.floor.executor.\(mode).cpu", [.rawLibcurlExecutor, .rawLibcurl],
            {
                $0.cpu(
                    "live.floor.executor.\(mode).cpu", .rawLibcurlExecutor, against: .rawLibcurl, goal: nil)
            }
        ),
        (
            "live.default.\(mode)", [.defaultBackend, .rawURLSession],
            { $0.throughput("live.default.\(mode)", .defaultBackend, against: .rawURLSession, goal: 4) }
        ),
    ]
    // The connection count is a goal at 8 in flight only (sequentially there is nothing to churn); the floor of
    // the executor is measured where its goal is.
    let chosen = scenarios.filter {
        let eightInFlightOnly = $0.name.hasSuffix(".connections") || $0.name.hasPrefix("live.floor.")
        return wanted($0.name) && (eightInFlightOnly ? inFlight > 1 : true)
    }
    guard !chosen.isEmpty else { return [] }
    let rounds = try LiveRounds(
        settings, base: base, inFlight: inFlight, clients: Set(chosen.flatMap(\.clients)))
    return chosen.map { $0.outcome(rounds) }
}

/// The child's side of ``LiveRounds``: runs the client the arguments name and prints its figures.
func liveClientMain(_ arguments: ArraySlice<String>) async -> Int32 {
    func value(_ name: String) -> String? {
        arguments.firstIndex(of: name).flatMap {
            arguments.index(after: $0) < arguments.endIndex ? arguments[$0 + 1] : nil
        }
    }
    guard let client = value("--live-client").flatMap(LiveClient.init(rawValue:)),
        let base = value("--url").flatMap(URL.init(string:)),
        let inFlight = value("--in-flight").flatMap(Int.init),
        let warmUp = value("--warm-up").flatMap(Double.init),
        let window = value("--window").flatMap(Double.init)
    else {
        FileHandle.standardError.write(Data("live client: bad arguments \(Array(arguments))\n".utf8))
        return 2
    }
    do {
        let figures = try await runLiveClient(
            client, base: base, inFlight: inFlight, warmUp: warmUp, window: window,
            curlThreads: value("--curl-threads").flatMap(Int.init) ?? 1,
            hosts: value("--hosts").flatMap(Int.init) ?? 1,
            caFile: value("--ca").map { URL(fileURLWithPath: $0) },
            busyNanoseconds: value("--busy-ns").flatMap(UInt64.init) ?? 0)
        print(figures.line)
        return 0
    } catch {
        FileHandle.standardError.write(Data("live client \(client.rawValue): \(error)\n".utf8))
        return 1
    }
}
