import Foundation

/// Writes models: structs for objects, enums for enumerations and unions, type aliases for the rest.
struct ModelEmitter {
    let namespace: String
    /// `public `, `package ` or `` (internal).
    let access: String
    /// Whether to add `Hashable` to every model.
    let hashable = true

    private var conformances: String { hashable ? "Codable, Hashable, Sendable" : "Codable, Sendable" }

    func emit(_ decl: ModelDecl, into writer: inout SwiftWriter) {
        writer.doc(decl.doc ?? decl.origin)
        // Not `@available(*, deprecated)`: other generated types refer to it, and each use would warn.
        if decl.deprecated { writer.doc("- Warning: Deprecated by the description.") }
        switch decl.body {
        case let .structure(properties, additional):
            emitStruct(decl, properties, additional, into: &writer)
        case let .stringEnum(cases, unknown):
            emitValueEnum(
                decl, raw: "String", cases.map { ($0.name, SwiftWriter.literal($0.value)) }, unknown, into: &writer)
        case let .intEnum(cases, unknown):
            emitValueEnum(decl, raw: "Int", cases.map { ($0.name, String($0.value)) }, unknown, into: &writer)
        case let .union(cases, discriminator):
            emitUnion(decl, cases, discriminator, into: &writer)
        case let .alias(type):
            writer.line("\(access)typealias \(decl.name) = \(type.spelled(namespace))")
        case .namespace:
            writer.block("\(access)enum \(decl.name)") { writer in emitNested(decl, into: &writer) }
        }
    }

    func emitNested(_ decl: ModelDecl, into writer: inout SwiftWriter) {
        for nested in decl.nested {
            writer.line()
            emit(nested, into: &writer)
        }
    }

    // MARK: Structs

    private func emitStruct(
        _ decl: ModelDecl, _ properties: [ModelDecl.Property], _ additional: SwiftType?, into writer: inout SwiftWriter
    ) {
        // A type that holds itself by value cannot be a struct: it is a final class of constants.
        let kind = decl.isReference ? "final class" : "struct"
        let binding = decl.isReference ? "let" : "var"
        writer.declaration("\(access)\(kind) \(decl.name)", conformances) { writer in
            for property in properties {
                writer.doc(property.doc ?? "The `\(property.key)` member.")
                guard property.deprecated else {
                    writer.line("\(access)\(binding) \(Naming.escaped(property.name)): \(spelled(property))")
                    continue
                }
                // Stored under another name, so that the initializer and Codable do not use what is deprecated.
                writer.line("@available(*, deprecated)")
                if decl.isReference {
                    writer.line("\(access)var \(Naming.escaped(property.name)): \(spelled(property)) { \(Self.storage(property)) }")
                } else {
                    writer.block("\(access)var \(Naming.escaped(property.name)): \(spelled(property))") { writer in
                        writer.line("get { \(Self.storage(property)) }")
                        writer.line("set { \(Self.storage(property)) = newValue }")
                    }
                }
                writer.line("private \(binding) \(Self.storage(property)): \(spelled(property))")
            }
            if let additional {
                writer.doc("The members the description does not name.")
                writer.line("\(access)\(binding) additionalProperties: [String: \(additional.spelled(namespace))]")
            }
            writer.line()
            emitInitializer(properties, additional, into: &writer)
            if decl.isReference, hashable {
                writer.line()
                emitEquality(decl, properties, additional, into: &writer)
            }
            let renamed = properties.contains { $0.name != $0.key || $0.deprecated }
            let datesOnly = properties.contains { Self.isDateOnly($0.type) }
            if renamed || additional != nil || datesOnly {
                writer.line()
                writer.block("enum CodingKeys: String, CodingKey") { writer in
                    for property in properties {
                        let name = Self.storage(property)
                        writer.line(
                            name.replacingOccurrences(of: "`", with: "") == property.key
                                ? "case \(name)" : "case \(name) = \(SwiftWriter.literal(property.key))")
                    }
                }
            }
            if additional != nil || datesOnly {
                writer.line()
                emitDecoding(properties, additional, into: &writer)
                writer.line()
                emitEncoding(properties, additional, into: &writer)
            }
            emitNested(decl, into: &writer)
        }
    }

    private func spelled(_ property: ModelDecl.Property) -> String {
        property.type.spelled(namespace) + (property.optional ? "?" : "")
    }

