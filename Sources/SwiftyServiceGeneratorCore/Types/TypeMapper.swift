import Foundation

/// Maps schemas to Swift types, declaring the models they need: named schemas become top-level types, inline
/// objects, enums and unions become types nested where they are used.
final class TypeMapper {
    /// A schema that has a name of its own, declared once however often it is referred to.
    private final class Named {
        let name: String
        let node: Node
        let order: Int
        var decl: ModelDecl?
        var declaring = false
        /// A named schema that only refers to another named one: a type alias.
        var aliasOf: Location?

        init(name: String, node: Node, order: Int) {
            self.name = name
            self.node = node
            self.order = order
        }
    }

    struct Mapped {
        var type: SwiftType
        var nullable: Bool
    }

    let files: DescriptionFiles
    let namespace: String
    private var named: [Location: Named] = [:]
    private var namedInOrder: [Named] = []
    /// Top-level names: models, endpoint enums, the namespace.
    private(set) var topLevelNames: NameScope
    /// Top-level types that are not named schemas (elements of array aliases…), in the order they were made.
    private var extraTopLevel: [ModelDecl] = []
    /// The names of nested types everywhere: a top-level type named later must not take one, or the nested
    /// type would hide it from the members beside it.
    private var nestedNamesInUse: Set<String> = []
    /// Inline schemas declared so far, by their structure: a schema written out again (Stripe repeats its
    /// `address` objects hundreds of times) is the type declared for it the first time.
    private var inlineTypes: [String: ModelDecl] = [:]
    private(set) var skipped: [Skip] = []
    private(set) var notes: [String] = []

    init(files: DescriptionFiles, namespace: String, reservedTopLevel: Set<String>) {
        self.files = files
        self.namespace = namespace
        topLevelNames = NameScope(reserved: Naming.reservedTypeNames.union(reservedTopLevel).union([namespace]))
    }

    /// Every top-level model, named schemas first in the document's order.
    var declarations: [ModelDecl] {
        namedInOrder.compactMap(\.decl) + extraTopLevel
    }

    /// Every declaration by its qualified name.
    private var byName: [String: ModelDecl] = [:]

    /// The model of that qualified name (`Pet`, `PetsService.ListPetsResponse`), wherever it is declared.
    func declaration(named name: String) -> ModelDecl? { byName[name] }

    // MARK: Named schemas

    /// Gives each named schema its type name; references to it, from any file, then map to that type.
    func register(_ schemas: [(name: String, node: Node)]) {
        for (name, node) in schemas {
            let entry = Named(name: topLevelNames.claim(Self.typeName(name)), node: node, order: namedInOrder.count)
            named[node.location] = entry
            namedInOrder.append(entry)
        }
        // A schema that is a reference: to another named schema it is an alias, to anything else that thing's name.
        for entry in namedInOrder {
            guard entry.node.reference != nil, let target = try? files.resolved(entry.node) else { continue }
            if let other = named[target.location], other !== entry {
                entry.aliasOf = target.location
            } else {
                named[target.location] = entry
            }
        }
    }

    /// Declares every named schema (those no operation uses too: they are the API's vocabulary).
    func declareAll() {
        var index = 0
        while index < namedInOrder.count {
            declare(namedInOrder[index])
            index += 1
        }
    }

    static func typeName(_ name: String) -> String {
        let camel = Naming.upperCamel(name)
        return Naming.reservedTypeNames.contains(camel) ? camel + "Model" : camel
    }

    private func declare(_ entry: Named) {
        guard entry.decl == nil, !entry.declaring else { return }
        entry.declaring = true
        defer { entry.declaring = false }
        let decl = ModelDecl(name: entry.name, qualifiedName: entry.name, reserved: nestedReserved([entry.name]))
        decl.origin = "The description's `\(entry.node.location.lastName)` schema."
        byName[decl.qualifiedName] = decl
        if let alias = entry.aliasOf, let target = named[alias] {
            decl.body = .alias(.model(target.name, shape(of: target)))
            entry.decl = decl
            return
        }
        do {
            let schema = try files.resolved(entry.node)
            // Set before the body, so that a schema that contains itself finds its own declaration.
            entry.decl = decl
            fill(decl, from: schema, topLevelNestedPrefix: entry.name)
        } catch {
            entry.decl = nil
            skipped.append(Skip(kind: .schema, name: entry.name, reason: "\(error)"))
        }
    }

