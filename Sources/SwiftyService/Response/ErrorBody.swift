import Foundation

/// How a non-2xx body is decoded into ``ServiceError/unacceptableStatusCode(_:errorBody:)``.
///
/// ```swift
/// ServiceRealm.get("users").decodeErrorBodies(.json(APIError.self))
/// catch let error as ServiceError { error.errorBody(as: APIError.self)?.message }
/// ```
public struct ErrorBody: Sendable {
    let decode: @Sendable (Data) -> (any Sendable)?

    /// Bodies decoded from JSON as `type`; a body that does not decode leaves `errorBody` empty.
    public static func json<Body: Decodable & Sendable>(_ type: Body.Type, decoder: JSONDecoder? = nil)
        -> ErrorBody
    {
        ErrorBody { data in try? (decoder ?? JSONDecoder()).decode(type, from: data) }
    }
}
