/// An HTTP request method; the common ones are presets, any other token is `HTTPMethod(rawValue: "PROPFIND")`.
///
/// The initializer accepts any string so that custom methods read naturally; a method that is not a valid
/// RFC 9110 token is refused with ``ServiceError/invalidRequest(_:method:url:)`` when a request is built.
public struct HTTPMethod: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral,
    CustomStringConvertible
{
    /// The method as sent on the wire, case preserved (methods are case-sensitive).
    public let rawValue: String

    /// Creates a method from its wire spelling.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Creates a method from a string literal, e.g. `"PROPFIND"`.
    public init(stringLiteral value: String) { self.rawValue = value }

    /// The wire spelling.
    public var description: String { rawValue }

    /// `GET`
    public static let get = HTTPMethod(rawValue: "GET")
    /// `POST`
    public static let post = HTTPMethod(rawValue: "POST")
    /// `PUT`
    public static let put = HTTPMethod(rawValue: "PUT")
    /// `PATCH`
    public static let patch = HTTPMethod(rawValue: "PATCH")
    /// `DELETE`
    public static let delete = HTTPMethod(rawValue: "DELETE")
    /// `HEAD`
    public static let head = HTTPMethod(rawValue: "HEAD")
    /// `OPTIONS`
    public static let options = HTTPMethod(rawValue: "OPTIONS")
    /// `TRACE`
    public static let trace = HTTPMethod(rawValue: "TRACE")
    /// `CONNECT`
    public static let connect = HTTPMethod(rawValue: "CONNECT")

    /// Whether parameters go into the query string under ``ParameterEncoding/automatic``.
    var prefersQueryParameters: Bool {
        self == .get || self == .head || self == .delete
    }
}

/// The seed article's name for an endpoint's method type.
public typealias SwiftyServiceMethod = HTTPMethod

extension HTTPMethod {
    /// The method as `URLRequest.httpMethod` gives it back: Foundation spells GET, HEAD, POST, PUT, DELETE and
    /// CONNECT in capitals however they were set, and keeps any other as it is.
    var foundationSpelling: String {
        switch rawValue {
        case "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT": return rawValue
        default:
            let capitals = rawValue.uppercased()
            switch capitals {
            case "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT": return capitals
            default: return rawValue
            }
        }
    }
}
