import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The response type of an endpoint whose body does not matter (`204 No Content`, an empty `200`): nothing
/// is decoded, whatever the body holds.
public struct NoContent: Codable, Sendable, Hashable {
    /// The one value there is.
    public init() {}

    /// Reads nothing: any body, an empty one included, is no content.
    public init(from decoder: any Decoder) throws {}

    /// Writes nothing.
    public func encode(to encoder: any Encoder) throws {}
}

/// Why a typed response did not decode: which endpoint, into which type, where in the body, and the
/// decoder's own error. It is the `underlying` error of ``ServiceError/decoding(_:underlying:)``.
public struct DecodingFailure: Error, CustomStringConvertible {
    /// The endpoint, e.g. `UserService.info(uid: 42)`, or a CRUD call, e.g. `GET https://…/users/1`.
    public let endpoint: String
    /// The type asked for, e.g. `User`.
    public let type: String
    /// Where in the body decoding stopped, key path style: `data.users.3.email`; empty at the top.
    public let codingPath: String
    /// The decoder's error, usually a `DecodingError`.
    public let underlying: any Error

    /// `UserService.info(uid: 42) as User, at data.email: Expected to decode String but found a number instead.`
    public var description: String {
        let reason: String =
            switch underlying as? DecodingError {
            case let .typeMismatch(_, context)?, let .valueNotFound(_, context)?,
                let .keyNotFound(_, context)?,
                let .dataCorrupted(context)?:
                context.debugDescription
            default: String(describing: underlying)
            }
        return "\(endpoint) as \(type)" + (codingPath.isEmpty ? ": " : ", at \(codingPath): ") + reason
    }

    init(endpoint: String, type: Any.Type, keyPath: [String], underlying: any Error) {
        self.endpoint = endpoint
        self.type = String(describing: type)
        self.underlying = underlying
        var path: [any CodingKey] = []
        switch underlying as? DecodingError {
        case let .keyNotFound(key, context)?: path = context.codingPath + [key]
        case let .typeMismatch(_, context)?, let .valueNotFound(_, context)?, let .dataCorrupted(context)?:
            path = context.codingPath
        default: path = keyPath.map(PathKey.init(stringValue:))
        }
        codingPath = path.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
    }
}

extension Response {
    /// Decodes the JSON value at `keyPath` (`"data"`, `"data.user"`: keys separated by dots) into `type`,
    /// for bodies that wrap what matters in an envelope such as `{"data": {…}}`.
    /// - Throws: ``ServiceError/decoding(_:underlying:)`` carrying this response and a ``DecodingFailure``.
    public func decode<T: Decodable>(
        _ type: T.Type = T.self, atKeyPath keyPath: String, decoder: JSONDecoder? = nil
    )
        throws -> T
    {
        try decode(type, atKeyPath: keyPath, decoder: decoder, source: request.url?.absoluteString ?? "?")
    }

    /// The decoder typed responses use when neither the endpoint nor the realm sets one. Decoding with one
    /// `JSONDecoder` from several threads is safe; only changing its options is not, and this one never changes.
    static let defaultDecoder = JSONDecoder()

    /// `source` names the endpoint or call in a ``DecodingFailure``; it is worked out only on failure, as
    /// describing an enum case goes through reflection and costs more than decoding a small body.
    func decode<T: Decodable>(
        _ type: T.Type, atKeyPath keyPath: String?, decoder: JSONDecoder?, source: @autoclosure () -> String
    ) throws(ServiceError) -> T {
        if T.self == NoContent.self { return NoContent() as! T }
        let decoder = decoder ?? Self.defaultDecoder
        let path =
            keyPath.map { $0.split(separator: ".", omittingEmptySubsequences: false).map(String.init) } ?? []
        do {
            if path.isEmpty || path == [""] { return try decoder.decode(type, from: data) }
            return try decoder.reading(atKeyPath: path).decode(AtKeyPath<T>.self, from: data).value
        } catch {
            throw .decoding(
                self,
                underlying: DecodingFailure(endpoint: source(), type: type, keyPath: path, underlying: error))
        }
    }
}

/// A coding key made of any string: one step of a key path.
struct PathKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

extension CodingUserInfoKey {
    /// Where ``AtKeyPath`` finds its path.
    fileprivate static let swiftyServiceKeyPath = CodingUserInfoKey(rawValue: "SwiftyService.keyPath")!
}

/// The value at a key path of the body: decoding walks down the path, so errors carry the whole coding path.
private struct AtKeyPath<Value: Decodable>: Decodable {
    let value: Value

    init(from decoder: any Decoder) throws {
        let path = decoder.userInfo[.swiftyServiceKeyPath] as? [String] ?? []
        var container = try decoder.container(keyedBy: PathKey.self)
        for key in path.dropLast() {
            container = try container.nestedContainer(
                keyedBy: PathKey.self, forKey: PathKey(stringValue: key))
        }
        value = try container.decode(Value.self, forKey: PathKey(stringValue: path.last ?? ""))
    }
}

extension JSONDecoder {
    /// A decoder with this one's strategies that reads at `path`: a new one, as a shared decoder's options
    /// must not change while others decode with it.
    fileprivate func reading(atKeyPath path: [String]) -> JSONDecoder {
        let copy = JSONDecoder()
        copy.dateDecodingStrategy = dateDecodingStrategy
        copy.dataDecodingStrategy = dataDecodingStrategy
        copy.keyDecodingStrategy = keyDecodingStrategy
        copy.nonConformingFloatDecodingStrategy = nonConformingFloatDecodingStrategy
        copy.allowsJSON5 = allowsJSON5
        copy.assumesTopLevelDictionary = assumesTopLevelDictionary
        var userInfo = userInfo
        userInfo[.swiftyServiceKeyPath] = path
        copy.userInfo = userInfo
        return copy
    }
}