    private func shape(of entry: Named) -> ModelShape {
        if entry.decl == nil { declare(entry) }
        return entry.decl?.shape ?? .alias(.json)
    }

    private func nestedReserved(_ enclosing: [String]) -> Set<String> {
        Naming.reservedTypeNames.union(enclosing)
    }

    /// A nested type's name: unique among its siblings, unlike any enclosing type, top-level type or Swift
    /// type (a nested `Customer` would hide the top-level `Customer` from the properties beside it).
    private func nestedName(_ base: String, in parent: ModelDecl) -> String {
        // `type` is the most common property name that Swift keeps for itself (`Pet.Type` is a metatype).
        var candidate = base == "Type" ? "Kind" : Self.typeName(base)
        if topLevelNames.contains(candidate) || Naming.reservedTypeNames.contains(candidate) {
            candidate += "Value"
        }
        let name = parent.nestedNames.claim(candidate)
        nestedNamesInUse.insert(name)
        return name
    }

    /// Where the types a schema needs go: inside a model, or at the top level under a prefix.
    enum Placement {
        case nested(ModelDecl)
        case topLevel(prefix: String)
    }

    private func newDecl(_ base: String, _ placement: Placement) -> ModelDecl {
        switch placement {
        case let .nested(parent):
            let name = nestedName(base, in: parent)
            let decl = ModelDecl(
                name: name, qualifiedName: parent.qualifiedName + "." + name,
                reserved: nestedReserved(parent.qualifiedName.split(separator: ".").map(String.init) + [name]))
            decl.origin = "The `\(base)` of ``\(parent.qualifiedName)``."
            parent.nested.append(decl)
            byName[decl.qualifiedName] = decl
            return decl
        case let .topLevel(prefix):
            let name = topLevelNames.claim(Self.typeName(prefix + Naming.upperFirst(base)), avoiding: nestedNamesInUse)
            let decl = ModelDecl(name: name, qualifiedName: name, reserved: nestedReserved([name]))
            decl.origin = "The `\(base)` of `\(prefix)`."
            extraTopLevel.append(decl)
            byName[decl.qualifiedName] = decl
            return decl
        }
    }

    // MARK: Mapping

    /// The Swift type of `node`, declaring what it needs at `placement`, named after `base`.
    func map(_ node: Node, name base: String, at placement: Placement) -> Mapped {
        if let reference = node.reference { return map(node, referring: reference) }
        let nullable = Self.isNullable(node, files)
        guard let schema = node.value.object else { return Mapped(type: .json, nullable: false) }
        if let parts = schema["allOf"]?.array, !parts.isEmpty {
            if let single = structuralParts(node).singleReference {
                var mapped = map(single, name: base, at: placement)
                mapped.nullable = mapped.nullable || nullable
                return mapped
            }
            let decl = inlineDecl(node, base, placement)
            return Mapped(type: .model(decl.qualifiedName, decl.shape), nullable: nullable)
        }
        if let alternatives = unionAlternatives(node) {
            let real = alternatives.filter { !Self.isNullType($0) }
            if real.count == 1 {
                var mapped = map(real[0], name: base, at: placement)
                mapped.nullable = mapped.nullable || nullable || real.count < alternatives.count
                return mapped
            }
            if real.isEmpty { return Mapped(type: .json, nullable: true) }
            let decl = inlineDecl(node, base, placement)
            return Mapped(type: .model(decl.qualifiedName, decl.shape), nullable: nullable)
        }
        let types = Self.types(node)
        if enumValues(node) != nil, types.count <= 1, types.first != "boolean", types.first != "number",
            types.first != "object", types.first != "array"
        {
            let decl = inlineDecl(node, base, placement)
            if case let .alias(type) = decl.body {
                // An enum of nothing usable: the plain type, and no declaration.
                removeDecl(decl, placement)
                return Mapped(type: type, nullable: nullable)
            }
            return Mapped(type: .model(decl.qualifiedName, decl.shape), nullable: nullable)
        }
        if types.count > 1 {
            let decl = inlineDecl(node, base, placement)
            return Mapped(type: .model(decl.qualifiedName, decl.shape), nullable: nullable)
        }
        switch types.first ?? Self.impliedType(node) {
        case "object":
            let properties = node["properties"]?.members ?? []
            if properties.isEmpty {
                return Mapped(type: .dictionary(additionalType(node, name: base, at: placement)), nullable: nullable)
            }
            let decl = inlineDecl(node, base, placement)
            return Mapped(type: .model(decl.qualifiedName, decl.shape), nullable: nullable)
        case "array":
            guard let items = node["items"] else { return Mapped(type: .array(.json), nullable: nullable) }
            let element = map(items, name: Naming.singular(Naming.upperCamel(base)), at: placement)
            return Mapped(type: .array(element.type), nullable: nullable)
        case "string": return Mapped(type: Self.stringType(node), nullable: nullable)
        case "integer":
            let format = node["format"]?.string
            return Mapped(
                type: .integer(format == "int32" ? "Int32" : format == "int64" ? "Int64" : "Int"), nullable: nullable)
        case "number":
            return Mapped(type: .number(node["format"]?.string == "float" ? "Float" : "Double"), nullable: nullable)
        case "boolean": return Mapped(type: .bool, nullable: nullable)
        default: return Mapped(type: .json, nullable: nullable)
        }
    }

