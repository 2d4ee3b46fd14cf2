import Foundation
import SwiftyServiceGeneratorCore

// swiftyservice-generate: endpoint enums, typed endpoints, models and a realm setup from an OpenAPI description.

let usage = """
    USAGE: swiftyservice-generate <description> --output <directory> [options]

    Writes endpoint enums (SwiftyServiceProtocol), typed endpoints, models and the realm setup of an OpenAPI
    3.0/3.1 or Swagger 2.0 description (JSON or YAML, split over files by relative $refs or not).

      <description>              the description: openapi.yaml, openapi.json, swagger.json…
      --output <directory>       where the Swift files go; generated files it no longer makes are removed
      --config <file>            options from a YAML or JSON file (name, grouping, realm, access, layout, strict)
      --name <Name>              the namespace of the API (default: the description's title, UpperCamelCase)
      --grouping tag|document    an endpoint enum per tag (default) or one for the whole description
      --realm <key>              the key of the realm the endpoints use (default: the namespace in lower case)
      --access public|package|internal    (default: public)
      --layout files|grouped     a file per type (default), or three files named after --file-name
      --file-name <Name>         the base name of the grouped layout's files (default: the namespace)
      --samples                  also write every case called with sample values, for tests of the code
      --report <file>            write what was generated and skipped as JSON
      --strict                   fail when anything of the description is skipped
      --verbose                  also print notes (a body the app encodes, a header OpenAPI ignores)
      --help                     this text

    Whatever is skipped is printed with the reason; --strict then fails (exit status 1).
    """

struct UsageError: Error, CustomStringConvertible {
    let description: String
}

func fail(_ message: String, status: Int32) -> Never {
    FileHandle.standardError.write(Data("swiftyservice-generate: \(message)\n".utf8))
    exit(status)
}

struct Options {
    var description: String?
    var output: String?
    var config: String?
    var configuration = GeneratorConfiguration()
    var fileName: String?
    var report: String?
    var strict = false
    var verbose = false
}

func parse(_ arguments: [String]) throws -> Options {
    var options = Options()
    var overrides: [String: String] = [:]
    var index = 0
    func value(_ flag: String) throws -> String {
        index += 1
        guard index < arguments.count else { throw UsageError(description: "\(flag) needs a value") }
        return arguments[index]
    }
    while index < arguments.count {
        let argument = arguments[index]
        switch argument {
        case "--help", "-h":
            print(usage)
            exit(0)
        case "--output", "-o": options.output = try value(argument)
        case "--config": options.config = try value(argument)
        case "--name", "--grouping", "--realm", "--access", "--layout":
            overrides[String(argument.dropFirst(2))] = try value(argument)
        case "--file-name": options.fileName = try value(argument)
        case "--report": options.report = try value(argument)
        case "--samples": options.configuration.samples = true
        case "--strict": options.strict = true
        case "--verbose": options.verbose = true
        default:
            guard !argument.hasPrefix("-"), options.description == nil else {
                throw UsageError(description: "unknown option \(argument)")
            }
            options.description = argument
        }
        index += 1
    }
    if let config = options.config {
        let settings = try ConfigurationFile.read(at: config)
        try apply(settings, to: &options)
    }
    try apply(overrides, to: &options)
    return options
}

func apply(_ settings: [String: String], to options: inout Options) throws {
    for (key, value) in settings.sorted(by: { $0.key < $1.key }) {
        switch key {
        case "name": options.configuration.name = value
        case "realm": options.configuration.realm = value
        case "grouping":
            guard let grouping = GeneratorConfiguration.Grouping(rawValue: value) else {
                throw UsageError(description: "grouping is tag or document, not \(value)")
            }
            options.configuration.grouping = grouping
        case "access":
            guard ["public", "package", "internal"].contains(value) else {
                throw UsageError(description: "access is public, package or internal, not \(value)")
            }
            options.configuration.access = value
        case "layout":
            guard let layout = GeneratorConfiguration.Layout(rawValue: value) else {
                throw UsageError(description: "layout is files or grouped, not \(value)")
            }
            options.configuration.layout = layout
        case "strict": options.strict = value == "true"
        case "fileName": options.fileName = value
        default: throw UsageError(description: "the configuration has an unknown setting '\(key)'")
        }
    }
}

let options: Options
do {
    options = try parse(Array(CommandLine.arguments.dropFirst()))
} catch {
    fail("\(error)\n\n\(usage)", status: 2)
}
guard let descriptionPath = options.description, let output = options.output else {
    fail("give a description and --output\n\n\(usage)", status: 2)
}
var configuration = options.configuration
configuration.groupedFileName = options.fileName

let started = Date()
let generation: Generation
do {
    generation = try Generator.generate(descriptionAt: descriptionPath, configuration: configuration)
} catch {
    fail("\(error)", status: 1)
}

let written: OutputDirectory.Changes
do {
    written = try OutputDirectory(path: output).write(generation.files)
} catch {
    fail("cannot write to \(output): \(error)", status: 1)
}

for skip in generation.skipped { FileHandle.standardError.write(Data("\(skip)\n".utf8)) }
if options.verbose {
    for note in generation.notes { FileHandle.standardError.write(Data("note: \(note)\n".utf8)) }
}
if let report = options.report {
    do {
        try generation.reportJSON().write(to: URL(fileURLWithPath: report))
    } catch {
        fail("cannot write the report to \(report): \(error)", status: 1)
    }
}
let seconds = String(format: "%.2f", Date().timeIntervalSince(started))
print(
    "\(generation.namespace): \(generation.generatedOperations.count) of \(generation.operationCount) operations "
        + "in \(generation.endpointEnums.count) endpoint enum\(generation.endpointEnums.count == 1 ? "" : "s"), "
        + "\(generation.modelCount) models, \(generation.skipped.count) skipped, \(generation.notes.count) notes"
        + (options.verbose || generation.notes.isEmpty ? "" : " (--verbose prints them)") + "; "
        + "\(written.written) of \(generation.files.count) files written, \(written.removed) removed in \(seconds) s"
)
if options.strict, !generation.skipped.isEmpty {
    fail("--strict: \(generation.skipped.count) part(s) of the description skipped (listed above)", status: 1)
}
