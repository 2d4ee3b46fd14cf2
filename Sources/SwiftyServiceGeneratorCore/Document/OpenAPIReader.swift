/// Reads an OpenAPI 3.0 or 3.1 document (and, through ``SwaggerReader``, a Swagger 2.0 one).
struct OpenAPIReader {
    static let methods = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]

    let files: DescriptionFiles
    private var skipped: [Skip] = []

    init(files: DescriptionFiles) { self.files = files }

    static func read(_ files: DescriptionFiles) throws -> APIDescription {
        let root = files.root
        guard root.value.object != nil else {
            throw DescriptionError(message: "\(root.location.file) does not hold an OpenAPI document (an object)")
        }
        if let swagger = root["swagger"]?.value.scalarText {
            guard swagger.hasPrefix("2.") else {
                throw DescriptionError(message: "Swagger \(swagger) is not supported (2.0 and OpenAPI 3.0, 3.1 are)")
            }
            return try SwaggerReader(files: files).read()
        }
        guard let version = root["openapi"]?.value.scalarText else {
            throw DescriptionError(message: "\(root.location.file) names no OpenAPI version ('openapi: 3.1.0')")
        }
        guard version.hasPrefix("3.") else {
            throw DescriptionError(message: "OpenAPI \(version) is not supported (3.0 and 3.1 are, and Swagger 2.0)")
        }
        var reader = OpenAPIReader(files: files)
        return try reader.read()
    }

    private mutating func read() throws -> APIDescription {
        let root = files.root
        let info = root["info"]
        var description = APIDescription(
            title: info?["title"]?.value.scalarText ?? "API", version: info?["version"]?.value.scalarText ?? "",
            summary: info?["description"]?.string ?? info?["summary"]?.string)
        description.servers = try servers(root["servers"])
        if description.servers.isEmpty { description.servers = [Server(url: "/", description: nil, variables: [])] }
        description.security = Self.security(root["security"]) ?? []
        description.tagOrder = root["tags"]?.elements.compactMap { $0["name"]?.string } ?? []
        if let schemes = root["components"]?["securitySchemes"] {
            for (name, node) in schemes.members {
                do {
                    let scheme = try securityScheme(name, files.resolved(node))
                    if case let .unsupported(reason) = scheme.kind {
                        skipped.append(Skip(kind: .securityScheme, name: name, reason: reason))
                    }
                    description.securitySchemes.append(scheme)
                } catch {
                    skipped.append(Skip(kind: .securityScheme, name: name, reason: "\(error)"))
                }
            }
        }
        description.namedSchemas = root["components"]?["schemas"]?.members.map { ($0.key, $0.node) } ?? []
        for (path, item) in root["paths"]?.members ?? [] where path.hasPrefix("/") {
            description.operations += try operations(path: path, item: item)
        }
        for (name, _) in root["webhooks"]?.members ?? [] {
            skipped.append(
                Skip(
                    kind: .webhook, name: name,
                    reason: "a webhook is a request the API sends to its users; a client has nothing to call"))
        }
        description.skipped = skipped
        return description
    }

    private func servers(_ node: Node?) throws -> [Server] {
        try (node?.elements ?? []).map { element in
            let server = try files.resolved(element)
            return Server(
                url: server["url"]?.string ?? "/", description: server["description"]?.string,
                variables: (server["variables"]?.members ?? []).map { name, variable in
                    Server.Variable(
                        name: name, defaultValue: variable["default"]?.value.scalarText ?? "",
                        allowed: variable["enum"]?.elements.compactMap { $0.value.scalarText } ?? [],
                        description: variable["description"]?.string)
                })
        }
    }

    static func security(_ node: Node?) -> [[String]]? {
        guard let node else { return nil }
        return node.elements.map { requirement in requirement.members.map(\.key) }
    }

    private func securityScheme(_ name: String, _ node: Node) throws -> SecurityScheme {
        let description = node["description"]?.string
        let kind: SecurityScheme.Kind
        switch node["type"]?.string?.lowercased() {
        case "apikey":
            guard let parameter = node["name"]?.string, let place = node["in"]?.string.flatMap(Parameter.Place.init),
                place != .path
            else {
                throw DescriptionError(message: "an API key scheme needs a name and 'in' (header, query or cookie)")
            }
            kind = .apiKey(name: parameter, place: place)
        case "http":
            switch node["scheme"]?.string?.lowercased() {
            case "basic": kind = .basic
            case "bearer": kind = .bearer(format: node["bearerFormat"]?.string)
            case let other: kind = .unsupported("the HTTP authentication scheme '\(other ?? "")' has no middleware")
            }
        case "oauth2": kind = .oauth2
        case "openidconnect": kind = .openIDConnect
        case "mutualtls":
            kind = .unsupported("mutual TLS is set up with the realm's TLS policy (setTLSPolicy), not a header")
        case let other: kind = .unsupported("the security scheme type '\(other ?? "")' is unknown")
        }
        return SecurityScheme(name: name, kind: kind, description: description)
    }

    private mutating func operations(path: String, item reference: Node) throws -> [Operation] {
        let item: Node
        do {
            item = try files.resolved(reference)
        } catch {
            for method in Self.methods {
                skipped.append(Skip(kind: .operation, name: "\(method.uppercased()) \(path)", reason: "\(error)"))
            }
            return []
        }
        let shared = item["parameters"]?.elements ?? []
        let pathServers = try servers(item["servers"])
        var operations: [Operation] = []
        for method in Self.methods {
            guard let node = item[method] else { continue }
            let name = "\(method.uppercased()) \(path)"
            do {
                let operation = try files.resolved(node)
                var parameters: [Parameter] = []
                for element in shared + (operation["parameters"]?.elements ?? []) {
                    let parameter = try self.parameter(files.resolved(element))
                    parameters.removeAll { $0.name == parameter.name && $0.place == parameter.place }
                    parameters.append(parameter)
                }
                let operationServers = try servers(operation["servers"])
                for (callback, _) in operation["callbacks"]?.members ?? [] {
                    skipped.append(
                        Skip(
                            kind: .callback, name: "\(callback) of \(name)",
                            reason: "a callback is a request the API sends to its users; a client has nothing to call"))
                }
                operations.append(
                    Operation(
                        method: method.uppercased(), path: path, operationId: operation["operationId"]?.string,
                        summary: operation["summary"]?.string, description: operation["description"]?.string,
                        deprecated: operation["deprecated"]?.value.bool ?? false,
                        tags: operation["tags"]?.elements.compactMap(\.string) ?? [],
                        parameters: parameters,
                        body: try operation["requestBody"].map { try body(files.resolved($0)) },
                        responses: try responses(operation["responses"]),
                        security: Self.security(operation["security"]),
                        servers: operationServers.isEmpty ? (pathServers.isEmpty ? nil : pathServers) : operationServers,
                        location: operation.location))
            } catch {
                skipped.append(Skip(kind: .operation, name: name, reason: "\(error)"))
            }
        }
        return operations
    }

    private func parameter(_ node: Node) throws -> Parameter {
        guard let name = node["name"]?.string, let placeText = node["in"]?.string else {
            throw DescriptionError(message: "the parameter at \(node.location) has no name or no 'in'")
        }
        guard let place = Parameter.Place(rawValue: placeText) else {
            throw DescriptionError(message: "the parameter '\(name)' is in '\(placeText)', which OpenAPI 3 does not know")
        }
        let style = node["style"]?.string ?? (place == .query || place == .cookie ? "form" : "simple")
        var schema = node["schema"]
        var contentType: String?
        if schema == nil, let content = node["content"]?.members.first {
            contentType = content.key
            schema = content.node["schema"]
        }
        return Parameter(
            name: name, place: place, required: place == .path || (node["required"]?.value.bool ?? false),
            deprecated: node["deprecated"]?.value.bool ?? false, description: node["description"]?.string,
            schema: schema, style: style, explode: node["explode"]?.value.bool ?? (style == "form"),
            allowReserved: node["allowReserved"]?.value.bool ?? false, contentType: contentType)
    }

    private func body(_ node: Node) throws -> Body {
        Body(
            required: node["required"]?.value.bool ?? false, description: node["description"]?.string,
            content: try mediaTypes(node["content"]))
    }

    private func mediaTypes(_ node: Node?) throws -> [MediaType] {
        try (node?.members ?? []).map { type, media in
            let media = try files.resolved(media)
            var encodings: [String: MediaType.Encoding] = [:]
            for (property, encoding) in media["encoding"]?.members ?? [] {
                encodings[property] = MediaType.Encoding(
                    style: encoding["style"]?.string, explode: encoding["explode"]?.value.bool,
                    contentType: encoding["contentType"]?.string)
            }
            return MediaType(type: type, schema: media["schema"], encoding: encodings)
        }
    }

    private func responses(_ node: Node?) throws -> [Response] {
        try (node?.members ?? []).filter { !$0.key.hasPrefix("x-") }.map { status, response in
            let response = try files.resolved(response)
            return Response(
                status: status, description: response["description"]?.string,
                content: try mediaTypes(response["content"]))
        }
    }
}
