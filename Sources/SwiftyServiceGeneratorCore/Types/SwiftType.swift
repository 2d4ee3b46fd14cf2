/// A Swift type a schema maps to.
indirect enum SwiftType: Equatable {
    case string
    /// `Int`, `Int32` or `Int64`.
    case integer(String)
    /// `Double` or `Float`.
    case number(String)
    case bool
    /// `Date`; `dateOnly` for `format: date`, written `2024-05-01`.
    case date(dateOnly: Bool)
    case uuid
    /// `Data`: base64 text in JSON (`format: byte`), raw bytes in a body (`format: binary`).
    case data
    /// Any JSON value: the namespace's `JSONValue`.
    case json
    case array(SwiftType)
    case dictionary(SwiftType)
    /// A generated type, by its name from the top level (`Pet`, `Pet.Status`).
    case model(String, ModelShape)

    /// The type as Swift spells it; `namespace` qualifies `JSONValue`.
    func spelled(_ namespace: String) -> String {
        switch self {
        case .string: "String"
        case let .integer(name), let .number(name): name
        case .bool: "Bool"
        case .date: "Date"
        case .uuid: "UUID"
        case .data: "Data"
        case .json: "\(namespace).JSONValue"
        case let .array(element): "[\(element.spelled(namespace))]"
        case let .dictionary(value): "[String: \(value.spelled(namespace))]"
        case let .model(name, _): name
        }
    }

    /// The type behind aliases.
    var underlying: SwiftType {
        if case let .model(_, .alias(type)) = self { return type.underlying }
        return self
    }

    /// Whether values are written as one piece of text in a URL or header (numbers, strings, enums, dates).
    var isScalar: Bool {
        switch underlying {
        case .string, .integer, .number, .bool, .date, .uuid: true
        case .model(_, .stringEnum), .model(_, .intEnum): true
        default: false
        }
    }
}

/// What kind of generated type a model is, as far as encoding its values needs to know.
indirect enum ModelShape: Equatable {
    case object
    case stringEnum
    case intEnum
    case union
    case alias(SwiftType)
}

/// A generated type: a struct, an enum, or a type alias, with the types nested in it.
final class ModelDecl {
    struct Property {
        var name: String
        var key: String
        var type: SwiftType
        var optional: Bool
        var doc: String?
        var deprecated: Bool
    }

    struct Case {
        var name: String
        var type: SwiftType
        /// The discriminator values that select this case.
        var discriminatorValues: [String]
    }

    enum Body {
        case structure(properties: [Property], additionalProperties: SwiftType?)
        case stringEnum(cases: [(name: String, value: String)], unknown: String)
        case intEnum(cases: [(name: String, value: Int64)], unknown: String)
        /// `oneOf`/`anyOf`; `discriminator` names the property whose value chooses the case.
        case union(cases: [Case], discriminator: String?)
        case alias(SwiftType)
        /// Only holds nested types: an endpoint enum's operation types.
        case namespace
    }

    let name: String
    let qualifiedName: String
    var doc: String?
    /// What the comment says when the schema has no description: where the type comes from.
    var origin: String?
    var deprecated = false
    var body: Body = .alias(.json)
    var nested: [ModelDecl] = []
    /// Names taken in this type's scope: nested types.
    var nestedNames: NameScope
    /// Whether a union is boxed (`indirect`) because it contains itself by value.
    var isIndirect = false
    /// Whether a struct is written as a final class, because it contains itself by value.
    var isReference = false

    init(name: String, qualifiedName: String, reserved: Set<String>) {
        self.name = name
        self.qualifiedName = qualifiedName
        nestedNames = NameScope(reserved: reserved)
    }

    var shape: ModelShape {
        switch body {
        case .structure, .namespace: .object
        case .stringEnum: .stringEnum
        case .intEnum: .intEnum
        case .union: .union
        case let .alias(type): .alias(type)
        }
    }
}
