import Foundation
import PackagePlugin

/// Generates a target's endpoint enums and models at build time from the OpenAPI description in the target
/// (`openapi.yaml`, `openapi.yml` or `openapi.json`), with the options of `swiftyservice-generator.yaml` beside
/// it, if there is one. The code goes to three files in the build directory, compiled with the target's own.
@main struct SwiftyServiceGenerator: BuildToolPlugin {
    static let descriptionNames = ["openapi.yaml", "openapi.yml", "openapi.json"]
    static let configurationNames = [
        "swiftyservice-generator.yaml", "swiftyservice-generator.yml", "swiftyservice-generator.json",
    ]

    func createBuildCommands(context: PluginContext, target: Target) async throws -> [Command] {
        guard let target = target as? SourceModuleTarget else { return [] }
        let files = target.sourceFiles.map(\.url)
        guard let description = files.first(where: { Self.descriptionNames.contains($0.lastPathComponent) }) else {
            throw PluginError(
                "the target \(target.name) has no OpenAPI description: add \(Self.descriptionNames.joined(separator: ", or ")) to \(target.directoryURL.path)"
            )
        }
        let configuration = files.first { Self.configurationNames.contains($0.lastPathComponent) }
        let output = context.pluginWorkDirectoryURL.appendingPathComponent("GeneratedSources")
        let base = target.name + "OpenAPI"
        var arguments = [description.path, "--output", output.path]
        if let configuration { arguments += ["--config", configuration.path] }
        arguments += ["--layout", "grouped", "--file-name", base]
        // A description split over files is read again when any of them changes.
        let inputs = files.filter { ["yaml", "yml", "json"].contains($0.pathExtension) }
        return [
            .buildCommand(
                displayName: "Generating endpoints of \(target.name) from \(description.lastPathComponent)",
                executable: try context.tool(named: "swiftyservice-generate").url,
                arguments: arguments,
                inputFiles: inputs,
                outputFiles: ["", "Endpoints", "Models"].map { output.appendingPathComponent(base + $0 + ".swift") })
        ]
    }
}

struct PluginError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
