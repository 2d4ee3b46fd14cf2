import Foundation

/// The live scenarios' measurements: every client in a process of its own (this executable again, with
/// `--live-client`), one after the other in rounds whose order turns each round, medians over the rounds.
/// Ratios compare clients measured in the same rounds, so load on the shared machine falls on both alike.
struct LiveRounds {
    let settings: Settings
    let base: URL
    let inFlight: Int
    /// More arguments for each client's process (`--ca FILE`).
    let clientArguments: [String]
    /// Where nginx counts the connections it accepted (its plain listener); `base` when `nil`.
    let statusBase: URL?
    /// Each client's figures, one per round.
    private(set) var figures: [LiveClient: [LiveFigures]] = [:]

    init(
        _ settings: Settings, base: URL, inFlight: Int, clients: Set<LiveClient>, clientArguments: [String] = [],
        statusBase: URL? = nil
    ) throws {
        self.settings = settings
        self.base = base
        self.inFlight = inFlight
        self.clientArguments = clientArguments
        self.statusBase = statusBase
        var order = LiveClient.allCases.filter(clients.contains)
        for _ in 0..<settings.liveRounds {
            for client in order { figures[client, default: []].append(try measure(client)) }
            order.append(order.removeFirst())
        }
    }

    private func measure(_ client: LiveClient) throws -> LiveFigures {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        child.arguments = [
            "--live-client", client.rawValue, "--in-flight", "\(inFlight)", "--url", base.absoluteString,
            "--warm-up", "\(settings.liveWarmUp)", "--window", "\(settings.liveWindow)",
        ] + clientArguments
        let output = Pipe()
        child.standardOutput = output
        let acceptedBefore = acceptedConnections(base: statusBase ?? base)
        try child.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        child.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        guard child.terminationStatus == 0,
            var figures = text.split(separator: "\n").lazy.compactMap(LiveFigures.init(line:)).first
        else {
            throw LiveClientFailed(client: client, output: text)
        }
        // Minus the connection that read the count after.
        if let acceptedBefore, let acceptedAfter = acceptedConnections(base: statusBase ?? base) {
            figures.connections = acceptedAfter - acceptedBefore - 1
        }
        return figures
    }

    func median(_ client: LiveClient, _ figure: (LiveFigures) -> Double) -> Double {
        SwiftyServiceBenchmarks.median((figures[client] ?? []).map(figure))
    }

    /// `ours ÷ baseline` in each round: the spread a single ratio hides.
    func ratioRange(_ ours: LiveClient, _ baseline: LiveClient, _ figure: (LiveFigures) -> Double) -> String {
        let ratios = zip(figures[ours] ?? [], figures[baseline] ?? []).map { figure($0) / figure($1) }
        guard let low = ratios.min(), let high = ratios.max() else { return "" }
        return String(format: "rounds %.2f–%.2f", low, high)
    }

    /// `ours` req/s against `baseline`'s, CPU per request of both in the note.
    func throughput(_ scenario: String, _ ours: LiveClient, against baseline: LiveClient, goal: Double?)
        -> Outcome
    {
        Outcome(
            scenario: scenario, ours: median(ours, \.perSecond), baseline: median(baseline, \.perSecond),
            unit: .requestsPerSecond, goal: goal, higherIsBetter: true,
            note: String(
                format: "CPU %.0f µs/req vs %.0f", median(ours, \.cpuMicroseconds),
                median(baseline, \.cpuMicroseconds))
                + "; \(ratioRange(ours, baseline, \.perSecond)); \(settings.liveRounds) rounds, a process per client"
        )
    }

    /// `ours`' CPU per request against `baseline`'s.
    func cpu(_ scenario: String, _ ours: LiveClient, against baseline: LiveClient, goal: Double?) -> Outcome {
        Outcome(
            scenario: scenario, ours: median(ours, \.cpuMicroseconds),
            baseline: median(baseline, \.cpuMicroseconds),
            unit: .microsecondsPerRequest, goal: goal, higherIsBetter: false,
            note: ratioRange(ours, baseline, \.cpuMicroseconds))
    }

    /// The most connections `client`'s process opened in any round, warm-up included.
    func connections(_ scenario: String, _ client: LiveClient, goal: Double) -> Outcome {
        let counts = (figures[client] ?? []).compactMap(\.connections)
        return Outcome(
            scenario: scenario, ours: counts.max().map(Double.init) ?? .nan, baseline: nil,
            unit: .connections,
            goal: goal, higherIsBetter: false,
            note: counts.isEmpty
                ? "the server counts no connections (nginx only)"
                : "per round, warm-up included: \(counts.map(String.init).joined(separator: ", "))")
    }
}

struct LiveClientFailed: Error, CustomStringConvertible {
    let client: LiveClient
    let output: String
    var description: String { "the \(client.rawValue) client's process failed: \(output)" }
}