    /// The type of a `$ref` node: its target's model, which gets a top-level name of its own when no
    /// `components` entry names it.
    private func map(_ node: Node, referring reference: String) -> Mapped {
        do {
            let target = try files.resolve(reference, from: node.location)
            let siblingNullable = node["nullable"]?.value.bool ?? false
            if let entry = named[target.location] {
                return Mapped(
                    type: .model(entry.name, shape(of: entry)),
                    nullable: siblingNullable || Self.isNullable(target, files))
            }
            // A schema no `components` entry names: it gets a top-level name of its own.
            let entry = Named(
                name: topLevelNames.claim(Self.typeName(target.location.lastName), avoiding: nestedNamesInUse),
                node: target,
                order: namedInOrder.count)
            named[target.location] = entry
            namedInOrder.append(entry)
            return Mapped(
                type: .model(entry.name, shape(of: entry)),
                nullable: siblingNullable || Self.isNullable(target, files))
        } catch {
            notes.append("\(node.location): \(error); the value is read as any JSON")
            return Mapped(type: .json, nullable: false)
        }
    }

    /// The type declared for a schema of this structure before, or a new one filled from `node`.
    private func inlineDecl(_ node: Node, _ base: String, _ placement: Placement) -> ModelDecl {
        let key = node.location.file + "\n" + Self.structuralKey(node.value)
        if let declared = inlineTypes[key] { return declared }
        let decl = newDecl(base, placement)
        inlineTypes[key] = decl
        fill(decl, from: node, topLevelNestedPrefix: decl.qualifiedName)
        return decl
    }

    /// The schema as canonical text without what does not change its type: descriptions, examples, extensions.
    static func structuralKey(_ value: JSON) -> String {
        var text = ""
        func write(_ value: JSON) {
            switch value {
            case .null: text += "n"
            case let .bool(bool): text += bool ? "t" : "f"
            case let .integer(integer): text += "i\(integer)"
            case let .double(double): text += "d\(double)"
            case let .string(string): text += "s\(string.utf8.count):\(string)"
            case let .array(elements):
                text += "["
                for element in elements {
                    write(element)
                    text += ","
                }
                text += "]"
            case let .object(object):
                text += "{"
                for member in object.members.sorted(by: { $0.key < $1.key }) where !ignoredKeys.contains(member.key)
                    && !member.key.hasPrefix("x-")
                {
                    text += "\(member.key.utf8.count):\(member.key)="
                    write(member.value)
                    text += ","
                }
                text += "}"
            }
        }
        write(value)
        return text
    }

    static let ignoredKeys: Set<String> = [
        "description", "title", "example", "examples", "externalDocs", "deprecated", "nullable", "readOnly",
        "writeOnly", "default",
    ]

    private func removeDecl(_ decl: ModelDecl, _ placement: Placement) {
        switch placement {
        case let .nested(parent): parent.nested.removeAll { $0 === decl }
        case .topLevel: extraTopLevel.removeAll { $0 === decl }
        }
    }

