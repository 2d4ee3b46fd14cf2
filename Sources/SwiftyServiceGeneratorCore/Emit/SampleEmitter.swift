/// Writes every case of an endpoint enum called with sample values (`PetsService.samples`), so that a test
/// can build each request and hold it against the description.
///
/// The values follow fixed rules a test can apply to the description itself: a string is `<name>-ä b/c`
/// (`<name>-1` in headers and cookies), an integer `1 + (sum of the name's UTF-8 bytes) % 97`, a number that
/// plus `0.5`, a bool `true`, an enumeration its first value, a date `2023-11-14T22:13:20Z`, an array two
/// values (the second a string `<name>-2`, an integer one more, `false`, the second enumeration value), an
/// object its scalar members and the required others, a union its first case, anything else `"sample"`.
/// An expression that wraps its arguments one per line, nested ones too, when it does not fit on one.
indirect enum Code {
    case text(String)
    /// `head(label: value, …)`, or a literal with other brackets (`[…]`).
    case call(String, [(label: String?, value: Code)], open: String, close: String)

    static func call(_ head: String, _ arguments: [(label: String?, value: Code)]) -> Code {
        .call(head, arguments, open: "(", close: ")")
    }

    var flat: String {
        switch self {
        case let .text(text): text
        case let .call(head, arguments, open, close):
            head + open
                + arguments.map { ($0.label.map { "\($0): " } ?? "") + $0.value.flat }.joined(separator: ", ") + close
        }
    }

    func write(into writer: inout SwiftWriter, prefix: String = "", suffix: String = "") {
        let line = prefix + flat + suffix
        guard !writer.fits(line),
            case let .call(head, arguments, open, close) = self, !arguments.isEmpty
        else {
            writer.line(line)
            return
        }
        writer.line(prefix + head + open)
        writer.indent { writer in
            for (index, argument) in arguments.enumerated() {
                // swift-format's rule: a trailing comma after the last element of a collection of two or more.
                let comma = index < arguments.count - 1 || (open == "[" && arguments.count > 1) ? "," : ""
                argument.value.write(into: &writer, prefix: argument.label.map { "\($0): " } ?? "", suffix: comma)
            }
        }
        writer.line(close + suffix)
    }
}

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
    func sample(_ type: SwiftType, name: String, place: Place, second: Bool = false, depth: Int = 0) -> Code? {
        text(type, name: name, place: place, second: second, depth: depth)
    }

    private func text(_ type: SwiftType, name: String, place: Place, second: Bool, depth: Int) -> Code? {
        guard depth < 12 else { return nil }
        switch type {
        case .string:
            if second { return .text(SwiftWriter.literal("\(name)-2")) }
            return .text(SwiftWriter.literal(place == .header ? "\(name)-1" : "\(name)-ä b/c"))
        case let .integer(name2):
            let value = Self.sampleInteger(name) + (second ? 1 : 0)
            return .text(name2 == "Int" ? "\(value)" : "\(name2)(\(value))")
        case .number: return .text("\(Self.sampleInteger(name) + (second ? 1 : 0)).5")
        case .bool: return .text(second ? "false" : "true")
        case .date: return .text("Date(timeIntervalSince1970: 1_700_000_000)")
        case .uuid: return .text("UUID(uuidString: \"00000000-0000-4000-8000-000000000001\")!")
        case .data: return .text("Data(\"sample\".utf8)")
        case .json: return .text("\(namespace).JSONValue.string(\"sample\")")
        case let .array(element):
            guard let first = sample(element, name: name, place: place, depth: depth + 1) else { return nil }
            guard element.isScalar, let other = sample(element, name: name, place: place, second: true, depth: depth + 1)
            else { return .call("", [(nil, first)], open: "[", close: "]") }
            return .call("", [(nil, first), (nil, other)], open: "[", close: "]")
        case let .dictionary(value):
            guard let member = sample(value, name: "key", place: place, depth: depth + 1) else { return nil }
            return .call("", [("\"key\"", member)], open: "[", close: "]")
        case let .model(typeName, shape):
            if typeName == "MultipartForm" { return .text("MultipartForm()") }
            guard let decl = decl(typeName) else { return nil }
            switch (decl.body, shape) {
            case let (.stringEnum(cases, _), _):
                guard let first = cases.first else { return nil }
                let chosen = second && cases.count > 1 ? cases[1] : first
                return .text("\(typeName).\(chosen.name)")
            case let (.intEnum(cases, _), _):
                guard let first = cases.first else { return nil }
                let chosen = second && cases.count > 1 ? cases[1] : first
                return .text("\(typeName).\(chosen.name)")
            case let (.union(cases, _), _):
                guard let first = cases.first,
                    let payload = sample(first.type, name: name, place: place, depth: depth + 1)
                else { return nil }
                return .call("\(typeName).\(Naming.escaped(first.name))", [(nil, payload)])
            case let (.alias(underlying), _):
                return text(underlying, name: name, place: place, second: second, depth: depth + 1)
            case let (.structure(properties, additional), _):
                var arguments: [(label: String?, value: Code)] = []
                for property in properties {
                    let include = !property.optional || property.type.isScalar
                        || { if case let .array(element) = property.type.underlying { element.isScalar } else { false } }()
                    guard include else { continue }
                    guard let value = sample(property.type, name: property.key, place: place, depth: depth + 1) else {
                        if property.optional { continue }
                        return nil
                    }
                    arguments.append((property.name, value))
                }
                _ = additional
                return .call(typeName, arguments)
            case (.namespace, _): return nil
            }
        }
    }

    func emit(_ group: EndpointGroup, into writer: inout SwiftWriter) {
        var elements: [(label: String?, value: Code)] = []
        var missing: [String] = []
        for endpoint in group.cases {
            var arguments: [(label: String?, value: Code)] = []
            for argument in endpoint.arguments {
                let place: Place =
                    argument.parameter?.place == .header || argument.parameter?.place == .cookie ? .header : .text
                guard let value = sample(argument.type, name: argument.parameter?.name ?? "body", place: place) else {
                    break
                }
                arguments.append((argument.label, value))
            }
            guard arguments.count == endpoint.arguments.count else {
                missing.append(endpoint.label)
                continue
            }
            let call: Code = arguments.isEmpty ? .text(".\(endpoint.name)") : .call(".\(endpoint.name)", arguments)
            elements.append((nil, .call("", [(nil, .text(SwiftWriter.literal(endpoint.label))), (nil, call)])))
        }
        writer.block("extension \(group.name)") { writer in
            writer.doc("Every case called with sample values, and the operation it is: for tests of the generated code.")
            for label in missing { writer.line("// \(label): no sample value can be made for its arguments") }
            writer.block("\(access)static var samples: [(operation: String, endpoint: \(group.name))]") { writer in
                Code.call("", elements, open: "[", close: "]").write(into: &writer)
            }
        }
    }
}