    private func emitInitializer(
        _ properties: [ModelDecl.Property], _ additional: SwiftType?, into writer: inout SwiftWriter
    ) {
        writer.doc("Creates a value from its members.")
        var parameters = properties.map { property in
            "\(Naming.escaped(property.name)): \(spelled(property))\(property.optional ? " = nil" : "")"
        }
        if let additional { parameters.append("additionalProperties: [String: \(additional.spelled(namespace))] = [:]") }
        if parameters.isEmpty {
            writer.line("\(access)init() {}")
            return
        }
        writer.wrapped("\(access)init", parameters, " {")
        writer.indent { writer in
            for property in properties {
                writer.line("self.\(Self.storage(property)) = \(Naming.escaped(property.name))")
            }
            if additional != nil { writer.line("self.additionalProperties = additionalProperties") }
        }
        writer.line("}")
    }

    private func emitEquality(
        _ decl: ModelDecl, _ properties: [ModelDecl.Property], _ additional: SwiftType?, into writer: inout SwiftWriter
    ) {
        var names = properties.map(Self.storage)
        if additional != nil { names.append("additionalProperties") }
        writer.doc("Whether every member is equal.")
        writer.block("\(access)static func == (lhs: \(decl.name), rhs: \(decl.name)) -> Bool") { writer in
            let comparisons = names.map { "lhs.\($0) == rhs.\($0)" }
            if comparisons.isEmpty {
                writer.line("true")
            } else if writer.fits(comparisons.joined(separator: " && ")) {
                writer.line(comparisons.joined(separator: " && "))
            } else {
                writer.line(comparisons[0])
                writer.indent { writer in
                    for comparison in comparisons.dropFirst() { writer.line("&& " + comparison) }
                }
            }
        }
        writer.line()
        writer.doc("Hashes every member.")
        writer.block("\(access)func hash(into hasher: inout Hasher)") { writer in
            for name in names { writer.line("hasher.combine(\(name))") }
        }
    }

    /// The stored property's name: the property's own, or `_name` behind a deprecated accessor.
    static func storage(_ property: ModelDecl.Property) -> String {
        property.deprecated ? "_" + property.name : Naming.escaped(property.name)
    }

    static func isDateOnly(_ type: SwiftType) -> Bool {
        switch type {
        case .date(dateOnly: true): true
        case let .array(element): isDateOnly(element)
        case let .model(_, .alias(underlying)): isDateOnly(underlying)
        default: false
        }
    }

    private func emitDecoding(
        _ properties: [ModelDecl.Property], _ additional: SwiftType?, into writer: inout SwiftWriter
    ) {
        writer.doc(
            additional != nil
                ? "Reads the value, keeping the members the description does not name." : "Reads the value.")
        writer.block("\(access)init(from decoder: any Decoder) throws") { writer in
            writer.line("let container = try decoder.container(keyedBy: CodingKeys.self)")
            for property in properties {
                let type = property.type.spelled(namespace)
                let method = property.optional ? "decodeIfPresent" : "decode"
                writer.wrapped(
                    "\(Self.storage(property)) = try container.\(method)", ["\(type).self", "forKey: .\(Self.storage(property))"],
                    "")
            }
            if let additional {
                writer.line("var additionalProperties: [String: \(additional.spelled(namespace))] = [:]")
                writer.line("let members = try decoder.container(keyedBy: \(namespace).AnyKey.self)")
                writer.block("for key in members.allKeys where CodingKeys(stringValue: key.stringValue) == nil") {
                    writer in
                    writer.line(
                        "additionalProperties[key.stringValue] = try members.decode(\(additional.spelled(namespace)).self, forKey: key)"
                    )
                }
                writer.line("self.additionalProperties = additionalProperties")
            }
        }
    }

    private func emitEncoding(
        _ properties: [ModelDecl.Property], _ additional: SwiftType?, into writer: inout SwiftWriter
    ) {
        writer.doc("Writes the value.")
        writer.block("\(access)func encode(to encoder: any Encoder) throws") { writer in
            writer.line("var container = encoder.container(keyedBy: CodingKeys.self)")
            for property in properties {
                let name = Self.storage(property)
                let method = property.optional ? "encodeIfPresent" : "encode"
                var value = name
                // `format: date` is written as a date without a time, which the shared encoder does not know.
                if Self.isDateOnly(property.type) {
                    let isArray = if case .array = property.type.underlying { true } else { false }
                    let transform = isArray ? "{ $0.map(\(namespace).dateText) }" : "(\(namespace).dateText)"
                    value =
                        property.optional
                        ? "\(name).map\(transform)" : isArray ? "\(name).map(\(namespace).dateText)" : "\(namespace).dateText(\(name))"
                }
                writer.line("try container.\(method)(\(value), forKey: .\(name))")
            }
            if additional != nil {
                writer.line("var members = encoder.container(keyedBy: \(namespace).AnyKey.self)")
                writer.block("for (key, value) in additionalProperties") { writer in
                    writer.line("try members.encode(value, forKey: \(namespace).AnyKey(stringValue: key))")
                }
            }
        }
    }