    private func additionalType(_ node: Node, name base: String, at placement: Placement) -> SwiftType {
        guard let additional = node["additionalProperties"], additional.value.object != nil else { return .json }
        let mapped = map(additional, name: Naming.upperCamel(base) + "Value", at: placement)
        return mapped.type
    }

    /// A member's name: `self`, `hashValue` and the like, which a struct cannot use, get a `Value` suffix.
    static func memberName(_ key: String) -> String {
        let name = Naming.lowerCamel(key)
        return Naming.modelMembers.contains(name) ? name + "Value" : name
    }

    static func stringType(_ node: Node) -> SwiftType {
        switch node["format"]?.string {
        case "date-time": .date(dateOnly: false)
        case "date": .date(dateOnly: true)
        case "uuid": .uuid
        case "byte", "binary": .data
        default: node["contentEncoding"]?.string == "base64" ? .data : .string
        }
    }

    // MARK: Declarations

    /// Fills `decl` with what `schema` describes; types it needs that cannot nest in it (it is an alias) go to
    /// the top level, named after `topLevelNestedPrefix`.
    private func fill(_ decl: ModelDecl, from schema: Node, topLevelNestedPrefix: String) {
        decl.doc = Self.documentation(schema)
        decl.deprecated = schema["deprecated"]?.value.bool ?? false
        let aliasPlacement = Placement.topLevel(prefix: topLevelNestedPrefix.replacingOccurrences(of: ".", with: ""))
        if schema.reference != nil {
            let mapped = map(schema, name: "Value", at: aliasPlacement)
            decl.body = .alias(mapped.type)
            return
        }
        if schema["allOf"]?.value.array?.isEmpty == false {
            let parts = structuralParts(schema)
            if let single = parts.singleReference {
                decl.body = .alias(map(single, name: "Value", at: aliasPlacement).type)
                return
            }
            fillStructure(decl, from: parts.objects)
            return
        }
        if let alternatives = unionAlternatives(schema) {
            fillUnion(decl, schema, alternatives.filter { !Self.isNullType($0) }, aliasPlacement)
            return
        }
        let types = Self.types(schema)
        if let values = enumValues(schema), types.count <= 1 {
            fillEnum(decl, values, type: types.first)
            return
        }
        if types.count > 1 {
            let alternatives = types.map { type in
                Node(
                    value: .object(JSONObject([("type", .string(type))] + (schema.value.object?.members ?? []).filter {
                        $0.key != "type"
                    })), location: schema.location)
            }
            fillUnion(decl, schema, alternatives, aliasPlacement)
            return
        }
        if (types.first ?? Self.impliedType(schema)) == "object", !(schema["properties"]?.members ?? []).isEmpty {
            fillStructure(decl, from: [schema])
            return
        }
        decl.body = .alias(map(schema, name: "Item", at: aliasPlacement).type)
    }

    private struct Parts {
        /// The parts that describe an object: their properties are merged.
        var objects: [Node]
        /// Set when `allOf` amounts to one reference, the other parts only annotating it.
        var singleReference: Node?
    }

    /// The parts of an `allOf`, references resolved and nested `allOf`s flattened; the schema's own properties
    /// count as one more part.
    private func structuralParts(_ schema: Node) -> Parts {
        let parts = schema["allOf"]?.elements ?? []
        let structural = parts.filter { Self.isStructural($0) }
        if structural.count == 1, let only = structural.first, only.reference != nil,
            (schema["properties"]?.members ?? []).isEmpty
        {
            return Parts(objects: [], singleReference: only)
        }
        var objects: [Node] = []
        var seen: Set<Location> = []
        func collect(_ node: Node) {
            guard let resolved = try? files.resolved(node), seen.insert(resolved.location).inserted else { return }
            for part in resolved["allOf"]?.elements ?? [] { collect(part) }
            if resolved["properties"] != nil || resolved["additionalProperties"] != nil || resolved["required"] != nil {
                objects.append(resolved)
            }
        }
        for part in parts { collect(part) }
        if schema["properties"] != nil || schema["required"] != nil {
            objects.append(Node(value: .object(JSONObject(schema.value.object?.members.filter { $0.key != "allOf" } ?? [])), location: schema.location))
        }
        return Parts(objects: objects, singleReference: nil)
    }

