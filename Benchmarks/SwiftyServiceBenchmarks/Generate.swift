import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// generate.large: the OpenAPI generator (the release build of swiftyservice-generate, which scripts/bench builds)
// on a description of 10 MB and more — GitHub's REST description from the tests' resources three times over,
// paths, components and operation ids renamed apart — in a process of its own: wall seconds and peak RSS.
// Then the largest real description the tests use (Stripe's, 4 MB of YAML) for the same figures, and on full
// runs the compile time of the code generated from it, in a package of its own against this checkout.

/// What a child process took: wall seconds and its peak resident memory.
struct ChildCost {
    let seconds: Double
    let peakBytes: Int
    let status: Int32
}

/// Runs `executable` with `arguments` (output discarded) and measures it: `wait4` gives that child's own peak RSS,
/// which `Process` (it reaps children itself) does not.
func measureChild(_ executable: String, _ arguments: [String]) throws -> ChildCost {
    #if os(Linux)
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var pid = pid_t()
    let start = now()
    let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
    guard spawned == 0 else { throw GenerateBenchError("cannot run \(executable): error \(spawned)") }
    var status: Int32 = 0
    var usage = rusage()
    guard wait4(pid, &status, 0, &usage) == pid else { throw GenerateBenchError("wait4 failed for \(executable)") }
    let seconds = Double(now() - start) / 1e9
    return ChildCost(seconds: seconds, peakBytes: Int(usage.ru_maxrss) * 1024, status: (status >> 8) & 0xFF)
    #else
    throw GenerateBenchError("generate.* measure child processes with Linux's wait4")
    #endif
}

struct GenerateBenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// GitHub's description `copies` times over, each copy's paths under `/copyN`, its components and operation ids
/// renamed apart, references rewritten to match: one document of `copies` times the operations.
func multipliedDescription(_ source: URL, copies: Int) throws -> Data {
    let original = try Data(contentsOf: source)
    let document = try JSONSerialization.jsonObject(with: original) as! [String: Any]
    var paths: [String: Any] = [:]
    var components: [String: [String: Any]] = [:]
    for copy in 1...copies {
        var text = String(decoding: original, as: UTF8.self)
        for section in ["schemas", "parameters", "responses", "examples", "headers", "requestBodies"] {
            text = text.replacingOccurrences(of: "\"#/components/\(section)/", with: "\"#/components/\(section)/c\(copy)-")
        }
        text = text.replacingOccurrences(of: "\"operationId\": \"", with: "\"operationId\": \"c\(copy)/")
        text = text.replacingOccurrences(of: "\"operationId\":\"", with: "\"operationId\":\"c\(copy)/")
        let renamed = try JSONSerialization.jsonObject(with: Data(text.utf8)) as! [String: Any]
        for (path, item) in renamed["paths"] as? [String: Any] ?? [:] { paths["/copy\(copy)\(path)"] = item }
        for (section, entries) in renamed["components"] as? [String: Any] ?? [:] {
            for (name, value) in entries as? [String: Any] ?? [:] {
                components[section, default: [:]]["c\(copy)-\(name)"] = value
            }
        }
    }
    var combined = document
    combined["paths"] = paths
    combined["components"] = components
    return try JSONSerialization.data(withJSONObject: combined, options: [.sortedKeys])
}

func generateLarge(_ settings: Settings, generator: String, descriptions: URL) throws -> [Outcome] {
    let work = FileManager.default.temporaryDirectory.appendingPathComponent("generate-bench-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: work) }
    var outcomes: [Outcome] = []

    let large = work.appendingPathComponent("github-times-3.json")
    try multipliedDescription(descriptions.appendingPathComponent("github/api.github.com.json"), copies: 3).write(to: large)
    let megabytes = Double(try FileManager.default.attributesOfItem(atPath: large.path)[.size] as! Int) / 1_000_000
    var costs: [ChildCost] = []
    for run in 0..<(settings.quick ? 1 : 5) {
        let cost = try measureChild(generator, [large.path, "--output", work.appendingPathComponent("large-\(run)").path])
        guard cost.status == 0 else { throw GenerateBenchError("swiftyservice-generate failed on \(large.path)") }
        costs.append(cost)
    }
    let seconds = median(costs.map(\.seconds))
    let peak = Double(costs.map(\.peakBytes).max() ?? 0) / 1_048_576
    var row = Outcome(
        scenario: "generate.large", ours: seconds, baseline: nil, unit: .seconds, goal: 5, higherIsBetter: false)
    row.note = String(format: "%.1f MB of JSON (GitHub's description ×3, 2,313 operations), median of %d", megabytes, costs.count)
    outcomes.append(row)
    var memory = Outcome(
        scenario: "generate.large.rss", ours: peak, baseline: nil, unit: .megabytes, goal: 500, higherIsBetter: false)
    memory.note = "peak RSS of the generator's process"
    outcomes.append(memory)

    let stripe = descriptions.appendingPathComponent("stripe/spec3.yaml")
    let client = work.appendingPathComponent("Client")
    let sources = client.appendingPathComponent("Sources/StripeClient")
    let real = try measureChild(generator, [stripe.path, "--output", sources.path])
    guard real.status == 0 else { throw GenerateBenchError("swiftyservice-generate failed on \(stripe.path)") }
    var realRow = Outcome(
        scenario: "generate.stripe", ours: real.seconds, baseline: nil, unit: .seconds, goal: nil, higherIsBetter: false)
    realRow.note = String(
        format: "the largest real description: Stripe's, 4.2 MB of YAML, 468 operations; peak RSS %.0f MB",
        Double(real.peakBytes) / 1_048_576)
    outcomes.append(realRow)

    guard !settings.quick else {
        FileHandle.standardError.write(Data("generate.large.compile: skipped under --quick (minutes)\n".utf8))
        return outcomes
    }
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
    try """
    // swift-tools-version: 6.2
    import PackageDescription

    let package = Package(
        name: "StripeClient",
        platforms: [.macOS(.v12)],
        dependencies: [.package(name: "SwiftyService", path: "\(root)")],
        targets: [
            .target(name: "StripeClient", dependencies: [.product(name: "SwiftyService", package: "SwiftyService")])
        ],
        swiftLanguageModes: [.v6]
    )
    """.write(to: client.appendingPathComponent("Package.swift"), atomically: true, encoding: .utf8)
    // The library first, then only the generated code is timed (a debug build, as an app's would be).
    let swift = "/usr/bin/env"
    let library = try measureChild(swift, ["swift", "build", "--package-path", client.path, "--target", "SwiftyService"])
    guard library.status == 0 else { throw GenerateBenchError("the library did not build in \(client.path)") }
    let compile = try measureChild(swift, ["swift", "build", "--package-path", client.path, "--target", "StripeClient"])
    guard compile.status == 0 else { throw GenerateBenchError("Stripe's generated client did not compile") }
    var compileRow = Outcome(
        scenario: "generate.large.compile", ours: compile.seconds, baseline: nil, unit: .seconds, goal: nil,
        higherIsBetter: false)
    compileRow.note = "Stripe's generated client, a debug build of its own target (the library built before)"
    outcomes.append(compileRow)
    return outcomes
}
