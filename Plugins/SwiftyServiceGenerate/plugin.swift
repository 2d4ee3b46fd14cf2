import Foundation
import PackagePlugin

/// Writes the endpoint enums and models of a target's OpenAPI description into the target, to be committed:
///
///     swift package --allow-writing-to-package-directory swiftyservice-generate --target API
///
/// The description is `openapi.yaml`, `openapi.yml` or `openapi.json` in the target's directory (or the one
/// `--description <path>` names; a description in the target's directory needs `exclude:` in the manifest, or
/// SwiftPM warns about a file it does not handle), the options those of `swiftyservice-generator.yaml` beside it;
/// the code goes to `Generated/` in the target. Other arguments (`--grouping document`, `--strict`) go to
/// `swiftyservice-generate`.
@main struct SwiftyServiceGenerate: CommandPlugin {
    static let descriptionNames = ["openapi.yaml", "openapi.yml", "openapi.json"]
    static let configurationNames = [
        "swiftyservice-generator.yaml", "swiftyservice-generator.yml", "swiftyservice-generator.json",
    ]

    func performCommand(context: PluginContext, arguments: [String]) async throws {
        var extractor = ArgumentExtractor(arguments)
        let names = extractor.extractOption(named: "target")
        let descriptionOption = extractor.extractOption(named: "description").last
        let passed = extractor.remainingArguments
        let targets = try (names.isEmpty ? context.package.targets : context.package.targets(named: names))
            .compactMap { $0 as? SourceModuleTarget }
        let tool = try context.tool(named: "swiftyservice-generate").url
        var generated = 0
        for target in targets {
            let directory = target.directoryURL
            let description =
                descriptionOption.map { URL(fileURLWithPath: $0, relativeTo: context.package.directoryURL) }
                ?? Self.descriptionNames.map { directory.appendingPathComponent($0) }
                .first { FileManager.default.fileExists(atPath: $0.path) }
            guard let description else {
                if !names.isEmpty {
                    throw PluginError(
                        "\(target.name) has no \(Self.descriptionNames.joined(separator: ", ")); name one with --description")
                }
                continue
            }
            var arguments = [description.path, "--output", directory.appendingPathComponent("Generated").path]
            if let configuration = Self.configurationNames.map({ directory.appendingPathComponent($0) })
                .first(where: { FileManager.default.fileExists(atPath: $0.path) })
            {
                arguments += ["--config", configuration.path]
            }
            let process = Process()
            process.executableURL = tool
            process.arguments = arguments + passed
            try process.run()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else {
                throw PluginError("swiftyservice-generate failed for \(target.name) (status \(process.terminationStatus))")
            }
            generated += 1
        }
        if generated == 0 { throw PluginError("no target has an OpenAPI description; name one with --target") }
    }
}

struct PluginError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
