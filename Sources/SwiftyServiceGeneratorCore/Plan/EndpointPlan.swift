import Foundation

/// One endpoint enum: the operations of one tag (or of the whole document), and the types they declare.
final class EndpointGroup {
    let name: String
    let tag: String?
    var doc: String?
    /// Holds the types the operations declare inline (`ListPetsResponse`…), nested in the enum.
    let types: ModelDecl
    var cases: [EndpointCase] = []
    var caseNames = NameScope(reserved: Naming.endpointMembers)

    init(name: String, tag: String?, reserved: Set<String>) {
        self.name = name
        self.tag = tag
        types = ModelDecl(name: name, qualifiedName: name, reserved: reserved.union([name, "Typed"]))
        types.body = .namespace
    }
}

/// One operation as an enum case: its arguments and how each reaches the request.
struct EndpointCase {
    struct Argument {
        enum Role {
            case parameter(Parameter)
            case body
        }

        var label: String
        var type: SwiftType
        var optional: Bool
        var role: Role
        /// For `content`-described parameters: the value is written as JSON.
        var asJSON = false

        var parameter: Parameter? {
            if case let .parameter(parameter) = role { return parameter }
            return nil
        }
    }

    enum BodyPlan {
        /// `application/json` and its relatives: the value encoded as JSON, sent as `contentType`.
        case json(contentType: String)
        /// `application/x-www-form-urlencoded`: a struct's members as a form.
        case form(bracketedArrays: Bool)
        /// `multipart/form-data` from a generated struct (one part per member).
        case multipartModel(ModelDecl, [String: MediaType.Encoding])
        /// `multipart/form-data` the app builds itself.
        case multipartForm
        case text(contentType: String)
        case data(contentType: String)
    }

    enum Answer {
        case noContent
        case decoded(SwiftType)
        /// No typed form: the answer is not JSON.
        case untyped(String)
    }

    var name: String
    var operation: Operation
    var arguments: [Argument]
    var body: BodyPlan?
    var answer: Answer
    var errorType: SwiftType?
    /// The security requirement alternatives that apply: each a list of scheme names used together.
    var security: [[String]]

    var label: String { "\(operation.method) \(operation.path)" }
}

/// Turns operations into endpoint cases, mapping their parameter, body and response schemas.
struct EndpointPlanner {
    let mapper: TypeMapper
    let namespace: String
    let description: APIDescription
    private(set) var notes: [String] = []
    private(set) var skipped: [Skip] = []

    init(mapper: TypeMapper, namespace: String, description: APIDescription) {
        self.mapper = mapper
        self.namespace = namespace
        self.description = description
    }

    static func caseName(for operation: Operation, tag: String?) -> String {
        guard let operationID = operation.operationId, !Naming.words(operationID).isEmpty else {
            let pathWords = operation.path.split(separator: "/").map { segment in
                segment.hasPrefix("{") ? "By " + segment.dropFirst().dropLast() : String(segment)
            }
            return Naming.lowerCamel(([operation.method.lowercased()] + pathWords).joined(separator: " "))
        }
        var name = Naming.lowerCamel(operationID)
        // `repos/get-content` in the tag `repos` is `getContent` there.
        if let tag {
            let tagWords = Naming.words(tag).map { $0.lowercased() }
            let words = Naming.words(operationID)
            if !tagWords.isEmpty, words.count > tagWords.count,
                Array(words.prefix(tagWords.count)).map({ $0.lowercased() }) == tagWords
            {
                name = Naming.lowerCamel(words.dropFirst(tagWords.count).joined(separator: " "))
            }
        }
        return name
    }