    // MARK: Enums

    private func emitValueEnum(
        _ decl: ModelDecl, raw: String, _ cases: [(name: String, value: String)], _ unknown: String,
        into writer: inout SwiftWriter
    ) {
        writer.declaration("\(access)enum \(decl.name)", conformances + ", RawRepresentable") { writer in
            for enumCase in cases { writer.line("case \(Naming.escaped(enumCase.name))") }
            writer.doc("A value this version of the description does not list; kept as it came.")
            writer.line("case \(unknown)(\(raw))")
            writer.line()
            writer.doc("The case of `rawValue`; a value the description does not list is ``\(unknown)(_:)``.")
            writer.block("\(access)init(rawValue: \(raw))") { writer in
                writer.switchBlock("switch rawValue") { writer in
                    for enumCase in cases { writer.line("case \(enumCase.value): self = .\(enumCase.name)") }
                    writer.line("default: self = .\(unknown)(rawValue)")
                }
            }
            writer.line()
            writer.doc("The value as the API writes it.")
            writer.block("\(access)var rawValue: \(raw)") { writer in
                writer.switchBlock("switch self") { writer in
                    for enumCase in cases { writer.line("case .\(enumCase.name): \(enumCase.value)") }
                    writer.line("case let .\(unknown)(value): value")
                }
            }
            emitNested(decl, into: &writer)
        }
    }

    private func emitUnion(
        _ decl: ModelDecl, _ cases: [ModelDecl.Case], _ discriminator: String?, into writer: inout SwiftWriter
    ) {
        let keyword = decl.isIndirect ? "indirect enum" : "enum"
        writer.declaration("\(access)\(keyword) \(decl.name)", conformances) { writer in
            for enumCase in cases {
                writer.line("case \(Naming.escaped(enumCase.name))(\(enumCase.type.spelled(namespace)))")
            }
            writer.line()
            if let discriminator {
                writer.doc("Decodes the case that the `\(discriminator)` member names.")
                writer.block("\(access)init(from decoder: any Decoder) throws") { writer in
                    writer.line("let container = try decoder.container(keyedBy: \(namespace).AnyKey.self)")
                    writer.line(
                        "let kind = try container.decode(String.self, forKey: \(namespace).AnyKey(stringValue: \(SwiftWriter.literal(discriminator))))"
                    )
                    writer.switchBlock("switch kind") { writer in
                        for enumCase in cases {
                            let values = enumCase.discriminatorValues.map(SwiftWriter.literal).joined(separator: ", ")
                            writer.line(
                                "case \(values): self = .\(enumCase.name)(try \(enumCase.type.spelled(namespace))(from: decoder))")
                        }
                        writer.line("default:")
                        writer.indent { writer in
                            writer.line("throw DecodingError.dataCorruptedError(")
                            writer.indent { writer in
                                writer.line(
                                    "forKey: \(namespace).AnyKey(stringValue: \(SwiftWriter.literal(discriminator))), in: container,"
                                )
                                writer.line("debugDescription: \"'\\(kind)' names none of \(decl.name)'s cases\")")
                            }
                        }
                    }
                }
            } else {
                writer.doc("Decodes the first case the value decodes as, trying them in the description's order.")
                writer.block("\(access)init(from decoder: any Decoder) throws") { writer in
                    for enumCase in cases {
                        writer.block("if let value = try? \(enumCase.type.spelled(namespace))(from: decoder)") {
                            writer in
                            writer.line("self = .\(enumCase.name)(value)")
                            writer.line("return")
                        }
                    }
                    writer.line("throw DecodingError.dataCorrupted(")
                    writer.indent { writer in
                        writer.line("DecodingError.Context(")
                        writer.indent { writer in
                            writer.line("codingPath: decoder.codingPath,")
                            writer.line("debugDescription: \"the value is none of \(decl.name)'s cases\"))")
                        }
                    }
                }
            }
            writer.line()
            writer.doc("Encodes the case's value as it is.")
            writer.block("\(access)func encode(to encoder: any Encoder) throws") { writer in
                writer.switchBlock("switch self") { writer in
                    for enumCase in cases {
                        writer.line("case let .\(Naming.escaped(enumCase.name))(value): try value.encode(to: encoder)")
                    }
                }
            }
            emitNested(decl, into: &writer)
        }
    }
}
