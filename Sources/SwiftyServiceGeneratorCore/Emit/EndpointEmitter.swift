import Foundation

/// Writes an endpoint enum: its cases, the members `SwiftyServiceProtocol` asks for, and its typed forms.
struct EndpointEmitter {
    let namespace: String
    let access: String
    let models: ModelEmitter
    /// Whether the document has security schemes, so the enum tells the middleware what each case needs.
    let secured: Bool

    func emit(_ group: EndpointGroup, into writer: inout SwiftWriter) {
        writer.doc(group.doc)
        writer.block("\(access)enum \(group.name): SwiftyServiceProtocol") { writer in
            for endpoint in group.cases {
                writer.doc(Self.documentation(endpoint))
                if endpoint.operation.deprecated { writer.doc("- Warning: Deprecated by the description.") }
                let arguments = declarations(endpoint)
                if arguments.isEmpty {
                    writer.line("case \(Naming.escaped(endpoint.name))")
                } else {
                    writer.wrapped("case \(Naming.escaped(endpoint.name))", arguments, "")
                }
            }
            writer.line()
            writer.doc("The realm every endpoint of \(namespace) is sent through.")
            writer.line("\(access)var realm: ServiceRealm { \(namespace).realm }")
            emitBaseURL(group, into: &writer)
            emitSwitch(
                "\(access)var path: String", group, into: &writer,
                doc: "The path after the base URL; values go in as single segments.",
                value: { pathExpression($0) })
            emitSwitch(
                "\(access)var method: HTTPMethod", group, into: &writer, doc: "The HTTP method.",
                value: { (Self.method($0.operation.method), []) })
            if group.cases.contains(where: { !queryArguments($0).isEmpty }) {
                emitSwitch(
                    "\(access)var parameters: [String: Any]?", group, into: &writer,
                    doc: "The query, written as the description's `style` and `explode` say.",
                    value: { queryExpression($0) }, fallback: "nil")
                writer.doc("Query keys written as they are: arrays repeat the key, bools are `true` and `false`.")
                writer.line(
                    "\(access)var parameterEncoding: ParameterEncoding { .query(arrays: .noBrackets, bools: .literal) }")
            }
            if group.cases.contains(where: { !headerArguments($0).isEmpty }) {
                emitSwitch(
                    "\(access)var headers: HTTPHeaderDictionary?", group, into: &writer,
                    doc: "The header and cookie parameters.", value: { headerExpression($0) }, fallback: "nil")
            }
            if group.cases.contains(where: { $0.body != nil }) {
                emitSwitch(
                    "\(access)var body: RequestBody?", group, into: &writer, doc: "The request body.",
                    value: { bodyExpression($0) }, fallback: "nil")
            }
            if group.cases.contains(where: { $0.errorType != nil }) {
                emitSwitch(
                    "\(access)var errorBody: ErrorBody?", group, into: &writer,
                    doc: "How the bodies of failed answers decode: `error.errorBody(as:)` reads them.",
                    value: { endpoint in
                        endpoint.errorType.map {
                            (".json(\($0.spelled(namespace)).self, decoder: \(namespace).decoder)", [])
                        } ?? ("nil", [])
                    })
            }
            writer.doc("Reads the API's dates, whole or with fractions of a second.")
            writer.line("\(access)var decoder: JSONDecoder? { \(namespace).decoder }")
            models.emitNested(group.types, into: &writer)
        }
        if secured {
            writer.line()
            writer.block("extension \(group.name): \(namespace).SecuredEndpoint") { writer in
                emitSwitch(
                    "var securityRequirements: [[String]]", group, into: &writer,
                    doc: "The security schemes each case needs: one of the lists, all schemes of it.",
                    value: { endpoint in
                        ("[" + endpoint.security.map { "[" + $0.map(SwiftWriter.literal).joined(separator: ", ") + "]" }
                            .joined(separator: ", ") + "]", [])
                    })
            }
        }
        emitTyped(group, into: &writer)
    }

    static func documentation(_ endpoint: EndpointCase) -> String {
        var parts: [String] = []
        let summary = endpoint.operation.summary?.trimmingCharacters(in: .whitespacesAndNewlines)
        let details = endpoint.operation.description?.trimmingCharacters(in: .whitespacesAndNewlines)
        if let summary, !summary.isEmpty { parts.append(summary) }
        if let details, !details.isEmpty, details != summary { parts.append(details) }
        parts.append("`\(endpoint.label)`")
        return parts.joined(separator: "\n\n")
    }

    static func method(_ method: String) -> String {
        ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"].contains(method)
            ? "." + method.lowercased() : "HTTPMethod(rawValue: \(SwiftWriter.literal(method)))"
    }

    /// `limit: Int32? = nil`
    func declarations(_ endpoint: EndpointCase) -> [String] {
        endpoint.arguments.map { argument in
            let type = argument.type.spelled(namespace)
            return "\(argument.label): \(type)\(argument.optional ? "? = nil" : "")"
        }
    }

    // MARK: Switches

