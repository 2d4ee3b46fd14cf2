import Foundation

/// Writes the namespace of a description: its realm and servers, the credentials of its security schemes and
/// the middleware that sends them, and the coding every endpoint and model shares.
struct SupportEmitter {
    let namespace: String
    let access: String
    let realmKey: String
    let description: APIDescription

    /// The server's URL with its variables' defaults, if it is absolute.
    static func literalURL(_ server: Server) -> String? {
        var url = server.url
        for variable in server.variables { url = url.replacingOccurrences(of: "{\(variable.name)}", with: variable.defaultValue) }
        guard let parsed = URL(string: url), parsed.scheme != nil, parsed.host != nil else { return nil }
        return url
    }

    func emit(into writer: inout SwiftWriter) {
        var summary = "\(description.title)"
        if !description.version.isEmpty { summary += " \(description.version)" }
        writer.doc(
            "\(summary): the realm, servers and credentials of its endpoints, and the coding they share.\n\n"
                + "Call ``configure(baseURL:credentials:)`` once at start-up; the endpoint enums do the rest.")
        writer.block("\(access)enum \(namespace)") { writer in
            writer.doc("The realm every endpoint of the API is sent through: `ServiceRealm.get(\"\(realmKey)\")`.")
            writer.line("\(access)static var realm: ServiceRealm { .get(\(SwiftWriter.literal(realmKey))) }")
            writer.line()
            emitServers(into: &writer)
            writer.line()
            emitConfigure(into: &writer)
        }
        if !schemes.isEmpty {
            writer.line()
            emitSecurity(into: &writer)
            writer.line()
            writer.line(Self.requestHelpers.replacingOccurrences(of: "API_NAMESPACE", with: namespace))
        }
        writer.line()
        writer.line("// MARK: Coding")
        writer.line()
        writer.line(
            Self.coding.replacingOccurrences(of: "API_NAMESPACE", with: namespace).replacingOccurrences(
                of: "API_ACCESS", with: access))
    }

    // MARK: Servers

    private var servers: [(name: String, server: Server)] {
        var names = NameScope(reserved: ["realm", "configure", "decoder", "encoder", "defaultBaseURL"])
        return description.servers.enumerated().map { index, server in
            var base = server.description.map { Naming.lowerCamel($0) } ?? ""
            if base.isEmpty || base.count > 40 { base = description.servers.count == 1 ? "server" : "server\(index + 1)" }
            if !base.lowercased().hasSuffix("server") { base += "Server" }
            return (names.claim(base), server)
        }
    }

    private func emitServers(into writer: inout SwiftWriter) {
        let first = description.servers.first.flatMap(Self.literalURL)
        writer.doc(
            first != nil
                ? "The base URL of the description's first server, `\(first!)`."
                : "No base URL: the description's first server is relative (`\(description.servers.first?.url ?? "/")`), so the app gives one to ``configure(baseURL:credentials:)``.")
        writer.line(
            "\(access)static let defaultBaseURL: URL? = \(first.map { "URL(string: \(SwiftWriter.literal($0)))" } ?? "nil")")
        for (name, server) in servers {
            writer.line()
            var doc = "`\(server.url)`"
            if let text = server.description { doc += ": " + text }
            for variable in server.variables {
                var line = "- `\(variable.name)`" + (variable.description.map { ": " + $0 } ?? "")
                if !variable.allowed.isEmpty {
                    line += " (one of \(variable.allowed.map { "`\($0)`" }.joined(separator: ", ")))"
                }
                doc += "\n" + line
            }
            writer.doc(doc)
            if server.variables.isEmpty {
                writer.line("\(access)static let \(name) = URL(string: \(SwiftWriter.literal(server.url)))")
                continue
            }
            var labels = NameScope()
            let arguments = server.variables.map { variable in
                (variable, labels.claim(Naming.lowerCamel(variable.name)))
            }
            writer.wrapped(
                "\(access)static func \(name)",
                arguments.map { "\(Naming.escaped($1)): String = \(SwiftWriter.literal($0.defaultValue))" }, " -> URL? {")
            writer.indent { writer in
                writer.line("var url = \(SwiftWriter.literal(server.url))")
                for (variable, label) in arguments {
                    writer.line(
                        "url = url.replacingOccurrences(of: \(SwiftWriter.literal("{\(variable.name)}")), with: \(Naming.escaped(label)))")
                }
                writer.line("return URL(string: url)")
            }
            writer.line("}")
        }
    }