    static func isStructural(_ node: Node) -> Bool {
        guard let object = node.value.object else { return false }
        return ["$ref", "type", "properties", "items", "allOf", "oneOf", "anyOf", "enum", "additionalProperties", "const"]
            .contains { object[$0] != nil }
    }

    private func fillStructure(_ decl: ModelDecl, from parts: [Node]) {
        var properties: [(key: String, node: Node)] = []
        var required: Set<String> = []
        var additional: Node?
        for part in parts {
            for (key, node) in part["properties"]?.members ?? [] {
                if let index = properties.firstIndex(where: { $0.key == key }) {
                    properties[index].node = node
                } else {
                    properties.append((key, node))
                }
            }
            required.formUnion(part["required"]?.elements.compactMap(\.string) ?? [])
            if let extra = part["additionalProperties"], extra.value.object != nil, !extra.value.object!.isEmpty {
                additional = extra
            }
        }
        var memberNames = NameScope(reserved: Naming.modelMembers)
        var result: [ModelDecl.Property] = []
        for (key, node) in properties {
            let mapped = map(node, name: Naming.upperCamel(key), at: .nested(decl))
            let resolved = (try? files.resolved(node)) ?? node
            let readOrWriteOnly =
                (resolved["readOnly"]?.value.bool ?? false) || (resolved["writeOnly"]?.value.bool ?? false)
            result.append(
                ModelDecl.Property(
                    name: memberNames.claim(Self.memberName(key)), key: key, type: mapped.type,
                    optional: !required.contains(key) || mapped.nullable || readOrWriteOnly,
                    doc: Self.documentation(node), deprecated: node["deprecated"]?.value.bool ?? false))
        }
        var additionalType: SwiftType?
        if let additional {
            additionalType = map(additional, name: decl.name + "Value", at: .nested(decl)).type
            _ = memberNames.claim("additionalProperties")
        }
        decl.body = .structure(properties: result, additionalProperties: additionalType)
    }

    private func unionAlternatives(_ schema: Node) -> [Node]? {
        guard let alternatives = schema["oneOf"]?.elements ?? schema["anyOf"]?.elements, !alternatives.isEmpty else {
            return nil
        }
        // `oneOf: [{required: [a]}, {required: [b]}]` beside properties only constrains them.
        guard alternatives.contains(where: { Self.isStructural($0) }) else { return nil }
        return alternatives
    }

    private func fillUnion(_ decl: ModelDecl, _ schema: Node, _ alternatives: [Node], _ aliasPlacement: Placement) {
        if alternatives.isEmpty {
            decl.body = .alias(.json)
            return
        }
        if alternatives.count == 1 {
            decl.body = .alias(map(alternatives[0], name: "Value", at: aliasPlacement).type)
            return
        }
        let discriminator = schema["discriminator"]?["propertyName"]?.string
        var mapping: [(value: String, target: Location)] = []
        for (value, target) in schema["discriminator"]?["mapping"]?.members ?? [] {
            guard let reference = target.string else { continue }
            let text = reference.contains("#") || reference.contains(".") ? reference : "#/components/schemas/\(reference)"
            if let resolved = try? files.resolve(text, from: schema.location) { mapping.append((value, resolved.location)) }
        }
        var caseNames = NameScope(reserved: Naming.modelMembers)
        var cases: [ModelDecl.Case] = []
        for (index, alternative) in alternatives.enumerated() {
            let target = alternative.reference.flatMap { try? files.resolve($0, from: alternative.location) }
            let title = ((try? files.resolved(alternative)) ?? alternative)["title"]?.string
            let typeBase = title.map(Naming.upperCamel) ?? "Case\(index + 1)"
            let mapped = map(alternative, name: typeBase, at: .nested(decl))
            guard !cases.contains(where: { $0.type == mapped.type }) else { continue }
            var values: [String] = []
            if let target {
                values = mapping.filter { $0.target == target.location }.map(\.value)
                if values.isEmpty, let name = named[target.location]?.node.location.lastName {
                    values = [name]
                }
            }
            cases.append(
                ModelDecl.Case(
                    name: caseNames.claim(Self.caseName(for: mapped.type, title: title, index: index)), type: mapped.type,
                    discriminatorValues: values))
        }
        if cases.count == 1 {
            decl.body = .alias(cases[0].type)
            return
        }
        let usable = discriminator != nil && cases.allSatisfy { !$0.discriminatorValues.isEmpty }
        decl.body = .union(cases: cases, discriminator: usable ? discriminator : nil)
    }

