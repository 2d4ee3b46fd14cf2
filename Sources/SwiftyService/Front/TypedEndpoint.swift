import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An endpoint together with the type its body decodes to: `request()` returns a `Value`, the callback
/// form gets a `Result<Value, ServiceError>`.
///
/// Declare one beside the enum, so call sites never name the type again:
/// ```swift
/// extension UserService {
///     static func user(uid: Int64) -> TypedEndpoint<User> { info(uid: uid).returning(User.self) }
/// }
///
/// let user = try await UserService.user(uid: 42).request()       // User
/// ```
/// The status is validated first, then the body is decoded with the endpoint's
/// ``SwiftyServiceProtocol/decoder``, else the realm's (``ServiceRealm/setDecoder(_:)``), else a plain
/// `JSONDecoder`. ``NoContent`` reads no body (204). A body that does not decode fails with
/// ``ServiceError/decoding(_:underlying:)``, whose ``DecodingFailure`` names the endpoint, the type and
/// the coding path. The endpoint itself stays at hand for the raw ``Response``: `typed.endpoint.request()`.
public struct TypedEndpoint<Value: Decodable & Sendable>: Sendable, CustomStringConvertible {
    /// The endpoint that is sent.
    public let endpoint: any SwiftyServiceProtocol
    /// The key path the value sits at in the body (`"data"` for `{"data": {…}}`), or `nil` for the whole body.
    public let keyPath: String?

    /// `endpoint`, answering with a `Value` read from the whole body or from the value at `keyPath`.
    public init(_ endpoint: some SwiftyServiceProtocol, atKeyPath keyPath: String? = nil) {
        self.init(any: endpoint, atKeyPath: keyPath)
    }

    private init(any endpoint: any SwiftyServiceProtocol, atKeyPath keyPath: String?) {
        self.endpoint = endpoint
        self.keyPath = keyPath
    }

    /// `UserService.info(uid: 42) → User`
    public var description: String { "\(Response.describe(endpoint)) → \(Value.self)" }

    /// Sends the request and returns the decoded body; cancelling the task cancels the request.
    /// (The result may be ignored, as for a ``NoContent`` endpoint.)
    /// - Throws: ``ServiceError`` only; ``ServiceError/decoding(_:underlying:)`` when the body does not decode.
    @discardableResult
    public func request() async throws -> Value {
        let prepared = try endpoint.prepare()
        let response = try await prepared.response()
        return try response.decode(
            Value.self, atKeyPath: keyPath, decoder: prepared.decoder, endpoint: endpoint)
    }

    /// Sends the request; `completion` runs exactly once with the decoded body or the failure, also after
    /// ``RequestHandle/cancel()``, on the realm's callback queue if it has one.
    @discardableResult
    public func request(completion: @escaping @Sendable (Result<Value, ServiceError>) -> Void)
        -> RequestHandle
    {
        let endpoint = endpoint
        let keyPath = keyPath
        return endpoint.send { result, decoder in
            completion(
                result.flatMap { response in
                    Result { () throws(ServiceError) in
                        try response.decode(
                            Value.self, atKeyPath: keyPath, decoder: decoder, endpoint: endpoint)
                    }
                })
        }
    }

    /// The `URLRequest` that ``request()`` would send now; nothing is sent.
    /// - Throws: ``ServiceError/invalidRequest(_:method:url:)`` when it cannot be built.
    public func urlRequest() throws -> URLRequest {
        try endpoint.urlRequest()
    }

    /// This typed endpoint with one-off settings for the next request, as
    /// ``SwiftyServiceProtocol/override(_:)`` (a decoder set there wins over the endpoint's and the realm's).
    public func override(_ configure: (inout RealmConfiguration) -> Void) -> TypedEndpoint<Value> {
        TypedEndpoint(any: Self.overriding(endpoint, configure), atKeyPath: keyPath)
    }

    private static func overriding<Endpoint: SwiftyServiceProtocol>(
        _ endpoint: Endpoint, _ configure: (inout RealmConfiguration) -> Void
    ) -> any SwiftyServiceProtocol {
        endpoint.override(configure)
    }
}

extension SwiftyServiceProtocol {
    /// This endpoint, answering with its body decoded as `type`, read whole or at `keyPath`
    /// (`"data"` for `{"data": {…}}`, `"data.user"` deeper down).
    ///
    /// ```swift
    /// let user = try await UserService.info(uid: 42).returning(User.self).request()
    /// ```
    public func returning<Value: Decodable & Sendable>(_ type: Value.Type, atKeyPath keyPath: String? = nil)
        -> TypedEndpoint<Value>
    {
        TypedEndpoint(self, atKeyPath: keyPath)
    }
}

extension Response {
    /// Decodes the body (at `keyPath`, if any) into `type`; ``NoContent`` reads nothing.
    func decode<T: Decodable>(
        _ type: T.Type, atKeyPath keyPath: String?, decoder: JSONDecoder?, endpoint: any SwiftyServiceProtocol
    ) throws(ServiceError) -> T {
        try decode(type, atKeyPath: keyPath, decoder: decoder, source: Self.describe(endpoint))
    }

    /// `UserService.info(uid: 42)`: the enum's name and the case, as a reader would write it.
    static func describe(_ endpoint: any SwiftyServiceProtocol) -> String {
        let endpoint = endpoint._oneOffSettings?.underlyingEndpoint ?? endpoint
        let typeName = String(describing: Swift.type(of: endpoint))
        let value = String(describing: endpoint)
        return value.hasPrefix(typeName) ? value : "\(typeName).\(value)"
    }
}