    private func emitConfigure(into writer: inout SwiftWriter) {
        writer.doc(
            "Sets up ``realm``: its base URL (``defaultBaseURL`` unless given)"
                + (schemes.isEmpty ? "." : " and the credentials the endpoints send, as each one's security asks.")
                + "\n\nCall it once: each call adds the credentials' middleware again.")
        writer.line("@discardableResult")
        let parameters =
            ["baseURL: URL? = defaultBaseURL"] + (schemes.isEmpty ? [] : ["credentials: Credentials = Credentials()"])
        writer.wrapped("\(access)static func configure", parameters, " -> ServiceRealm {")
        writer.indent { writer in
            writer.line("let realm = realm")
            writer.line("if let baseURL { realm.setBaseURL(baseURL) }")
            if !schemes.isEmpty { writer.line("realm.addMiddleware(Authentication(credentials: credentials))") }
            writer.line("return realm")
        }
        writer.line("}")
    }

    // MARK: Security

    private var schemes: [(property: String, scheme: SecurityScheme)] {
        var names = NameScope(reserved: ["init", "has"])
        return description.securitySchemes.compactMap { scheme in
            if case .unsupported = scheme.kind { return nil }
            return (names.claim(Naming.lowerCamel(scheme.name)), scheme)
        }
    }

    private func emitSecurity(into writer: inout SwiftWriter) {
        writer.block("extension \(namespace)") { writer in
            emitCredentials(into: &writer)
            writer.line()
            writer.doc("An endpoint that says which security schemes it needs.")
            writer.block("protocol SecuredEndpoint") { writer in
                writer.line("var securityRequirements: [[String]] { get }")
            }
            writer.line()
            writer.doc("Security of an endpoint that does not say (one overridden for one request).")
            writer.line(
                "static let defaultSecurity: [[String]] = [" + description.security.map {
                    "[" + $0.map(SwiftWriter.literal).joined(separator: ", ") + "]"
                }.joined(separator: ", ") + "]")
            writer.line()
            emitAuthentication(into: &writer)
        }
    }

    /// The app's credentials for each scheme, and basic authentication made from a user and password.
    private func emitCredentials(into writer: inout SwiftWriter) {
        writer.doc(
            "What the app supplies for the description's security schemes. An endpoint is sent with the first of its security requirements the app has every credential for; left `nil`, a scheme is never sent.")
        writer.block("\(access)struct Credentials: Sendable") { writer in
            for (property, scheme) in schemes {
                var doc = "`\(scheme.name)`: "
                switch scheme.kind {
                case let .apiKey(name, place):
                    doc += "an API key sent in the \(place.rawValue) `\(name)`, as the closure returns it."
                    writer.doc(doc + (scheme.description.map { "\n\n" + $0 } ?? ""))
                    writer.line("\(access)var \(Naming.escaped(property)): (@Sendable () async throws -> String)?")
                case .basic:
                    doc += "HTTP basic authentication; ``basicAuthentication(user:password:)`` makes it."
                    writer.doc(doc + (scheme.description.map { "\n\n" + $0 } ?? ""))
                    writer.line("\(access)var \(Naming.escaped(property)): TokenAuthentication?")
                case .bearer, .oauth2, .openIDConnect:
                    doc += "a bearer token, from the app's `TokenAuthentication` (which refreshes it)."
                    writer.doc(doc + (scheme.description.map { "\n\n" + $0 } ?? ""))
                    writer.line("\(access)var \(Naming.escaped(property)): TokenAuthentication?")
                case .unsupported: break
                }
            }
            writer.line()
            writer.doc("Credentials for some of the schemes; the others are never sent.")
            let parameters = schemes.map { property, scheme in
                switch scheme.kind {
                case .apiKey:
                    "\(Naming.escaped(property)): (@Sendable () async throws -> String)? = nil"
                default: "\(Naming.escaped(property)): TokenAuthentication? = nil"
                }
            }
            writer.wrapped("\(access)init", parameters, " {")
            writer.indent { writer in
                for (property, _) in schemes {
                    writer.line("self.\(Naming.escaped(property)) = \(Naming.escaped(property))")
                }
            }
            writer.line("}")
            if schemes.contains(where: { if case .basic = $0.scheme.kind { true } else { false } }) {
                writer.line()
                writer.doc(
                    "HTTP basic authentication for `user` and `password`, through `TokenAuthentication` (a 401 is tried once more).")
                writer.block(
                    "\(access)static func basicAuthentication(user: String, password: String) -> TokenAuthentication"
                ) {
                    writer in
                    writer.line("let token = AccessToken(Data(\"\\(user):\\(password)\".utf8).base64EncodedString())")
                    writer.line("return TokenAuthentication(initial: token, scheme: \"Basic\") { token }")
                }
            }
            writer.line()
            writer.block("func has(_ scheme: String) -> Bool") { writer in
                writer.switchBlock("switch scheme") { writer in
                    for (property, scheme) in schemes {
                        writer.line("case \(SwiftWriter.literal(scheme.name)): \(Naming.escaped(property)) != nil")
                    }
                    writer.line("default: false")
                }
            }
        }
    }

