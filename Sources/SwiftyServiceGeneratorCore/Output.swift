import Foundation

/// The generator's options as a file (`swiftyservice-generator.yaml` beside a target's description).
public enum ConfigurationFile {
    /// The names a configuration file may look for, in order, in a target's directory.
    public static let names = ["swiftyservice-generator.yaml", "swiftyservice-generator.yml", "swiftyservice-generator.json"]

    /// The file's settings as text: `name: Petstore`, `grouping: document`, `strict: true`…
    /// - Throws: a syntax error with its line and column, or a setting that is not a scalar.
    public static func read(at path: String) throws -> [String: String] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw DescriptionError(message: "cannot read \(path)")
        }
        let value: JSON
        do {
            value = try TextInput.read([UInt8](data))
        } catch {
            throw DescriptionError(message: "\(path):\(error.position.line):\(error.position.column): \(error.message)")
        }
        if value == .null { return [:] }
        guard let object = value.object else { throw DescriptionError(message: "\(path) holds no settings (a mapping)") }
        var settings: [String: String] = [:]
        for (key, setting) in object.members {
            guard let text = setting.scalarText else {
                throw DescriptionError(message: "\(path): the setting '\(key)' must be a single value")
            }
            settings[key] = text
        }
        return settings
    }
}

/// A directory the generated files go to: files that did not change are left alone (so builds stay
/// incremental), generated files that are no longer made are removed, other files are never touched.
public struct OutputDirectory {
    /// What a write did.
    public struct Changes: Sendable, Equatable {
        /// Files created or changed.
        public var written = 0
        /// Generated files removed because the description no longer makes them.
        public var removed = 0
    }

    /// The directory.
    public let path: String

    /// The directory at `path`; it is created when files are written.
    public init(path: String) { self.path = path }

    /// Writes `files`, removes the generator's files that are not among them.
    public func write(_ files: [GeneratedFile]) throws -> Changes {
        var changes = Changes()
        let root = URL(fileURLWithPath: path)
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        var kept: Set<String> = []
        for file in files {
            let url = root.appendingPathComponent(file.path)
            kept.insert(url.standardizedFileURL.path)
            let data = Data(file.contents.utf8)
            if FileManager.default.contents(atPath: url.path) == data { continue }
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try data.write(to: url, options: .atomic)
            changes.written += 1
        }
        let marker = Data(Generator.marker.utf8)
        let enumerator = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)
        while let url = enumerator?.nextObject() as? URL {
            guard url.pathExtension == "swift", !kept.contains(url.standardizedFileURL.path),
                let handle = try? FileHandle(forReadingFrom: url)
            else { continue }
            let head = try handle.read(upToCount: marker.count) ?? Data()
            try handle.close()
            if head == marker {
                try FileManager.default.removeItem(at: url)
                changes.removed += 1
            }
        }
        return changes
    }
}

extension Generation {
    /// The report `--report` writes: the counts, the generated cases, what was skipped and why, the notes.
    public func reportJSON() throws -> Data {
        let report: [String: Any] = [
            "namespace": namespace,
            "operations": operationCount,
            "generated": generatedOperations,
            "endpointEnums": endpointEnums,
            "models": modelCount,
            "skipped": skipped.map { ["kind": $0.kind.rawValue, "name": $0.name, "reason": $0.reason] },
            "notes": notes,
        ]
        return try JSONSerialization.data(withJSONObject: report, options: [.prettyPrinted, .sortedKeys])
    }
}
