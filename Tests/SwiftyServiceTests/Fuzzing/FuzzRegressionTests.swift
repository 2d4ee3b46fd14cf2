import Foundation
import Testing

/// Every input the fuzzers kept (Fuzz/Corpus) and every crash they found (Fuzz/Crashes), run again through
/// the same targets: a fixed defect stays fixed, and the rules hold for the inputs that reach the most code.
@Suite struct FuzzRegressionTests {
    static let fuzzFolder = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fuzz")

    static func inputs(of target: String) -> [URL] {
        ["Corpus", "Crashes"].flatMap { kind -> [URL] in
            let folder = fuzzFolder.appendingPathComponent(kind).appendingPathComponent(target)
            let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
            return names.sorted().map { folder.appendingPathComponent($0) }
        }
    }

    @Test(arguments: FuzzTargets.all.keys.sorted())
    func keptInputsStillHoldTheRules(_ target: String) async throws {
        let run = try #require(FuzzTargets.all[target])
        let inputs = Self.inputs(of: target)
        #expect(!inputs.isEmpty, "Fuzz/Corpus/\(target) holds the inputs Fuzz/run --keep kept")
        for input in inputs {
            // Seconds of parsing under ThreadSanitizer would hold a thread of the pool that dispatch timers
            // share (2 on this machine), and other suites' timeouts would fire late: let them in.
            await Task.yield()
            do {
                try run(try Data(contentsOf: input))
            } catch {
                Issue.record("\(target) \(input.lastPathComponent): \(error)")
            }
        }
    }

    @Test func theCrashesFoundAreKept() {
        // max-age=-nan once made a response fresh for NaN seconds (fixed: delta-seconds are digits only).
        #expect(Self.inputs(of: "cache-headers").contains { $0.lastPathComponent == "max-age-nan" })
    }
}
