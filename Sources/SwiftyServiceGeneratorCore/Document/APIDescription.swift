/// A description read into what the generator needs, whatever version it was written in (OpenAPI 3.0 or
/// 3.1, Swagger 2.0): operations with their parameters, bodies and responses; servers; security schemes;
/// named schemas. Schemas stay ``Node``s: the type mapper reads them.
struct APIDescription {
    var title: String
    var version: String
    var summary: String?
    var servers: [Server] = []
    var operations: [Operation] = []
    var securitySchemes: [SecurityScheme] = []
    /// The document's security: alternatives, each a set of schemes used together; empty when none.
    var security: [[String]] = []
    /// `components/schemas` (or `definitions`), in order.
    var namedSchemas: [(name: String, node: Node)] = []
    /// The tags in the order the document lists them.
    var tagOrder: [String] = []
    /// What the document holds that is not generated, and why.
    var skipped: [Skip] = []
}

/// Something of the description left out of the generated code, and why. Nothing is left out silently.
public struct Skip: Sendable, Equatable, CustomStringConvertible {
    /// What kind of thing: an operation, a schema, a webhook, a callback, a security scheme.
    public enum Kind: String, Sendable {
        case operation, schema, webhook, callback, securityScheme = "security scheme", parameter
    }

    /// What kind of thing.
    public let kind: Kind
    /// Which: `GET /pets/{id}`, `Pet`, `newPet`.
    public let name: String
    /// Why.
    public let reason: String

    /// `skipped operation GET /pets: …`
    public var description: String { "skipped \(kind.rawValue) \(name): \(reason)" }
}

struct Server {
    struct Variable {
        var name: String
        var defaultValue: String
        var allowed: [String]
        var description: String?
    }

    var url: String
    var description: String?
    var variables: [Variable]
}

struct Operation {
    var method: String
    var path: String
    var operationId: String?
    var summary: String?
    var description: String?
    var deprecated: Bool
    var tags: [String]
    var parameters: [Parameter]
    var body: Body?
    var responses: [Response]
    /// `nil`: the document's security applies.
    var security: [[String]]?
    var servers: [Server]?
    var location: Location

    /// `GET /pets/{petId}`
    var displayName: String { "\(method) \(path)" }
}

struct Parameter {
    enum Place: String {
        case path, query, header, cookie
    }

    var name: String
    var place: Place
    var required: Bool
    var deprecated: Bool
    var description: String?
    var schema: Node?
    /// `form`, `simple`, `label`, `matrix`, `spaceDelimited`, `pipeDelimited`, `deepObject`.
    var style: String
    var explode: Bool
    var allowReserved: Bool
    /// Set when the parameter is described by `content` rather than `schema`: its value is serialized as that type.
    var contentType: String?
}

struct MediaType {
    struct Encoding {
        var style: String?
        var explode: Bool?
        var contentType: String?
    }

    var type: String
    var schema: Node?
    var encoding: [String: Encoding] = [:]
}

struct Body {
    var required: Bool
    var description: String?
    var content: [MediaType]
}

struct Response {
    /// `200`, `2XX`, `default`.
    var status: String
    var description: String?
    var content: [MediaType]
}

struct SecurityScheme {
    enum Kind {
        case apiKey(name: String, place: Parameter.Place)
        case basic
        case bearer(format: String?)
        case oauth2
        case openIDConnect
        case unsupported(String)
    }

    var name: String
    var kind: Kind
    var description: String?
}
