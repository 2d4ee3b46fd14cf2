/// The Swift expressions that write a parameter's value where the description puts it, in its `style`.
enum ParameterText {
    /// A scalar value as text: `String(limit)`, `status.rawValue`, `Petstore.dateTimeText(since)`; `nil` for
    /// values that are not scalars.
    static func text(_ value: String, _ type: SwiftType, _ namespace: String) -> String? {
        switch type.underlying {
        case .string: value
        case .integer, .number, .bool: "String(\(value))"
        case .date(dateOnly: false): "\(namespace).dateTimeText(\(value))"
        case .date(dateOnly: true): "\(namespace).dateText(\(value))"
        case .uuid: "\(value).uuidString"
        case .model(_, .stringEnum): "\(value).rawValue"
        case .model(_, .intEnum): "String(\(value).rawValue)"
        default: nil
        }
    }

    /// A scalar as a query value: numbers, bools and strings as they are, the rest as text.
    static func queryScalar(_ value: String, _ type: SwiftType, _ namespace: String) -> String? {
        switch type.underlying {
        case .string, .integer, .number, .bool: value
        default: text(value, type, namespace)
        }
    }

    /// `value` with `transform` applied, through the optional when there is one; `$0` in `transform` is the value.
    static func apply(_ value: String, optional: Bool, _ transform: (String) -> String) -> String {
        let direct = transform(value)
        if direct == value { return value }
        guard optional else { return direct }
        if direct == "\(value).rawValue" { return "\(value)?.rawValue" }
        if direct.hasPrefix(value + ".map") { return "\(value)?" + direct.dropFirst(value.count) }
        return "\(value).map { \(transform("$0")) }"
    }

    static func separator(_ style: String) -> String {
        switch style {
        case "spaceDelimited": " "
        case "pipeDelimited": "|"
        default: ","
        }
    }

    /// What goes between `\(pathSegment:` and `)`.
    static func path(_ value: String, _ type: SwiftType, _ parameter: Parameter, _ namespace: String) -> String {
        let prefix: String =
            switch parameter.style {
            case "label": "\".\" + "
            case "matrix": "\";\(EndpointEmitter.escapeInLiteral(parameter.name))=\" + "
            default: ""
            }
        if let scalar = text(value, type, namespace) {
            if prefix.isEmpty, case .string = type.underlying { return value }
            if prefix.isEmpty, case .integer = type.underlying { return value }
            return prefix + scalar
        }
        if case let .array(element) = type.underlying, let scalar = text("$0", element, namespace) {
            let separator =
                parameter.explode && parameter.style == "label"
                ? "." : parameter.explode && parameter.style == "matrix" ? ";\(parameter.name)=" : ","
            let mapped = scalar == "$0" ? value : "\(value).map { \(scalar) }"
            return prefix + "\(mapped).joined(separator: \(SwiftWriter.literal(separator)))"
        }
        return "\(namespace).styledText(\(namespace).parameterValue(\(value)), explode: \(parameter.explode))"
    }

    enum QueryPart {
        /// `"key": value` in the parameters.
        case entry(String, String)
        /// A dictionary whose members join the parameters (`form`, `explode` objects).
        case spread(String)
    }

    static func query(_ argument: EndpointCase.Argument, _ parameter: Parameter, _ namespace: String) -> QueryPart {
        let value = Naming.escaped(argument.label)
        let type = argument.type
        let optional = argument.optional
        func entry(_ key: String, _ expression: String) -> QueryPart {
            .entry(key, optional && !expression.hasSuffix(" as Any") ? expression + " as Any" : expression)
        }
        if argument.asJSON {
            return entry(parameter.name, apply(value, optional: optional) { "\(namespace).jsonText(\($0))" })
        }
        if type.isScalar {
            return entry(parameter.name, apply(value, optional: optional) { queryScalar($0, type, namespace)! })
        }
        if case let .array(element) = type.underlying, element.isScalar {
            let explode = parameter.explode || parameter.style == "deepObject"
            if explode {
                let key = parameter.style == "deepObject" ? parameter.name + "[]" : parameter.name
                return entry(
                    key,
                    apply(value, optional: optional) { array in
                        let scalar = queryScalar("$0", element, namespace)!
                        return scalar == "$0" ? array : "\(array).map { \(scalar) }"
                    })
            }
            let separator = SwiftWriter.literal(separator(parameter.style))
            return entry(
                parameter.name,
                apply(value, optional: optional) { array in
                    let scalar = text("$0", element, namespace)!
                    let mapped = scalar == "$0" ? array : "\(array).map { \(scalar) }"
                    return "\(mapped).joined(separator: \(separator))"
                })
        }
        if parameter.style == "form", parameter.explode {
            // An optional's nil spreads nothing (the support function takes optionals).
            return .spread("\(namespace).exploded(\(value), name: \(SwiftWriter.literal(parameter.name)))")
        }
        if parameter.style == "deepObject" {
            // Whether the value is an object or an array (a union may be either) is known only when it is sent.
            return .spread("\(namespace).deepObject(\(value), name: \(SwiftWriter.literal(parameter.name)))")
        }
        return entry(
            parameter.name,
            apply(value, optional: optional) {
                "\(namespace).styledText(\(namespace).parameterValue(\($0)), explode: \(parameter.explode))"
            })
    }

    /// A header's value (`String`, or `String?` for an optional parameter).
    static func header(_ argument: EndpointCase.Argument, _ parameter: Parameter, _ namespace: String) -> String {
        simple(argument, parameter, namespace)
    }

    /// A cookie's value (`String?`).
    static func cookie(_ argument: EndpointCase.Argument, _ parameter: Parameter, _ namespace: String) -> String {
        simple(argument, parameter, namespace)
    }

    /// A value as one piece of text: scalars as they are, arrays joined by commas, objects in the parameter's style.
    private static func simple(_ argument: EndpointCase.Argument, _ parameter: Parameter, _ namespace: String) -> String {
        let value = Naming.escaped(argument.label)
        let type = argument.type
        if argument.asJSON { return apply(value, optional: argument.optional) { "\(namespace).jsonText(\($0))" } }
        if text("$0", type, namespace) != nil {
            return apply(value, optional: argument.optional) { text($0, type, namespace)! }
        }
        if case let .array(element) = type.underlying, let scalar = text("$0", element, namespace) {
            return apply(value, optional: argument.optional) { array in
                let mapped = scalar == "$0" ? array : "\(array).map { \(scalar) }"
                return "\(mapped).joined(separator: \",\")"
            }
        }
        return apply(value, optional: argument.optional) {
            "\(namespace).styledText(\(namespace).parameterValue(\($0)), explode: \(parameter.explode))"
        }
    }
}