    mutating func plan(_ operation: Operation, into group: EndpointGroup) {
        let name = group.caseNames.claim(
            Self.caseName(for: operation, tag: group.tag).replacingOccurrences(of: "`", with: ""))
        let typePrefix = Naming.upperFirst(name)
        var labels = NameScope(reserved: [])
        var required: [EndpointCase.Argument] = []
        var optional: [EndpointCase.Argument] = []
        let pathOrder = Self.pathParameterNames(operation.path)
        if let server = operation.servers?.first, SupportEmitter.literalURL(server) == nil {
            notes.append(
                "\(operation.displayName): its server \(server.url) is no URL without values the app gives; it is sent to the realm's base URL")
        }
        let parameters = operation.parameters.sorted { lhs, rhs in
            let left = lhs.place == .path ? pathOrder.firstIndex(of: lhs.name) ?? Int.max : Int.max
            let right = rhs.place == .path ? pathOrder.firstIndex(of: rhs.name) ?? Int.max : Int.max
            return left < right
        }
        for parameter in parameters {
            if parameter.place == .header,
                ["accept", "content-type", "authorization"].contains(parameter.name.lowercased())
            {
                notes.append(
                    "\(operation.displayName): the header parameter \(parameter.name) is ignored, as OpenAPI says")
                continue
            }
            if parameter.place == .path, !pathOrder.contains(parameter.name) {
                notes.append(
                    "\(operation.displayName): the path parameter \(parameter.name) is not in the path; it is ignored")
                continue
            }
            var base = Naming.lowerCamel(parameter.name)
            if labels.contains(base) { base += Naming.upperFirst(parameter.place.rawValue) }
            let label = labels.claim(base)
            let mapped =
                parameter.schema.map {
                    mapper.map($0, name: typePrefix + Naming.upperCamel(parameter.name), at: .nested(group.types))
                } ?? TypeMapper.Mapped(type: .string, nullable: false)
            var argument = EndpointCase.Argument(
                label: label, type: mapped.type, optional: !parameter.required, role: .parameter(parameter))
            argument.asJSON = parameter.contentType.map(Self.isJSON) ?? false
            if argument.optional { optional.append(argument) } else { required.append(argument) }
        }
        for missing in pathOrder where !parameters.contains(where: { $0.place == .path && $0.name == missing }) {
            // A path template with a variable that no parameter describes: it still needs a value.
            let parameter = Parameter(
                name: missing, place: .path, required: true, deprecated: false, description: nil, schema: nil,
                style: "simple", explode: false, allowReserved: false, contentType: nil)
            notes.append("\(operation.displayName): {\(missing)} has no parameter; it is taken as a string")
            required.append(
                EndpointCase.Argument(
                    label: labels.claim(Naming.lowerCamel(missing)), type: .string, optional: false,
                    role: .parameter(parameter)))
        }
        var bodyPlan: EndpointCase.BodyPlan?
        if let body = operation.body, let (plan, type) = self.body(body, operation, typePrefix, group) {
            bodyPlan = plan
            let argument = EndpointCase.Argument(
                label: labels.claim("body"), type: type, optional: !body.required, role: .body)
            if argument.optional { optional.append(argument) } else { required.append(argument) }
        }
        let (answer, errorType) = responses(operation, typePrefix, group)
        let security = (operation.security ?? description.security).filter { requirement in
            requirement.allSatisfy { name in description.securitySchemes.contains { $0.name == name } }
        }
        group.cases.append(
            EndpointCase(
                name: name, operation: operation, arguments: required + optional, body: bodyPlan, answer: answer,
                errorType: errorType, security: security))
    }

    static func pathParameterNames(_ path: String) -> [String] {
        var names: [String] = []
        var rest = Substring(path)
        while let open = rest.firstIndex(of: "{"), let close = rest[open...].firstIndex(of: "}") {
            names.append(String(rest[rest.index(after: open)..<close]))
            rest = rest[rest.index(after: close)...]
        }
        return names
    }

    static func isJSON(_ type: String) -> Bool {
        let base = type.split(separator: ";").first.map { $0.trimmed.lowercased() } ?? ""
        return base == "application/json" || base.hasSuffix("+json") || base == "text/json"
            || (base.hasPrefix("application/") && base.hasSuffix("json"))
    }