    static func caseName(for type: SwiftType, title: String?, index: Int) -> String {
        switch type {
        case .string: return "string"
        case .integer: return "integer"
        case .number: return "number"
        case .bool: return "bool"
        case .date: return "date"
        case .uuid: return "uuid"
        case .data: return "data"
        case .json: return "json"
        case let .array(element): return caseName(for: element, title: nil, index: index) + "s"
        case .dictionary: return "dictionary"
        case let .model(name, _):
            if let title { return Naming.lowerCamel(title) }
            return Naming.lowerCamel(String(name.split(separator: ".").last ?? Substring(name)))
        }
    }

    private func enumValues(_ schema: Node) -> [JSON]? {
        if let values = schema["enum"]?.value.array { return values }
        if let constant = schema["const"]?.value { return [constant] }
        return nil
    }

    private func fillEnum(_ decl: ModelDecl, _ values: [JSON], type: String?) {
        let present = values.filter { $0 != .null }
        var names = NameScope(reserved: Naming.modelMembers)
        let integers = present.compactMap { value -> Int64? in
            if case let .integer(integer) = value { return integer }
            return nil
        }
        if type == "integer" || (!present.isEmpty && integers.count == present.count && type == nil) {
            guard integers.count == present.count, !integers.isEmpty else {
                decl.body = .alias(.integer("Int"))
                return
            }
            var cases: [(name: String, value: Int64)] = []
            for value in integers where !cases.contains(where: { $0.value == value }) {
                cases.append((names.claim(value < 0 ? "valueMinus\(-value)" : "value\(value)"), value))
            }
            decl.body = .intEnum(cases: cases, unknown: names.claim("unknown"))
            return
        }
        let texts = present.compactMap(\.scalarText)
        guard !texts.isEmpty else {
            decl.body = .alias(.string)
            return
        }
        var cases: [(name: String, value: String)] = []
        for text in texts where !cases.contains(where: { $0.value == text }) {
            let base = text.isEmpty ? "empty" : Naming.lowerCamel(text)
            cases.append((names.claim(base == "unknown" ? "unknownValue" : base), text))
        }
        decl.body = .stringEnum(cases: cases, unknown: names.claim("unknown"))
    }

    // MARK: Reading schemas

    /// `type`, as a list without `null`.
    static func types(_ schema: Node) -> [String] {
        switch schema["type"]?.value {
        case let .string(type)?: return type == "null" ? [] : [type]
        case let .array(types)?: return types.compactMap(\.string).filter { $0 != "null" }
        default: return []
        }
    }

    /// The type a schema without `type` implies by its keywords.
    static func impliedType(_ schema: Node) -> String {
        if schema["properties"] != nil || schema["additionalProperties"] != nil { return "object" }
        if schema["items"] != nil { return "array" }
        return ""
    }

    static func isNullType(_ node: Node) -> Bool {
        guard let object = node.value.object else { return false }
        if object["type"]?.string == "null" { return true }
        if case let .array(values)? = object["enum"], values == [.null] { return true }
        return false
    }

    /// `nullable: true` (3.0), `type: [x, "null"]` (3.1), `null` among the enum values or union alternatives.
    static func isNullable(_ node: Node, _ files: DescriptionFiles) -> Bool {
        guard let object = node.value.object else { return false }
        if object["nullable"]?.bool == true { return true }
        if case let .array(types)? = object["type"], types.contains(.string("null")) { return true }
        if case let .array(values)? = object["enum"], values.contains(.null) { return true }
        for key in ["oneOf", "anyOf"] {
            if let alternatives = node[key]?.elements, alternatives.contains(where: isNullType) { return true }
        }
        return false
    }

    /// The doc comment a schema or property carries: its title and description.
    static func documentation(_ node: Node) -> String? {
        let description = node["description"]?.string?.trimmed
        let title = node["title"]?.string?.trimmed
        switch (title, description) {
        case let (title?, description?) where !title.isEmpty && !description.isEmpty && !description.hasPrefix(title):
            return title + "\n\n" + description
        case let (_, description?) where !description.isEmpty: return description
        case let (title?, _) where !title.isEmpty: return title
        default: return nil
        }
    }
}