    /// The middleware that puts each request's credentials where its security requirements say.
    private func emitAuthentication(into writer: inout SwiftWriter) {
        writer.doc("Sends each request with the credentials its security requirements ask for.")
        writer.block("struct Authentication: Middleware") { writer in
            writer.line("let credentials: Credentials")
            writer.line()
            writer.line("func intercept(_ request: URLRequest, context: RequestContext, next: MiddlewareNext)")
            writer.indent { $0.line("async throws -> Response") }
            writer.line("{")
            writer.indent { writer in
                writer.line("let requirements =")
                writer.indent {
                    $0.line("(context.endpoint as? any SecuredEndpoint)?.securityRequirements ?? defaultSecurity")
                }
                // An empty requirement makes the credentials optional: none are sent.
                writer.line("guard !requirements.contains(where: \\.isEmpty),")
                writer.indent { $0.line("let chosen = requirements.first(where: { $0.allSatisfy(credentials.has) })") }
                writer.block("else") { writer in
                    writer.line("return try await next(request)")
                }
                let hasKeys = schemes.contains { if case .apiKey = $0.scheme.kind { true } else { false } }
                let hasTokens = schemes.contains { if case .apiKey = $0.scheme.kind { false } else { true } }
                if hasKeys { writer.line("var request = request") }
                if hasTokens { writer.line("var token: TokenAuthentication?") }
                writer.block("for scheme in chosen") { writer in
                    writer.switchBlock("switch scheme") { writer in
                        for (property, scheme) in schemes {
                            let name = Naming.escaped(property)
                            switch scheme.kind {
                            case let .apiKey(parameter, place):
                                writer.line("case \(SwiftWriter.literal(scheme.name)):")
                                writer.indent { writer in
                                    writer.line("guard let key = try await credentials.\(name)?() else { continue }")
                                    let literal = SwiftWriter.literal(parameter)
                                    switch place {
                                    case .query:
                                        writer.line("request = \(namespace).adding(query: \(literal), value: key, to: request)")
                                    case .cookie:
                                        writer.line("request = \(namespace).adding(cookie: \(literal), value: key, to: request)")
                                    default: writer.line("request.setValue(key, forHTTPHeaderField: \(literal))")
                                    }
                                }
                            default:
                                writer.line("case \(SwiftWriter.literal(scheme.name)): token = token ?? credentials.\(name)")
                            }
                        }
                        writer.line("default: break")
                    }
                }
                if hasTokens {
                    writer.block("if let token") { writer in
                        writer.line("return try await token.intercept(request, context: context, next: next)")
                    }
                }
                writer.line("return try await next(request)")
            }
            writer.line("}")
        }
    }

