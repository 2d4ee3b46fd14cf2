import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension StubBackend.Match {
    /// Requests with the method and URL `endpoint` builds (its realm as it is when a request arrives).
    public static func endpoint(_ endpoint: some SwiftyServiceProtocol) -> Self {
        Self.endpoint(any: endpoint)
    }

    static func endpoint(any endpoint: any SwiftyServiceProtocol) -> Self {
        Self(
            matches: { request in
                guard let expected = try? endpoint.urlRequest() else { return false }
                return expected.httpMethod == request.urlRequest.httpMethod
                    && expected.url == request.urlRequest.url
            }, description: "the endpoint \(endpoint)")
    }
}

extension StubBackend.Answer {
    /// An answer whose body is `value` encoded as JSON (keys sorted, or with `encoder`).
    ///
    /// A value that cannot be encoded answers with the encoder's error as the request's failure.
    public static func value(_ value: some Encodable, statusCode: Int = 200, encoder: JSONEncoder? = nil)
        -> Self
    {
        do {
            return .json(try (encoder ?? sortedKeysEncoder()).encode(value), statusCode: statusCode)
        } catch {
            return .failure(error)
        }
    }

    fileprivate static func json(_ data: Data, statusCode: Int) -> Self {
        Self(statusCode: statusCode, headers: ["Content-Type": "application/json"], data: data)
    }
}

extension StubBackend {
    /// Answers `typed`'s requests with `value`, encoded as JSON and wrapped at the typed endpoint's key path
    /// (`{"data": value}` for `"data"`), so that the typed endpoint reads back the same value.
    ///
    /// ```swift
    /// stub.on(UserService.user(uid: 42), answer: User(id: 42, name: "Ann"))
    /// ```
    @discardableResult
    public func on<Value: Encodable>(
        _ typed: TypedEndpoint<Value>, answer value: Value, statusCode: Int = 200, encoder: JSONEncoder? = nil
    ) -> StubBackend {
        let path = typed.keyPath.map {
            $0.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        }
        let answer: Answer =
            switch path {
            case let path? where path != [""]:
                .value(Envelope(path: path[...], value: value), statusCode: statusCode, encoder: encoder)
            default: .value(value, statusCode: statusCode, encoder: encoder)
            }
        return on(Match.endpoint(any: typed.endpoint), answer: answer)
    }
}

/// `value` inside objects, one per step of `path`: `{"data": {"user": value}}`.
private struct Envelope<Value: Encodable>: Encodable {
    let path: ArraySlice<String>
    let value: Value

    func encode(to encoder: any Encoder) throws {
        guard let key = path.first else { return try value.encode(to: encoder) }
        var container = encoder.container(keyedBy: PathKey.self)
        try container.encode(
            Envelope(path: path.dropFirst(), value: value), forKey: PathKey(stringValue: key))
    }
}