    private mutating func body(_ body: Body, _ operation: Operation, _ prefix: String, _ group: EndpointGroup)
        -> (EndpointCase.BodyPlan, SwiftType)?
    {
        let content = body.content
        guard !content.isEmpty else { return nil }
        func schemaType(_ media: MediaType) -> TypeMapper.Mapped? {
            media.schema.map { mapper.map($0, name: prefix + "Request", at: .nested(group.types)) }
        }
        if let json = content.first(where: { Self.isJSON($0.type) }) {
            let type = schemaType(json)?.type ?? .json
            return (.json(contentType: json.type), type)
        }
        if let form = content.first(where: { $0.type.lowercased().hasPrefix("application/x-www-form-urlencoded") }),
            let mapped = schemaType(form), Self.isObject(mapped.type)
        {
            let bracketed = form.encoding.values.contains { $0.style == "deepObject" }
            return (.form(bracketedArrays: bracketed), mapped.type)
        }
        if let multipart = content.first(where: { $0.type.lowercased().hasPrefix("multipart/") }) {
            if let mapped = schemaType(multipart), case let .model(name, .object) = mapped.type,
                let decl = mapper.declaration(named: name)
            {
                return (.multipartModel(decl, multipart.encoding), mapped.type)
            }
            notes.append("\(operation.displayName): the multipart body is built by the app (a MultipartForm)")
            return (.multipartForm, .model("MultipartForm", .object))
        }
        if let text = content.first(where: { $0.type.lowercased().hasPrefix("text/") }),
            schemaType(text).map({ $0.type.underlying == .string }) ?? true
        {
            return (.text(contentType: Self.concrete(text.type, fallback: "text/plain")), .string)
        }
        let first = content[0]
        if content.contains(where: { Self.isJSON($0.type) == false && $0.schema.map(Self.isBinarySchema) == false }) {
            notes.append(
                "\(operation.displayName): the \(first.type) body is sent as bytes the app encodes (Data)")
        }
        return (.data(contentType: Self.concrete(first.type, fallback: "application/octet-stream")), .data)
    }

    /// `image/*` and `*/*` are ranges, not types a request can name.
    static func concrete(_ type: String, fallback: String) -> String {
        type.contains("*") ? fallback : type
    }

    static func isBinarySchema(_ node: Node) -> Bool {
        node["format"]?.string == "binary" || node.value.object?.isEmpty == true
            || node["type"]?.string == "string"
    }

    static func isObject(_ type: SwiftType) -> Bool {
        switch type.underlying {
        case .model(_, .object), .dictionary: true
        default: false
        }
    }

    private mutating func responses(_ operation: Operation, _ prefix: String, _ group: EndpointGroup) -> (
        EndpointCase.Answer, SwiftType?
    ) {
        let responses = operation.responses
        let successes = responses.filter { $0.status.hasPrefix("2") }.sorted { $0.status < $1.status }
        let success = successes.first ?? responses.first { $0.status == "default" }
        var answer = EndpointCase.Answer.noContent
        if let success, !success.content.isEmpty {
            if let json = success.content.first(where: { Self.isJSON($0.type) }) {
                let type =
                    json.schema.map { mapper.map($0, name: prefix + "Response", at: .nested(group.types)).type } ?? .json
                answer = .decoded(type)
            } else {
                answer = .untyped("it answers \(success.content.map(\.type).joined(separator: ", ")), not JSON")
            }
        } else if success == nil {
            answer = .noContent
        }
        var counts: [(type: SwiftType, count: Int)] = []
        for response in responses where response.status != success?.status {
            guard response.status == "default" || response.status.hasPrefix("4") || response.status.hasPrefix("5"),
                let json = response.content.first(where: { Self.isJSON($0.type) }), let schema = json.schema
            else { continue }
            let type = mapper.map(schema, name: prefix + "Error", at: .nested(group.types)).type
            if let index = counts.firstIndex(where: { $0.type == type }) {
                counts[index].count += 1
            } else {
                counts.append((type, 1))
            }
        }
        let errorType = counts.max { $0.count < $1.count }.map(\.type)
        return (answer, errorType)
    }
}