    /// What the authentication middleware needs to put an API key in the query or a cookie.
    static let requestHelpers = #"""
        extension API_NAMESPACE {
            /// `request` with one more query parameter.
            static func adding(query name: String, value: String, to request: URLRequest) -> URLRequest {
                guard let url = request.url, var components = URLComponents(url: url, resolvingAgainstBaseURL: false)
                else { return request }
                let allowed = CharacterSet(charactersIn: "-._~").union(.alphanumerics)
                let pair =
                    (name.addingPercentEncoding(withAllowedCharacters: allowed) ?? name) + "="
                    + (value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value)
                components.percentEncodedQuery = components.percentEncodedQuery.map { $0 + "&" + pair } ?? pair
                var request = request
                request.url = components.url ?? url
                return request
            }

            /// `request` with one more cookie.
            static func adding(cookie name: String, value: String, to request: URLRequest) -> URLRequest {
                var request = request
                let cookie = "\(name)=\(value)"
                let existing = request.value(forHTTPHeaderField: "Cookie")
                request.setValue(existing.map { $0 + "; " + cookie } ?? cookie, forHTTPHeaderField: "Cookie")
                return request
            }
        }
        """#

    /// Shared by every description's namespace: dates, JSON values, parameter styles.
    static let coding = #"""
        extension API_NAMESPACE {
            /// Reads JSON with the API's dates: RFC 3339 date-times, with or without fractions of a second, and
            /// full dates (`2024-05-01`).
            API_ACCESSstatic let decoder: JSONDecoder = {
                let decoder = JSONDecoder()
                decoder.dateDecodingStrategy = .custom { decoder in
                    let container = try decoder.singleValueContainer()
                    let text = try container.decode(String.self)
                    guard let date = date(from: text) else {
                        throw DecodingError.dataCorruptedError(
                            in: container, debugDescription: "'\(text)' is not an RFC 3339 date or date-time")
                    }
                    return date
                }
                return decoder
            }()

            /// Writes JSON with the API's dates (RFC 3339 date-times in UTC) and keys in a stable order.
            API_ACCESSstatic let encoder: JSONEncoder = {
                let encoder = JSONEncoder()
                encoder.outputFormatting = .sortedKeys
                encoder.dateEncodingStrategy = .custom { date, encoder in
                    var container = encoder.singleValueContainer()
                    try container.encode(dateTimeText(date))
                }
                return encoder
            }()

