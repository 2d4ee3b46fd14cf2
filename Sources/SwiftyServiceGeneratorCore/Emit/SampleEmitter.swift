/// Writes every case of an endpoint enum called with sample values (`PetsService.samples`), so that a test
/// can build each request and hold it against the description.
///
/// The values follow fixed rules a test can apply to the description itself: a string is `<name>-ä b/c`
/// (`<name>-1` in headers and cookies), an integer `1 + (sum of the name's UTF-8 bytes) % 97`, a number that
/// plus `0.5`, a bool `true`, an enumeration its first value, a date `2023-11-14T22:13:20Z`, an array two
/// values (the second a string `<name>-2`, an integer one more, `false`, the second enumeration value), an
/// object its scalar members and the required others, a union its first case, anything else `"sample"`.
struct SampleEmitter {
    let namespace: String
    let access: String
    let models: [ModelDecl]

    private func decl(_ name: String) -> ModelDecl? {
        var queue = models
        while let next = queue.popLast() {
            if next.qualifiedName == name { return next }
            if name.hasPrefix(next.qualifiedName + ".") { queue += next.nested }
        }
        return nil
    }

    static func sampleInteger(_ name: String) -> Int { 1 + name.utf8.reduce(0) { $0 + Int($1) } % 97 }

    enum Place {
        case text, header
    }

    /// A Swift expression of `type`, or `nil` when no finite value can be made.
    func sample(_ type: SwiftType, name: String, place: Place, second: Bool = false, depth: Int = 0) -> String? {
        guard depth < 12 else { return nil }
        switch type {
        case .string:
            if second { return SwiftWriter.literal("\(name)-2") }
            return SwiftWriter.literal(place == .header ? "\(name)-1" : "\(name)-ä b/c")
        case let .integer(name2):
            let value = Self.sampleInteger(name) + (second ? 1 : 0)
            return name2 == "Int" ? "\(value)" : "\(name2)(\(value))"
        case .number: return "\(Self.sampleInteger(name) + (second ? 1 : 0)).5"
        case .bool: return second ? "false" : "true"
        case .date: return "Date(timeIntervalSince1970: 1_700_000_000)"
        case .uuid: return "UUID(uuidString: \"00000000-0000-4000-8000-000000000001\")!"
        case .data: return "Data(\"sample\".utf8)"
        case .json: return "\(namespace).JSONValue.string(\"sample\")"
        case let .array(element):
            guard let first = sample(element, name: name, place: place, depth: depth + 1) else { return nil }
            guard element.isScalar, let other = sample(element, name: name, place: place, second: true, depth: depth + 1)
            else { return "[\(first)]" }
            return "[\(first), \(other)]"
        case let .dictionary(value):
            guard let member = sample(value, name: "key", place: place, depth: depth + 1) else { return nil }
            return "[\"key\": \(member)]"
        case let .model(typeName, shape):
            if typeName == "MultipartForm" { return "MultipartForm()" }
            guard let decl = decl(typeName) else { return nil }
            switch (decl.body, shape) {
            case let (.stringEnum(cases, _), _):
                guard let first = cases.first else { return nil }
                let chosen = second && cases.count > 1 ? cases[1] : first
                return "\(typeName).\(chosen.name)"
            case let (.intEnum(cases, _), _):
                guard let first = cases.first else { return nil }
                let chosen = second && cases.count > 1 ? cases[1] : first
                return "\(typeName).\(chosen.name)"
            case let (.union(cases, _), _):
                guard let first = cases.first,
                    let payload = sample(first.type, name: name, place: place, depth: depth + 1)
                else { return nil }
                return "\(typeName).\(Naming.escaped(first.name))(\(payload))"
            case let (.alias(underlying), _):
                return sample(underlying, name: name, place: place, second: second, depth: depth + 1)
            case let (.structure(properties, additional), _):
                var arguments: [String] = []
                for property in properties {
                    let include = !property.optional || property.type.isScalar
                        || { if case let .array(element) = property.type.underlying { element.isScalar } else { false } }()
                    guard include else { continue }
                    guard let value = sample(property.type, name: property.key, place: place, depth: depth + 1) else {
                        if property.optional { continue }
                        return nil
                    }
                    arguments.append("\(property.name): \(value)")
                }
                _ = additional
                return "\(typeName)(\(arguments.joined(separator: ", ")))"
            case (.namespace, _): return nil
            }
        }
    }

    func emit(_ group: EndpointGroup, into writer: inout SwiftWriter) {
        writer.block("extension \(group.name)") { writer in
            writer.doc("Every case called with sample values, and the operation it is: for tests of the generated code.")
            writer.block("\(access)static var samples: [(operation: String, endpoint: \(group.name))]") { writer in
                writer.line("[")
                writer.indent { writer in
                    for endpoint in group.cases {
                        var arguments: [String] = []
                        var complete = true
                        for argument in endpoint.arguments {
                            let place: Place =
                                argument.parameter?.place == .header || argument.parameter?.place == .cookie
                                ? .header : .text
                            let name = argument.parameter?.name ?? "body"
                            guard let value = sample(argument.type, name: name, place: place) else {
                                complete = false
                                break
                            }
                            arguments.append("\(argument.label): \(value)")
                        }
                        guard complete else {
                            writer.line("// \(endpoint.label): no sample value can be made for its arguments")
                            continue
                        }
                        let call = arguments.isEmpty ? "" : "(" + arguments.joined(separator: ", ") + ")"
                        writer.line("(\(SwiftWriter.literal(endpoint.label)), .\(endpoint.name)\(call)),")
                    }
                }
                writer.line("]")
            }
        }
    }
}