    /// A computed property as a `switch` over the cases; cases with the same value share a line.
    private func emitSwitch(
        _ head: String, _ group: EndpointGroup, into writer: inout SwiftWriter, doc: String,
        value: (EndpointCase) -> (expression: String, bound: [String]), fallback: String? = nil
    ) {
        var rows: [(patterns: [String], expression: String)] = []
        var defaulted = false
        for endpoint in group.cases {
            let (expression, bound) = value(endpoint)
            if let fallback, expression == fallback {
                defaulted = true
                continue
            }
            if bound.isEmpty {
                let pattern = "." + endpoint.name
                if let index = rows.firstIndex(where: { $0.expression == expression && !$0.patterns[0].hasPrefix("let") })
                {
                    rows[index].patterns.append(pattern)
                    continue
                }
                rows.append(([pattern], expression))
            } else {
                let names = endpoint.arguments.map { bound.contains($0.label) ? Naming.escaped($0.label) : "_" }
                rows.append((["let .\(endpoint.name)(\(names.joined(separator: ", ")))"], expression))
            }
        }
        writer.doc(doc)
        if rows.isEmpty, let fallback {
            writer.line("\(head) { \(fallback) }")
            return
        }
        if rows.count == 1, !defaulted, rows[0].patterns.count == group.cases.count, !rows[0].patterns[0].hasPrefix("let") {
            writer.line("\(head) { \(rows[0].expression) }")
            return
        }
        writer.block(head) { writer in
            writer.switchBlock("switch self") { writer in
                for row in rows {
                    let patterns = row.patterns.joined(separator: ", ")
                    let single = "case \(patterns): \(row.expression)"
                    if writer.indentation.count + single.count <= SwiftWriter.lineLength {
                        writer.line(single)
                    } else if writer.indentation.count + "case \(patterns):".count <= SwiftWriter.lineLength {
                        writer.line("case \(patterns):")
                        writer.indent { $0.line(row.expression) }
                    } else {
                        writer.line("case " + row.patterns[0] + (row.patterns.count > 1 ? "," : ":"))
                        writer.indent { writer in
                            for (index, pattern) in row.patterns.dropFirst().enumerated() {
                                writer.line(pattern + (index == row.patterns.count - 2 ? ":" : ","))
                            }
                        }
                        writer.indent { $0.line(row.expression) }
                    }
                }
                if defaulted, let fallback { writer.line("default: \(fallback)") }
            }
        }
    }

    private func emitBaseURL(_ group: EndpointGroup, into writer: inout SwiftWriter) {
        let own = group.cases.filter { $0.operation.servers?.first.flatMap(SupportEmitter.literalURL) != nil }
        writer.doc("The realm's base URL, or the description's first server when the realm has none.")
        if own.isEmpty {
            writer.line("\(access)var baseURL: URL? { realm.baseURL ?? \(namespace).defaultBaseURL }")
            return
        }
        writer.block("\(access)var baseURL: URL?") { writer in
            writer.switchBlock("switch self") { writer in
                for endpoint in own {
                    let url = endpoint.operation.servers!.first.flatMap(SupportEmitter.literalURL)!
                    writer.line("case .\(endpoint.name): URL(string: \(SwiftWriter.literal(url)))")
                }
                writer.line("default: realm.baseURL ?? \(namespace).defaultBaseURL")
            }
        }
    }

    // MARK: Path

    /// `"pets/\(pathSegment: petId)"`
    private func pathExpression(_ endpoint: EndpointCase) -> (String, [String]) {
        var literal = ""
        var bound: [String] = []
        var rest = Substring(endpoint.operation.path)
        while let first = rest.first, first == "/" { rest = rest.dropFirst() }
        while !rest.isEmpty {
            guard let open = rest.firstIndex(of: "{"), let close = rest[open...].firstIndex(of: "}") else {
                literal += Self.escapeInLiteral(String(rest))
                break
            }
            literal += Self.escapeInLiteral(String(rest[..<open]))
            let name = String(rest[rest.index(after: open)..<close])
            if let argument = endpoint.arguments.first(where: { $0.parameter?.place == .path && $0.parameter?.name == name }),
                let parameter = argument.parameter
            {
                bound.append(argument.label)
                literal += "\\(pathSegment: \(ParameterText.path(Naming.escaped(argument.label), argument.type, parameter, namespace)))"
            } else {
                literal += Self.escapeInLiteral("{\(name)}")
            }
            rest = rest[rest.index(after: close)...]
        }
        return ("\"" + literal + "\"", bound)
    }

    /// Text for inside a string literal.
    static func escapeInLiteral(_ text: String) -> String {
        String(SwiftWriter.literal(text).dropFirst().dropLast())
    }

    // MARK: Query and headers

    private func queryArguments(_ endpoint: EndpointCase) -> [EndpointCase.Argument] {
        endpoint.arguments.filter { $0.parameter?.place == .query }
    }

    private func headerArguments(_ endpoint: EndpointCase) -> [EndpointCase.Argument] {
        endpoint.arguments.filter { $0.parameter?.place == .header || $0.parameter?.place == .cookie }
    }

