/// A value read from a JSON or YAML document: what an OpenAPI description is made of.
///
/// Objects keep their keys in the document's order, so generated code follows the order the authors chose.
public enum JSON: Sendable, Equatable {
    /// `null`, `~` or nothing.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A whole number that fits 64 bits.
    case integer(Int64)
    /// Any other number.
    case double(Double)
    /// Text.
    case string(String)
    /// A sequence.
    case array([JSON])
    /// A mapping with string keys, in the document's order.
    case object(JSONObject)

    /// The object, if this is one.
    public var object: JSONObject? {
        if case let .object(object) = self { return object }
        return nil
    }

    /// The elements, if this is an array.
    public var array: [JSON]? {
        if case let .array(array) = self { return array }
        return nil
    }

    /// The text, if this is a string.
    public var string: String? {
        if case let .string(string) = self { return string }
        return nil
    }

    /// The value, if this is a bool.
    public var bool: Bool? {
        if case let .bool(bool) = self { return bool }
        return nil
    }

    /// A scalar as the text a document would hold: numbers and bools written out (`version: 1.0` is `"1.0"`).
    public var scalarText: String? {
        switch self {
        case let .string(string): string
        case let .integer(integer): String(integer)
        case let .double(double): JSON.text(of: double)
        case let .bool(bool): bool ? "true" : "false"
        case .null, .array, .object: nil
        }
    }

    /// The number, if this is one.
    public var number: Double? {
        switch self {
        case let .integer(integer): Double(integer)
        case let .double(double): double
        default: nil
        }
    }

    /// The member at `key`, if this is an object that has it.
    public subscript(key: String) -> JSON? { object?[key] }

    /// A double as a document writes it: `1.0`, `0.5`, `1e+100`.
    static func text(of double: Double) -> String {
        if double.isNaN { return ".nan" }
        if double.isInfinite { return double < 0 ? "-.inf" : ".inf" }
        return double.description
    }
}

/// A JSON object: members in the document's order, looked up by key.
public struct JSONObject: Sendable, Equatable {
    /// A member: its key and value.
    public typealias Member = (key: String, value: JSON)

    /// The members in the document's order.
    public let members: [Member]
    /// Key → index, for objects large enough that a scan would cost (`paths`, `components/schemas`).
    private let index: [String: Int]?

    /// An object of these members; a key given twice keeps its first place and its last value.
    public init(_ members: [Member]) {
        if members.count > 12 {
            var index: [String: Int] = [:]
            index.reserveCapacity(members.count)
            var unique: [Member] = []
            unique.reserveCapacity(members.count)
            for member in members {
                if let at = index[member.key] {
                    unique[at].value = member.value
                } else {
                    index[member.key] = unique.count
                    unique.append(member)
                }
            }
            self.members = unique
            self.index = index
        } else {
            var unique: [Member] = []
            unique.reserveCapacity(members.count)
            for member in members {
                if let at = unique.firstIndex(where: { $0.key == member.key }) {
                    unique[at].value = member.value
                } else {
                    unique.append(member)
                }
            }
            self.members = unique
            self.index = nil
        }
    }

    /// The value at `key`, if present.
    public subscript(key: String) -> JSON? {
        if let index { return index[key].map { members[$0].value } }
        for member in members where member.key == key { return member.value }
        return nil
    }

    /// The keys in order.
    public var keys: [String] { members.map(\.key) }

    /// How many members there are.
    public var count: Int { members.count }

    /// Whether there are no members.
    public var isEmpty: Bool { members.isEmpty }

    /// Whether two objects have the same members in the same order.
    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        lhs.members.count == rhs.members.count
            && zip(lhs.members, rhs.members).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    }
}

/// Where in a text a problem is: 1-based line and column (columns count characters, not bytes).
public struct TextPosition: Sendable, Equatable, CustomStringConvertible {
    /// The line, from 1.
    public let line: Int
    /// The column, from 1.
    public let column: Int

    /// `3:14`
    public var description: String { "\(line):\(column)" }
}

/// A JSON or YAML text that cannot be read: what is wrong and where.
public struct SyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong, e.g. `mapping values are not allowed here`.
    public let message: String
    /// Where.
    public let position: TextPosition

    /// `line 3, column 14: mapping values are not allowed here`
    public var description: String { "line \(position.line), column \(position.column): \(message)" }
}
