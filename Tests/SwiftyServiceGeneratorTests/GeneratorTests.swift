import Foundation
import Testing

@testable import SwiftyServiceGeneratorCore

/// What the generator makes of descriptions: every operation a case or a printed skip, the same code every
/// time, formatted as the project's code.
@Suite struct GeneratorTests {
    static let resources = YAMLReferenceTests.testsDirectory.appendingPathComponent("Resources")
    static let zoo = resources.appendingPathComponent("Fixtures/zoo/openapi.yaml").path
    static let committedZoo = YAMLReferenceTests.repository.appendingPathComponent("Tests/GeneratedClientTests/Zoo")

    /// The descriptions of descriptions.txt: name and root file.
    static func descriptions() throws -> [(name: String, path: String)] {
        let list = try String(
            contentsOf: resources.appendingPathComponent("Descriptions/descriptions.txt"), encoding: .utf8)
        return list.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count == 2, !line.hasPrefix("#") else { return nil }
            return (String(fields[0]), resources.appendingPathComponent("Descriptions/\(fields[1])").path)
        }
    }

    static func zooConfiguration() -> GeneratorConfiguration {
        var configuration = GeneratorConfiguration()
        configuration.samples = true
        return configuration
    }

    @Test func theCommittedZooClientIsWhatTheGeneratorWritesNow() throws {
        let generation = try Generator.generate(descriptionAt: Self.zoo, configuration: Self.zooConfiguration())
        var committed: Set<String> = []
        let enumerator = FileManager.default.enumerator(at: Self.committedZoo, includingPropertiesForKeys: nil)
        while let url = enumerator?.nextObject() as? URL {
            guard url.pathExtension == "swift" else { continue }
            committed.insert(String(url.path.dropFirst(Self.committedZoo.path.count + 1)))
        }
        let regenerate =
            "regenerate it: swift run swiftyservice-generate Tests/SwiftyServiceGeneratorTests/Resources/Fixtures/zoo/openapi.yaml --output Tests/GeneratedClientTests/Zoo --samples"
        #expect(Set(generation.files.map(\.path)) == committed, "\(regenerate)")
        for file in generation.files {
            let current = try? String(contentsOf: Self.committedZoo.appendingPathComponent(file.path), encoding: .utf8)
            #expect(current == file.contents, "\(file.path) is out of date; \(regenerate)")
        }
    }

    @Test func everyOperationOfEveryDescriptionIsACaseOrASkipWithItsReason() throws {
        var counts: [String: Int] = [:]
        for (name, path) in try Self.descriptions() {
            let generation = try Generator.generate(descriptionAt: path, configuration: GeneratorConfiguration())
            let skippedOperations = generation.skipped.filter { $0.kind == .operation }
            #expect(
                generation.generatedOperations.count + skippedOperations.count == generation.operationCount, "\(name)")
            #expect(generation.skipped.allSatisfy { !$0.reason.isEmpty }, "\(name)")
            #expect(Set(generation.generatedOperations).count == generation.generatedOperations.count, "\(name)")
            counts[name] = generation.operationCount
        }
        // What each description declares (check_requests.py counts them again, reading the descriptions itself).
        #expect(counts["petstore"] == 3)
        #expect(counts["uspto"] == 3)
        #expect(counts["link"] == 6)
        #expect(counts["webhook"] == 0)
        #expect(counts["github"] == 771)
        #expect(counts["stripe"] == 468)
        #expect(counts["openai"] == 288)
        #expect(counts["digitalocean"] == 659)
    }

    @Test func whatCannotBeCalledIsSkippedWithItsReason() throws {
        let generation = try Generator.generate(descriptionAt: Self.zoo, configuration: GeneratorConfiguration())
        #expect(
            generation.skipped.map(\.description) == [
                "skipped security scheme certificate: mutual TLS is set up with the realm's TLS policy (setTLSPolicy), not a header",
                "skipped webhook animalBorn: a webhook is a request the API sends to its users; a client has nothing to call",
            ])
        #expect(generation.notes == ["GET /animals: the header parameter Accept is ignored, as OpenAPI says"])
    }

    @Test func groupingByDocumentMakesOneEnum() throws {
        var configuration = GeneratorConfiguration()
        configuration.grouping = .document
        configuration.name = "Menagerie"
        configuration.layout = .grouped
        let generation = try Generator.generate(descriptionAt: Self.zoo, configuration: configuration)
        #expect(generation.endpointEnums == ["MenagerieService"])
        #expect(generation.files.map(\.path) == ["Menagerie.swift", "MenagerieEndpoints.swift", "MenagerieModels.swift"])
        let endpoints = try #require(generation.files.first { $0.path == "MenagerieEndpoints.swift" }?.contents)
        #expect(endpoints.contains("case animalsList("))
        #expect(endpoints.contains("public var realm: ServiceRealm { Menagerie.realm }"))
    }

    @Test func theSameDescriptionAlwaysMakesTheSameCode() throws {
        // In processes of their own: a dictionary's order changes from one process to the next.
        let tool = try Self.tool()
        var outputs: [[String: Data]] = []
        for _ in 0..<2 {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("generate-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: directory) }
            let (status, _, _) = try Self.run(
                tool, [Self.resources.appendingPathComponent("Descriptions/openai/openapi.yaml").path, "--output", directory.path])
            #expect(status == 0)
            var files: [String: Data] = [:]
            let enumerator = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil)
            while let url = enumerator?.nextObject() as? URL {
                guard url.pathExtension == "swift" else { continue }
                files[url.lastPathComponent] = try Data(contentsOf: url)
            }
            outputs.append(files)
        }
        #expect(outputs[0].count > 1000)
        #expect(outputs[0] == outputs[1])
    }

    @Test func theGeneratedCodeIsFormattedAsTheProjectsCode() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("generate-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        for name in ["petstore", "petstore-expanded", "uspto", "callback-example", "link-example", "api-with-examples"] {
            let generation = try Generator.generate(
                descriptionAt: Self.resources.appendingPathComponent("Descriptions/oai/\(name).yaml").path,
                configuration: Self.zooConfiguration())
            _ = try OutputDirectory(path: directory.appendingPathComponent(name).path).write(generation.files)
        }
        let configuration = YAMLReferenceTests.repository.appendingPathComponent(".swift-format").path
        for target in [directory.path, Self.committedZoo.path] {
            let (status, output, errors) = try Self.run(
                URL(fileURLWithPath: "/usr/bin/env"),
                ["swift", "format", "lint", "--configuration", configuration, "--recursive", target])
            #expect(status == 0)
            #expect(output.isEmpty && errors.isEmpty, "\(errors)")
        }
    }

    @Test func theArticlesDescriptionIsTheOneItsSamplesAreCompiledAgainst() throws {
        let article = try String(
            contentsOf: YAMLReferenceTests.repository.appendingPathComponent(
                "Sources/SwiftyService/SwiftyService.docc/GeneratingFromOpenAPI.md"),
            encoding: .utf8)
        let start = try #require(article.range(of: "```yaml\n"))
        let end = try #require(article.range(of: "```", range: start.upperBound..<article.endIndex))
        let description = try String(
            contentsOf: YAMLReferenceTests.repository.appendingPathComponent("Tests/DocSampleTests/openapi.yaml"),
            encoding: .utf8)
        #expect(String(article[start.upperBound..<end.lowerBound]) == description)
    }

    // MARK: The command

    @Test func theCommandPrintsWhatItSkipsAndFailsOnItWhenStrict() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("generate-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let tool = try Self.tool()
        let (status, output, errors) = try Self.run(tool, [Self.zoo, "--output", directory.path])
        #expect(status == 0)
        #expect(errors.contains("skipped webhook animalBorn: a webhook is a request the API sends to its users"))
        #expect(output.contains("Zoo: 11 of 11 operations in 3 endpoint enums, 13 models, 2 skipped"))
        let strict = try Self.run(tool, [Self.zoo, "--output", directory.path, "--strict"])
        #expect(strict.status == 1)
        #expect(strict.errors.contains("--strict: 2 part(s) of the description skipped"))
    }

    @Test func theCommandTakesItsOptionsFromAConfigurationFile() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("generate-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let configuration = directory.appendingPathComponent("swiftyservice-generator.yaml")
        try Data("name: Menagerie\ngrouping: document\nrealm: animals\n".utf8).write(to: configuration)
        let output = directory.appendingPathComponent("API")
        let (status, _, _) = try Self.run(
            try Self.tool(), [Self.zoo, "--output", output.path, "--config", configuration.path])
        #expect(status == 0)
        let namespace = try String(contentsOf: output.appendingPathComponent("Menagerie.swift"), encoding: .utf8)
        #expect(namespace.contains(#"public static var realm: ServiceRealm { .get("animals") }"#))
        #expect(FileManager.default.fileExists(atPath: output.appendingPathComponent("MenagerieService.swift").path))

        try Data("name: Menagerie\ncolour: blue\n".utf8).write(to: configuration)
        let wrong = try Self.run(try Self.tool(), [Self.zoo, "--output", output.path, "--config", configuration.path])
        #expect(wrong.status == 2)
        #expect(wrong.errors.contains("the configuration has an unknown setting 'colour'"))
    }

    @Test func aDescriptionThatCannotBeReadIsReportedWithItsLineAndColumn() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("generate-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let broken = directory.appendingPathComponent("openapi.yaml")
        try Data("openapi: 3.0.0\ninfo:\n  title: x\n   version: 1\n".utf8).write(to: broken)
        let (status, _, errors) = try Self.run(try Self.tool(), [broken.path, "--output", directory.path])
        #expect(status == 1)
        #expect(errors.contains("openapi.yaml:4:11: a mapping value is not allowed here"))
    }

    @Test func regeneratingRemovesOnlyTheGeneratorsOwnFilesThatAreGone() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("generate-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let output = OutputDirectory(path: directory.path)
        let marker = Generator.marker
        let first = try output.write([
            GeneratedFile(path: "A.swift", contents: "\(marker) from x\n"),
            GeneratedFile(path: "Models/B.swift", contents: "\(marker) from x\n"),
        ])
        #expect(first == OutputDirectory.Changes(written: 2, removed: 0))
        try Data("// mine\n".utf8).write(to: directory.appendingPathComponent("Mine.swift"))
        let second = try output.write([GeneratedFile(path: "A.swift", contents: "\(marker) from x\n")])
        #expect(second == OutputDirectory.Changes(written: 0, removed: 1))
        #expect(FileManager.default.fileExists(atPath: directory.appendingPathComponent("Mine.swift").path))
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("Models/B.swift").path))
    }

    // MARK: Helpers

    /// The `swiftyservice-generate` executable, built beside the tests.
    static func tool() throws -> URL {
        let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let tool = directory.appendingPathComponent("swiftyservice-generate")
        try #require(FileManager.default.isExecutableFile(atPath: tool.path), "swift build builds it beside the tests")
        return tool
    }

    static func run(_ executable: URL, _ arguments: [String]) throws -> (status: Int32, output: String, errors: String) {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let errorHandle = errors.fileHandleForReading
        let errorData = Locked(Data())
        let reader = Thread { errorData.set(errorHandle.readDataToEndOfFile()) }
        reader.start()
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        while !errorData.isSet { Thread.sleep(forTimeInterval: 0.01) }
        return (
            process.terminationStatus, String(decoding: outputData, as: UTF8.self),
            String(decoding: errorData.value, as: UTF8.self)
        )
    }
}

/// A value set once from another thread.
final class Locked<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    private var written = false

    init(_ value: Value) { stored = value }

    var value: Value { lock.withLock { stored } }
    var isSet: Bool { lock.withLock { written } }

    func set(_ value: Value) {
        lock.withLock {
            stored = value
            written = true
        }
    }
}