    private func queryExpression(_ endpoint: EndpointCase) -> (String, [String]) {
        let arguments = queryArguments(endpoint)
        guard !arguments.isEmpty else { return ("nil", []) }
        var entries: [String] = []
        var merged: [String] = []
        for argument in arguments {
            let parameter = argument.parameter!
            switch ParameterText.query(argument, parameter, namespace) {
            case let .entry(key, value): entries.append("\(SwiftWriter.literal(key)): \(value)")
            case let .spread(value): merged.append(value)
            }
        }
        var expression = entries.isEmpty ? "[:]" : "[" + entries.joined(separator: ", ") + "]"
        if entries.isEmpty, !merged.isEmpty {
            expression = "[String: Any]()"
        }
        for value in merged { expression += ".merging(\(value)) { current, _ in current }" }
        return (expression, arguments.map(\.label))
    }

    private func headerExpression(_ endpoint: EndpointCase) -> (String, [String]) {
        let arguments = headerArguments(endpoint)
        guard !arguments.isEmpty else { return ("nil", []) }
        var entries: [String] = []
        let headers = arguments.filter { $0.parameter?.place == .header }
        for argument in headers {
            let parameter = argument.parameter!
            entries.append(
                "\(SwiftWriter.literal(parameter.name)): \(ParameterText.header(argument, parameter, namespace))")
        }
        let cookies = arguments.filter { $0.parameter?.place == .cookie }
        if !cookies.isEmpty {
            let pairs = cookies.map { argument in
                "(\(SwiftWriter.literal(argument.parameter!.name)), \(ParameterText.cookie(argument, argument.parameter!, namespace)))"
            }
            entries.append("\"Cookie\": \(namespace).cookieHeader([\(pairs.joined(separator: ", "))])")
        }
        let anyOptional = headers.contains(where: \.optional) || !cookies.isEmpty
        let literal = "[" + entries.joined(separator: ", ") + "]"
        return (anyOptional ? literal + ".compactMapValues { $0 }" : literal, arguments.map(\.label))
    }

    // MARK: Body

    private func bodyExpression(_ endpoint: EndpointCase) -> (String, [String]) {
        guard let plan = endpoint.body, let argument = endpoint.arguments.first(where: { if case .body = $0.role { true } else { false } })
        else { return ("nil", []) }
        let name = Naming.escaped(argument.label)
        let value = argument.optional ? "$0" : name
        let expression: String
        switch plan {
        case let .json(contentType):
            expression =
                contentType == "application/json"
                ? ".json(\(value), encoder: \(namespace).encoder)"
                : "\(namespace).jsonBody(\(value), contentType: \(SwiftWriter.literal(contentType)))"
        case let .form(bracketed):
            expression =
                ".form(\(value), encoder: URLEncodedFormEncoder(arrays: \(bracketed ? ".brackets" : ".noBrackets"), bools: .literal))"
        case .multipartModel: expression = ".multipart(\(value).multipartForm)"
        case .multipartForm: expression = ".multipart(\(value))"
        case let .text(contentType):
            expression = ".data(Data(\(value).utf8), contentType: \(SwiftWriter.literal(contentType)))"
        case let .data(contentType): expression = ".data(\(value), contentType: \(SwiftWriter.literal(contentType)))"
        }
        return (argument.optional ? "\(name).map { \(expression) }" : expression, [argument.label])
    }

    // MARK: Typed

    private func emitTyped(_ group: EndpointGroup, into writer: inout SwiftWriter) {
        let typed = group.cases.filter { if case .untyped = $0.answer { false } else { true } }
        guard !typed.isEmpty else { return }
        writer.line()
        writer.block("extension \(group.name)") { writer in
            writer.doc(
                "The endpoints with the types they answer with: `request()` returns the decoded body (``NoContent`` where there is none).")
            writer.block("\(access)enum Typed") { writer in
                for (index, endpoint) in typed.enumerated() {
                    if index > 0 { writer.line() }
                    let type: String
                    switch endpoint.answer {
                    case let .decoded(answer): type = answer.spelled(namespace)
                    case .noContent, .untyped: type = "NoContent"
                    }
                    writer.doc(Self.documentation(endpoint))
                    if endpoint.operation.deprecated { writer.line("@available(*, deprecated)") }
                    let call = endpoint.arguments.map { "\($0.label): \(Naming.escaped($0.label))" }
                    writer.wrapped(
                        "\(access)static func \(Naming.escaped(endpoint.name))", declarations(endpoint),
                        " -> TypedEndpoint<\(type)> {")
                    writer.indent { writer in
                        let base = "\(group.name).\(endpoint.name)"
                        let value = call.isEmpty ? base : base + "(" + call.joined(separator: ", ") + ")"
                        let line = "\(value).returning(\(type).self)"
                        if writer.indentation.count + line.count <= SwiftWriter.lineLength || call.isEmpty {
                            writer.line(line)
                        } else {
                            writer.wrapped(base, call, ".returning(\(type).self)")
                        }
                    }
                    writer.line("}")
                }
            }
        }
    }
}
