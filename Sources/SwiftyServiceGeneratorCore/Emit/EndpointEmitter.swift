import Foundation

/// An expression of a switch's row; a list literal among it wraps one item per line when it is too long.
struct Expression: Equatable {
    var head: String
    var items: [String]?
    var tail: String

    init(_ text: String) {
        head = text
        items = nil
        tail = ""
    }

    init(list head: String, _ items: [String], _ tail: String) {
        self.head = head
        self.items = items
        self.tail = tail
    }

    var text: String { head + (items?.joined(separator: ", ") ?? "") + tail }
}

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
                value: { (Expression(Self.method($0.operation.method)), []) })
            if group.cases.contains(where: { !queryArguments($0).isEmpty || !Self.fixedQuery($0).isEmpty }) {
                emitSwitch(
                    "\(access)var parameters: [String: Any]?", group, into: &writer,
                    doc: "The query, written as the description's `style` and `explode` say.",
                    value: { queryExpression($0) }, fallback: "nil")
                writer.line()
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
                        (Expression(endpoint.errorType.map {
                            ".json(\($0.spelled(namespace)).self, decoder: \(namespace).decoder)"
                        } ?? "nil"), [])
                    }, fallback: "nil")
            }
            writer.line()
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
                        (Expression(list: "[", endpoint.security.map {
                            "[" + $0.map(SwiftWriter.literal).joined(separator: ", ") + "]"
                        }, "]"), [])
                    })
            }
        }
        emitTyped(group, into: &writer)
    }

    static func documentation(_ endpoint: EndpointCase) -> String {
        var parts: [String] = []
        let summary = endpoint.operation.summary?.trimmed
        let details = endpoint.operation.description?.trimmed
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
    private typealias SwitchRow = (patterns: [String], expression: Expression, signature: [String]?)

    /// The switch's rows: cases with the same expression that bind the same names to the same types share one;
    /// and whether any case falls back to `fallback`.
    private func switchRows(
        _ group: EndpointGroup, value: (EndpointCase) -> (expression: Expression, bound: [String]), fallback: String?
    ) -> (rows: [SwitchRow], defaulted: Bool) {
        var rows: [SwitchRow] = []
        var defaulted = false
        for endpoint in group.cases {
            let (expression, bound) = value(endpoint)
            if let fallback, expression.text == fallback {
                defaulted = true
                continue
            }
            if bound.isEmpty {
                let pattern = "." + endpoint.name
                if let index = rows.firstIndex(where: { $0.expression == expression && $0.signature == nil }) {
                    rows[index].patterns.append(pattern)
                    continue
                }
                rows.append(([pattern], expression, nil))
            } else {
                let names = endpoint.arguments.map { bound.contains($0.label) ? Naming.escaped($0.label) : "_" }
                let pattern = "let .\(endpoint.name)(\(names.joined(separator: ", ")))"
                // Cases that bind the same names to the same types share a row: `case let .a(id), let .b(id, _):`.
                let signature = endpoint.arguments.filter { bound.contains($0.label) }
                    .map { "\($0.label): \($0.type.spelled(namespace))\($0.optional ? "?" : "")" }.sorted()
                if let index = rows.firstIndex(where: { $0.expression == expression && $0.signature == signature }) {
                    rows[index].patterns.append(pattern)
                    continue
                }
                rows.append(([pattern], expression, signature))
            }
        }
        return (rows, defaulted)
    }

    private func emitSwitch(
        _ head: String, _ group: EndpointGroup, into writer: inout SwiftWriter, doc: String,
        value: (EndpointCase) -> (expression: Expression, bound: [String]), fallback: String? = nil
    ) {
        let (rows, defaulted) = switchRows(group, value: value, fallback: fallback)
        writer.line()
        writer.doc(doc)
        if rows.isEmpty, let fallback {
            writer.line("\(head) { \(fallback) }")
            return
        }
        if rows.count == 1, !defaulted, rows[0].patterns.count == group.cases.count, !rows[0].patterns[0].hasPrefix("let") {
            writer.line("\(head) { \(rows[0].expression.text) }")
            return
        }
        writer.block(head) { writer in
            writer.switchBlock("switch self") { writer in
                for row in rows {
                    let patterns = row.patterns.joined(separator: ", ")
                    let single = "case \(patterns): \(row.expression.text)"
                    if writer.fits(single) {
                        writer.line(single)
                        continue
                    }
                    if writer.fits("case \(patterns):") {
                        writer.line("case \(patterns):")
                    } else if row.patterns.count == 1, let open = patterns.firstIndex(of: "(") {
                        // One pattern too long: its bindings on the next line, as swift-format wraps a call.
                        writer.line("case " + patterns[...open])
                        writer.indent { $0.line(String(patterns[patterns.index(after: open)...]) + ":") }
                    } else {
                        writer.line("case " + row.patterns[0] + (row.patterns.count > 1 ? "," : ":"))
                        writer.indent { writer in
                            for (index, pattern) in row.patterns.dropFirst().enumerated() {
                                writer.line(pattern + (index == row.patterns.count - 2 ? ":" : ","))
                            }
                        }
                    }
                    writer.indent { writer in
                        let expression = row.expression
                        if let items = expression.items,
                            !writer.fits(expression.text)
                        {
                            writer.line(expression.head)
                            writer.indent { writer in
                                for (index, item) in items.enumerated() {
                                    writer.line(item + (index < items.count - 1 || items.count > 1 ? "," : ""))
                                }
                            }
                            writer.line(expression.tail)
                        } else {
                            writer.line(expression.text)
                        }
                    }
                }
                if defaulted, let fallback { writer.line("default: \(fallback)") }
            }
        }
    }

    private func emitBaseURL(_ group: EndpointGroup, into writer: inout SwiftWriter) {
        let own = group.cases.filter {
            $0.operation.servers?.first.flatMap(SupportEmitter.literalURL) != nil || $0.operation.path == "/"
        }
        let doc = "The realm's base URL, or the description's first server when the realm has none."
        if own.isEmpty {
            writer.line()
            writer.doc(doc)
            writer.line("\(access)var baseURL: URL? { realm.baseURL ?? \(namespace).defaultBaseURL }")
            return
        }
        emitSwitch(
            "\(access)var baseURL: URL?", group, into: &writer,
            doc: "Where the endpoints with servers of their own go; the others go to the realm's base URL, or the description's first server when the realm has none.",
            value: { endpoint in
                var base = "realm.baseURL ?? \(namespace).defaultBaseURL"
                if let url = endpoint.operation.servers?.first.flatMap(SupportEmitter.literalURL) {
                    base = "URL(string: \(SwiftWriter.literal(url)))"
                }
                // The path `/` is the server's root, with its slash; an empty path would leave it out.
                if endpoint.operation.path == "/" { base = "(\(base)).map(\(namespace).root)" }
                return (Expression(base), [])
            }, fallback: "realm.baseURL ?? \(namespace).defaultBaseURL")
    }

    // MARK: Path

    /// `"pets/\(pathSegment: petId)"`
    private func pathExpression(_ endpoint: EndpointCase) -> (Expression, [String]) {
        var literal = ""
        var bound: [String] = []
        var rest = endpoint.operation.path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]
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
        return (Expression("\"" + literal + "\""), bound)
    }

    /// Text for inside a string literal.
    static func escapeInLiteral(_ text: String) -> String {
        String(SwiftWriter.literal(text).dropFirst().dropLast())
    }

    // MARK: Query and headers

    private func queryArguments(_ endpoint: EndpointCase) -> [EndpointCase.Argument] {
        endpoint.arguments.filter { $0.parameter?.place == .query }
    }

    /// The query a path holds (`/responses?beta=true`): sent as query parameters, as the path cannot hold it.
    static func fixedQuery(_ endpoint: EndpointCase) -> [(key: String, value: String)] {
        let parts = endpoint.operation.path.split(separator: "?", maxSplits: 1)
        guard parts.count == 2 else { return [] }
        return parts[1].split(separator: "&").map { pair in
            let halves = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let decode = { (text: Substring) in String(text).removingPercentEncoding ?? String(text) }
            return (decode(halves[0]), halves.count > 1 ? decode(halves[1]) : "")
        }
    }

    private func headerArguments(_ endpoint: EndpointCase) -> [EndpointCase.Argument] {
        endpoint.arguments.filter { $0.parameter?.place == .header || $0.parameter?.place == .cookie }
    }

    private func queryExpression(_ endpoint: EndpointCase) -> (Expression, [String]) {
        let arguments = queryArguments(endpoint)
        let fixed = Self.fixedQuery(endpoint)
        guard !arguments.isEmpty || !fixed.isEmpty else { return (Expression("nil"), []) }
        // A parameter of the same name as a query the path holds takes its place: a literal's keys must differ.
        let names = Set(arguments.compactMap { $0.parameter?.name })
        var entries = fixed.filter { !names.contains($0.key) }.map {
            "\(SwiftWriter.literal($0.key)): \(SwiftWriter.literal($0.value))"
        }
        var spreads: [String] = []
        for argument in arguments {
            let parameter = argument.parameter!
            switch ParameterText.query(argument, parameter, namespace) {
            case let .entry(key, value): entries.append("\(SwiftWriter.literal(key)): \(value)")
            // Under the parameter's own name, which no other query parameter has.
            case let .spread(value): spreads.append("\(SwiftWriter.literal(parameter.name)): \(value)")
            }
        }
        let bound = arguments.map(\.label)
        guard !spreads.isEmpty else { return (Expression(list: "[", entries, "]"), bound) }
        return (Expression(list: "\(namespace).spreading([", entries + spreads, "])"), bound)
    }

    private func headerExpression(_ endpoint: EndpointCase) -> (Expression, [String]) {
        let arguments = headerArguments(endpoint)
        guard !arguments.isEmpty else { return (Expression("nil"), []) }
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
        return (
            Expression(list: "[", entries, anyOptional ? "].compactMapValues { $0 }" : "]"), arguments.map(\.label)
        )
    }

    // MARK: Body

    private func bodyExpression(_ endpoint: EndpointCase) -> (Expression, [String]) {
        guard let plan = endpoint.body, let argument = endpoint.arguments.first(where: { if case .body = $0.role { true } else { false } })
        else { return (Expression("nil"), []) }
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
        return (Expression(argument.optional ? "\(name).map { \(expression) }" : expression), [argument.label])
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
                        if writer.fits(line) || call.isEmpty {
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
