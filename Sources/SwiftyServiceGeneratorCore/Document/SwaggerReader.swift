/// Reads a Swagger 2.0 document into the description an OpenAPI 3 document makes: `host`, `basePath` and
/// `schemes` become a server, `body` and `formData` parameters a request body, a response's `schema` its
/// content, `collectionFormat` a style, `definitions` the named schemas.
struct SwaggerReader {
    let files: DescriptionFiles

    func read() throws -> APIDescription {
        let root = files.root
        let info = root["info"]
        var description = APIDescription(
            title: info?["title"]?.value.scalarText ?? "API", version: info?["version"]?.value.scalarText ?? "",
            summary: info?["description"]?.string)
        let scheme = root["schemes"]?.elements.first?.string ?? "https"
        let basePath = root["basePath"]?.string ?? "/"
        let url = root["host"]?.string.map { "\(scheme)://\($0)\(basePath == "/" ? "" : basePath)" } ?? basePath
        description.servers = [Server(url: url, description: nil, variables: [])]
        description.security = OpenAPIReader.security(root["security"]) ?? []
        description.tagOrder = root["tags"]?.elements.compactMap { $0["name"]?.string } ?? []
        for (name, node) in root["securityDefinitions"]?.members ?? [] {
            let kind: SecurityScheme.Kind
            switch node["type"]?.string {
            case "basic": kind = .basic
            case "apiKey":
                guard let parameter = node["name"]?.string,
                    let place = node["in"]?.string.flatMap(Parameter.Place.init)
                else {
                    description.skipped.append(Skip(kind: .securityScheme, name: name, reason: "it has no name or 'in'"))
                    continue
                }
                kind = .apiKey(name: parameter, place: place)
            case "oauth2": kind = .oauth2
            case let other:
                kind = .unsupported("the security scheme type '\(other ?? "")' is unknown")
                description.skipped.append(Skip(kind: .securityScheme, name: name, reason: "its type '\(other ?? "")' is unknown"))
            }
            description.securitySchemes.append(SecurityScheme(name: name, kind: kind, description: node["description"]?.string))
        }
        description.namedSchemas = root["definitions"]?.members.map { ($0.key, $0.node) } ?? []
        let consumes = root["consumes"]?.elements.compactMap(\.string) ?? []
        let produces = root["produces"]?.elements.compactMap(\.string) ?? []
        for (path, reference) in root["paths"]?.members ?? [] where path.hasPrefix("/") {
            let item: Node
            do {
                item = try files.resolved(reference)
            } catch {
                description.skipped.append(Skip(kind: .operation, name: path, reason: "\(error)"))
                continue
            }
            for method in OpenAPIReader.methods {
                guard let node = item[method] else { continue }
                let name = "\(method.uppercased()) \(path)"
                do {
                    description.operations.append(
                        try operation(
                            method: method, path: path, node: files.resolved(node), item: item,
                            consumes: consumes, produces: produces))
                } catch {
                    description.skipped.append(Skip(kind: .operation, name: name, reason: "\(error)"))
                }
            }
        }
        return description
    }

    private func operation(
        method: String, path: String, node: Node, item: Node, consumes: [String], produces: [String]
    ) throws -> Operation {
        let consumes = node["consumes"]?.elements.compactMap(\.string) ?? consumes
        let produces = node["produces"]?.elements.compactMap(\.string) ?? produces
        var raw: [Node] = []
        for element in (item["parameters"]?.elements ?? []) + (node["parameters"]?.elements ?? []) {
            let parameter = try files.resolved(element)
            raw.removeAll { $0["name"]?.string == parameter["name"]?.string && $0["in"]?.string == parameter["in"]?.string }
            raw.append(parameter)
        }
        var parameters: [Parameter] = []
        var body: Body?
        var form: [(name: String, schema: JSON, required: Bool)] = []
        for parameter in raw {
            guard let name = parameter["name"]?.string, let place = parameter["in"]?.string else { continue }
            switch place {
            case "body":
                let types = consumes.isEmpty ? ["application/json"] : consumes
                body = Body(
                    required: parameter["required"]?.value.bool ?? false, description: parameter["description"]?.string,
                    content: types.map { MediaType(type: $0, schema: parameter["schema"]) })
            case "formData":
                form.append((name, Self.schema(of: parameter), parameter["required"]?.value.bool ?? false))
            default:
                guard let place = Parameter.Place(rawValue: place) else { continue }
                let format = parameter["collectionFormat"]?.string ?? "csv"
                let style: String =
                    switch (place, format) {
                    case (.query, "ssv"): "spaceDelimited"
                    case (.query, "pipes"): "pipeDelimited"
                    case (.query, _), (.cookie, _): "form"
                    default: "simple"
                    }
                parameters.append(
                    Parameter(
                        name: name, place: place, required: place == .path || (parameter["required"]?.value.bool ?? false),
                        deprecated: false, description: parameter["description"]?.string,
                        schema: Node(value: Self.schema(of: parameter), location: parameter.location), style: style,
                        explode: format == "multi", allowReserved: false, contentType: nil))
            }
        }
        if !form.isEmpty {
            let schema = JSON.object(
                JSONObject([
                    ("type", .string("object")),
                    ("properties", .object(JSONObject(form.map { ($0.name, $0.schema) }))),
                    ("required", .array(form.filter(\.required).map { .string($0.name) })),
                ]))
            let type =
                consumes.contains { $0.hasPrefix("multipart/") } || form.contains { $0.schema["format"] == .string("binary") }
                ? "multipart/form-data" : "application/x-www-form-urlencoded"
            body = Body(
                required: form.contains(where: \.required), description: nil,
                content: [MediaType(type: type, schema: Node(value: schema, location: node.location))])
        }
        var responses: [Response] = []
        for (status, reference) in node["responses"]?.members ?? [] where !status.hasPrefix("x-") {
            let response = try files.resolved(reference)
            let types = produces.isEmpty ? ["application/json"] : produces
            responses.append(
                Response(
                    status: status, description: response["description"]?.string,
                    content: response["schema"].map { schema in types.map { MediaType(type: $0, schema: schema) } } ?? []))
        }
        return Operation(
            method: method.uppercased(), path: path, operationId: node["operationId"]?.string,
            summary: node["summary"]?.string, description: node["description"]?.string,
            deprecated: node["deprecated"]?.value.bool ?? false, tags: node["tags"]?.elements.compactMap(\.string) ?? [],
            parameters: parameters, body: body, responses: responses, security: OpenAPIReader.security(node["security"]),
            servers: nil, location: node.location)
    }

    /// A Swagger parameter's schema: its own type keywords (`type: file` is binary text).
    static func schema(of parameter: Node) -> JSON {
        let keywords: Set<String> = [
            "type", "format", "items", "enum", "default", "minimum", "maximum", "pattern", "minLength", "maxLength",
        ]
        var members = (parameter.value.object?.members ?? []).filter { keywords.contains($0.key) }
        if let index = members.firstIndex(where: { $0.key == "type" }), members[index].value == .string("file") {
            members[index].value = .string("string")
            members.removeAll { $0.key == "format" }
            members.append(("format", .string("binary")))
        }
        return .object(JSONObject(members))
    }
}
