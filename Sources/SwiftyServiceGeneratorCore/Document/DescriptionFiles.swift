import Foundation

/// Where a value sits: a file and a JSON pointer into it (`/components/schemas/Pet`).
struct Location: Hashable, CustomStringConvertible {
    /// The file's path, as opened.
    let file: String
    /// An RFC 6901 pointer; empty for the whole file.
    let pointer: String

    /// `#/components/schemas/Pet`, or `models/pet.yaml#/Pet` for another file than the root.
    var description: String { "\(file.split(separator: "/").last.map(String.init) ?? file)#\(pointer)" }

    func appending(_ token: String) -> Location {
        Location(file: file, pointer: pointer + "/" + Self.escape(token))
    }

    static func escape(_ token: String) -> String {
        guard token.utf8.contains(where: { $0 == UInt8(ascii: "~") || $0 == UInt8(ascii: "/") }) else { return token }
        return token.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1")
    }

    static func unescape(_ token: Substring) -> String {
        let raw = String(token)
        let text = raw.utf8.contains(UInt8(ascii: "%")) ? raw.removingPercentEncoding ?? raw : raw
        guard text.utf8.contains(UInt8(ascii: "~")) else { return text }
        return text.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
    }

    /// The last token of the pointer (`Pet` of `/components/schemas/Pet`), or the file's name without extension.
    var lastName: String {
        if let last = pointer.split(separator: "/").last { return Self.unescape(last) }
        let name = file.split(separator: "/").last.map(String.init) ?? file
        return name.split(separator: ".").first.map(String.init) ?? name
    }
}

/// A value of the description and where it is, so that the references inside it resolve from there.
struct Node {
    let value: JSON
    let location: Location

    subscript(key: String) -> Node? {
        value[key].map { Node(value: $0, location: location.appending(key)) }
    }

    var members: [(key: String, node: Node)] {
        (value.object?.members ?? []).map { ($0.key, Node(value: $0.value, location: location.appending($0.key))) }
    }

    var elements: [Node] {
        (value.array ?? []).enumerated().map { Node(value: $1, location: location.appending(String($0))) }
    }

    var string: String? { value.string }
    var reference: String? { value.object?["$ref"]?.string }
}

/// Why a description cannot be read, or a reference followed.
struct DescriptionError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

/// The files of a description: the root and every file its references reach, each read once.
final class DescriptionFiles {
    private var files: [String: JSON] = [:]
    let root: Node

    init(rootPath: String) throws {
        let path = URL(fileURLWithPath: rootPath).standardizedFileURL.path
        let value = try Self.read(path)
        files[path] = value
        root = Node(value: value, location: Location(file: path, pointer: ""))
    }

    /// For tests: a description held in memory.
    init(root value: JSON, path: String = "/memory/openapi.yaml") {
        files[path] = value
        root = Node(value: value, location: Location(file: path, pointer: ""))
    }

    private func file(at path: String) throws -> JSON {
        if let cached = files[path] { return cached }
        let value = try Self.read(path)
        files[path] = value
        return value
    }

    private static func read(_ path: String) throws -> JSON {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw DescriptionError(message: "cannot read \(path)")
        }
        do {
            return try TextInput.read([UInt8](data))
        } catch {
            throw DescriptionError(message: "\(path):\(error.position.line):\(error.position.column): \(error.message)")
        }
    }

    /// The files read so far.
    var paths: [String] { files.keys.sorted() }

    /// The node `reference` names, read from `location`'s file; references that lead to references are followed.
    func resolve(_ reference: String, from location: Location) throws -> Node {
        var current = try target(of: reference, from: location)
        var seen: Set<Location> = [current.location]
        while let next = current.reference {
            current = try target(of: next, from: current.location)
            guard seen.insert(current.location).inserted else {
                throw DescriptionError(message: "the reference \(reference) at \(location) leads back to itself")
            }
        }
        return current
    }

    /// The node itself, or what it refers to.
    func resolved(_ node: Node) throws -> Node {
        guard let reference = node.reference else { return node }
        return try resolve(reference, from: node.location)
    }

    private func target(of reference: String, from location: Location) throws -> Node {
        let parts = reference.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
        let filePart = parts.first.map(String.init) ?? ""
        let pointer = parts.count > 1 ? String(parts[1]) : ""
        var path = location.file
        if !filePart.isEmpty {
            if filePart.hasPrefix("http://") || filePart.hasPrefix("https://") {
                throw DescriptionError(message: "the reference \(reference) at \(location) is remote; only files are read")
            }
            let decoded = filePart.removingPercentEncoding ?? filePart
            let base = URL(fileURLWithPath: location.file).deletingLastPathComponent()
            path =
                decoded.hasPrefix("/")
                ? URL(fileURLWithPath: decoded).standardizedFileURL.path
                : base.appendingPathComponent(decoded).standardizedFileURL.path
        }
        var value = try file(at: path)
        var tokens: [String] = []
        for token in pointer.split(separator: "/", omittingEmptySubsequences: false).dropFirst() {
            let key = Location.unescape(token)
            tokens.append(key)
            switch value {
            case let .object(object) where object[key] != nil: value = object[key]!
            case let .array(array) where Int(key).map(array.indices.contains) == true: value = array[Int(key)!]
            default:
                throw DescriptionError(message: "the reference \(reference) at \(location) names nothing in \(path)")
            }
        }
        let canonical = tokens.isEmpty ? "" : "/" + tokens.map(Location.escape).joined(separator: "/")
        return Node(value: value, location: Location(file: path, pointer: canonical))
    }
}