            /// `2024-05-01T09:30:00Z`, or with fractions of a second when the date has them.
            static func dateTimeText(_ date: Date) -> String {
                let whole = date.timeIntervalSince1970.rounded(.down) == date.timeIntervalSince1970
                return date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: !whole))
            }

            /// `2024-05-01`, the day in UTC.
            static func dateText(_ date: Date) -> String {
                date.formatted(Date.ISO8601FormatStyle().year().month().day())
            }

            static func date(from text: String) -> Date? {
                if let date = try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)) {
                    return date
                }
                if let date = try? Date(text, strategy: Date.ISO8601FormatStyle()) { return date }
                return try? Date(text, strategy: Date.ISO8601FormatStyle().year().month().day())
            }

            /// The URL ending in `/`: where the description's path `/` goes.
            static func root(_ url: URL) -> URL {
                url.absoluteString.hasSuffix("/") ? url : URL(string: url.absoluteString + "/") ?? url
            }

            /// A JSON body sent with its own content type (`application/merge-patch+json`…).
            static func jsonBody(_ value: some Encodable, contentType: String) -> RequestBody {
                guard let data = try? encoder.encode(value) else { return .json(value, encoder: encoder) }
                return .data(data, contentType: contentType)
            }

            /// The value as JSON text, for parameters the description gives a JSON content type.
            static func jsonText(_ value: some Encodable) -> String {
                (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? ""
            }

            /// The value as the query writer takes it: objects as dictionaries, arrays as arrays, scalars as they
            /// are in JSON.
            static func parameterValue(_ value: some Encodable) -> Any {
                guard let data = try? encoder.encode(value),
                    let object = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
                else { return NSNull() }
                return object
            }

            /// Query parameters whose members are parameters of their own (an exploded `form` object, a
            /// `deepObject`): ``spreading(_:)`` puts the members in their place.
            struct Spread {
                let members: [String: Any]
            }

            /// An object's members as query parameters of their own (`form` style, exploded); a value that is not
            /// an object under its own name; nothing for `nil`.
            static func exploded(_ value: (some Encodable)?, name: String) -> Spread {
                guard let value else { return Spread(members: [:]) }
                let parameters = parameterValue(value)
                return Spread(members: parameters as? [String: Any] ?? [name: parameters])
            }

            /// A `deepObject` parameter: an object's members as `name[member]`, an array's elements as `name[]`;
            /// nothing for `nil`.
            static func deepObject(_ value: (some Encodable)?, name: String) -> Spread {
                guard let value else { return Spread(members: [:]) }
                let parameters = parameterValue(value)
                return Spread(members: parameters is [Any] ? [name + "[]": parameters] : [name: parameters])
            }

            /// The query with each ``Spread`` replaced by its members; a name already there keeps its value.
            /// (Written as one literal: a chain of `merging` calls is more than the type checker can solve in
            /// reasonable time for an operation with many such parameters.)
            static func spreading(_ parameters: [String: Any]) -> [String: Any] {
                var query = parameters.filter { !($0.value is Spread) }
                for key in parameters.keys.sorted() {
                    guard let spread = parameters[key] as? Spread else { continue }
                    query.merge(spread.members) { current, _ in current }
                }
                return query
            }

            /// A value in the `simple`, `form`, `label` or `matrix` style, as OpenAPI writes one: arrays joined by
            /// commas, objects as `key,value` pairs, or `key=value` pairs when exploded.
            static func styledText(_ value: Any, explode: Bool) -> String {
                func scalar(_ value: Any) -> String {
                    if let number = value as? NSNumber, type(of: number) == type(of: NSNumber(value: true)) {
                        return number.boolValue ? "true" : "false"
                    }
                    return value is NSNull ? "" : "\(value)"
                }
                if let array = value as? [Any] { return array.map(scalar).joined(separator: ",") }
                if let object = value as? [String: Any] {
                    let keys = object.keys.sorted()
                    return explode
                        ? keys.map { "\($0)=\(scalar(object[$0]!))" }.joined(separator: ",")
                        : keys.map { "\($0),\(scalar(object[$0]!))" }.joined(separator: ",")
                }
                return scalar(value)
            }

            /// A `Cookie` header of the values that are there, or `nil` when none is.
            static func cookieHeader(_ cookies: [(name: String, value: String?)]) -> String? {
                let pairs = cookies.compactMap { cookie in cookie.value.map { "\(cookie.name)=\($0)" } }
                return pairs.isEmpty ? nil : pairs.joined(separator: "; ")
            }

            /// Any JSON value: what a schema without a type (or an object without properties) holds.
            API_ACCESSenum JSONValue: Codable, Hashable, Sendable {
                case null
                case bool(Bool)
                case number(Double)
                case string(String)
                case array([JSONValue])
                case object([String: JSONValue])

                /// Reads whatever JSON value is there.
                API_ACCESSinit(from decoder: any Decoder) throws {
                    let container = try decoder.singleValueContainer()
                    if container.decodeNil() {
                        self = .null
                    } else if let bool = try? container.decode(Bool.self) {
                        self = .bool(bool)
                    } else if let number = try? container.decode(Double.self) {
                        self = .number(number)
                    } else if let string = try? container.decode(String.self) {
                        self = .string(string)
                    } else if let array = try? container.decode([JSONValue].self) {
                        self = .array(array)
                    } else {
                        self = .object(try container.decode([String: JSONValue].self))
                    }
                }

                /// Writes the value as it is.
                API_ACCESSfunc encode(to encoder: any Encoder) throws {
                    var container = encoder.singleValueContainer()
                    switch self {
                    case .null: try container.encodeNil()
                    case let .bool(bool): try container.encode(bool)
                    case let .number(number): try container.encode(number)
                    case let .string(string): try container.encode(string)
                    case let .array(array): try container.encode(array)
                    case let .object(object): try container.encode(object)
                    }
                }
            }

            /// A coding key of any name: for members the description does not name, and discriminators.
            API_ACCESSstruct AnyKey: CodingKey {
                /// The key.
                API_ACCESSlet stringValue: String
                /// Never set: keys here are names.
                API_ACCESSvar intValue: Int? { nil }

                /// The key `stringValue`.
                API_ACCESSinit(stringValue: String) { self.stringValue = stringValue }

                /// None: keys here are names.
                API_ACCESSinit?(intValue: Int) { nil }
            }
        }
        """#
}
