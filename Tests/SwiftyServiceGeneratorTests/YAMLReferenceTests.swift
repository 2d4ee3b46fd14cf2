import Foundation
import Testing

@testable import SwiftyServiceGeneratorCore

/// Every YAML file the generator's tests (and the example) read is read as PyYAML reads it.
///
/// PyYAML (from PyPI, in the `.venv` scripts/test makes; `SWIFTYSERVICE_PYTHON` names its python) reads the
/// files through `yaml_reference.py`, with scalars resolved by the YAML 1.2 core schema as ours are; the
/// values are compared member by member, in order.
@Suite struct YAMLReferenceTests {
    static let testsDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    static let repository = testsDirectory.deletingLastPathComponent().deletingLastPathComponent()

    /// The YAML files under the tests' resources and the examples.
    static func yamlFiles() -> [String] {
        var files: [String] = []
        for directory in [testsDirectory.appendingPathComponent("Resources"), repository.appendingPathComponent("Examples")] {
            let enumerator = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil)
            while let url = enumerator?.nextObject() as? URL {
                if ["yaml", "yml"].contains(url.pathExtension) { files.append(url.path) }
            }
        }
        return files.sorted()
    }

    @Test func everyYAMLFileTheTestsUseReadsAsPyYAMLReadsIt() throws {
        let python = try #require(
            ProcessInfo.processInfo.environment["SWIFTYSERVICE_PYTHON"],
            "scripts/test sets SWIFTYSERVICE_PYTHON to the python of .venv, which has PyYAML")
        let files = Self.yamlFiles()
        #expect(files.count > 2000, "the descriptions' files are where they should be")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [Self.testsDirectory.appendingPathComponent("yaml_reference.py").path]
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        // Written from another thread: the reference prints while it reads, and either pipe can fill.
        let paths = Data(files.joined(separator: "\n").utf8)
        let handle = input.fileHandleForWriting
        let writer = Thread {
            handle.write(paths)
            try? handle.close()
        }
        writer.start()
        let reference = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let lines = reference.split(separator: UInt8(ascii: "\n"))
        try #require(lines.count == files.count, "PyYAML read \(lines.count) of \(files.count) files")
        var differences: [String] = []
        for (file, line) in zip(files, lines) {
            let theirs = try JSONSerialization.jsonObject(with: Data(line)) as! [Any]
            let ours = try YAMLReader.read([UInt8](try Data(contentsOf: URL(fileURLWithPath: file))))
            if let difference = Self.difference(.array(ours), ["a", theirs], at: "") {
                differences.append("\(file): \(difference)")
            }
        }
        #expect(differences.isEmpty, "\(differences.prefix(10).joined(separator: "\n"))")
    }

    /// Where `ours` differs from PyYAML's typed canonical value, if it does.
    static func difference(_ ours: JSON, _ theirs: Any, at path: String) -> String? {
        guard let tagged = theirs as? [Any], let tag = tagged.first as? String else { return "\(path): unreadable reference" }
        switch (tag, ours) {
        case ("n", .null): return nil
        case let ("b", .bool(value)) where (tagged[1] as? Bool) == value: return nil
        case let ("i", .integer(value)) where tagged[1] as? String == String(value): return nil
        case let ("i", .double(value)):
            // Integers past 64 bits are read as the nearest double.
            if let text = tagged[1] as? String, Int64(text) == nil, Double(text) == value { return nil }
        case let ("f", .double(value)):
            let text = tagged[1] as? String
            if text == "nan" && value.isNaN { return nil }
            if text == "inf" && value == .infinity { return nil }
            if text == "-inf" && value == -.infinity { return nil }
            if let text, Double(text) == value { return nil }
        case let ("s", .string(value)) where tagged[1] as? String == value: return nil
        case let ("a", .array(elements)):
            let others = tagged[1] as? [Any] ?? []
            guard elements.count == others.count else {
                return "\(path): \(elements.count) elements, PyYAML \(others.count)"
            }
            for (index, pair) in zip(elements, others).enumerated() {
                if let difference = difference(pair.0, pair.1, at: "\(path)/\(index)") { return difference }
            }
            return nil
        case let ("m", .object(object)):
            let pairs = (tagged[1] as? [[Any]]) ?? []
            let keys = pairs.compactMap { $0.first as? String }
            guard object.keys == keys else { return "\(path): keys \(object.keys), PyYAML \(keys)" }
            for (member, pair) in zip(object.members, pairs) {
                if let difference = difference(member.value, pair[1], at: "\(path)/\(member.key)") { return difference }
            }
            return nil
        default: break
        }
        return "\(path): \(ours), PyYAML \(tagged)"
    }
}
