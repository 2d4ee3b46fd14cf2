import Foundation

/// A request body an endpoint or CRUD call supplies itself, instead of parameters: raw bytes, an
/// `Encodable` value, a file on disk (streamed), or a multipart form.
public struct RequestBody: Sendable {
    enum Content: Sendable {
        case data(Data)
        case file(URL)
        case multipart(MultipartForm)
        case unencodable(String)
    }

    let content: Content
    /// The Content-Type sent unless the realm, endpoint or override sets one (for a multipart form,
    /// `multipart/form-data` with its boundary).
    public let contentType: String

    /// Raw bytes, sent as `contentType` (`application/octet-stream` by default).
    public static func data(_ data: Data, contentType: String = "application/octet-stream") -> RequestBody {
        RequestBody(content: .data(data), contentType: contentType)
    }

    /// A value encoded as JSON with `encoder`, sent as `application/json`.
    ///
    /// Without an encoder, a `JSONEncoder` with `.sortedKeys`: the same value always makes the same bytes,
    /// which keeps recorded cassettes and body matching stable.
    public static func json<Value: Encodable>(_ value: Value, encoder: JSONEncoder? = nil) -> RequestBody {
        do {
            let data = try (encoder ?? sortedKeysEncoder()).encode(value)
            return RequestBody(content: .data(data), contentType: "application/json")
        } catch {
            return RequestBody(content: .unencodable("\(error)"), contentType: "application/json")
        }
    }

    /// The contents of a file, streamed from disk by backends that can (``URLSessionBackend``) and never
    /// read whole into memory by them; sent as `contentType`.
    public static func file(_ url: URL, contentType: String = "application/octet-stream") -> RequestBody {
        RequestBody(content: .file(url), contentType: contentType)
    }

    /// A `multipart/form-data` body; above ``MultipartForm/memoryThreshold`` it is written to a temporary
    /// file and streamed, and the file is removed once the request is over.
    public static func multipart(_ form: MultipartForm) -> RequestBody {
        RequestBody(content: .multipart(form), contentType: "multipart/form-data")
    }
}
