import Foundation

/// A request body an endpoint or CRUD call supplies itself, instead of parameters: raw bytes, an
/// `Encodable` value, a file on disk (streamed), a multipart form, or chunks from an `AsyncSequence`.
public struct RequestBody: Sendable {
    enum Content: Sendable {
        case data(Data)
        case file(URL)
        case multipart(MultipartForm)
        case stream(BodyStream)
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

    /// The chunks of an `AsyncSequence`, sent as they come: a body made while it is sent (a generated
    /// export, a compressor's output, another request's download) without holding it whole in memory.
    ///
    /// With `length`, it goes out with that `Content-Length`; without, chunked (`Transfer-Encoding: chunked`
    /// on HTTP/1.1). ``CurlBackend`` reads the sequence no further ahead of the socket than about 1 MiB
    /// (plus one chunk): a slow server holds the sequence back. A body over 1 MiB, or of unknown length, is
    /// sent with `Expect: 100-continue`, so that a server that refuses the request (401, 413…) before
    /// reading it costs no upload.
    ///
    /// The sequence is read once. A second trip with the same body — a retry by ``RetryPolicy`` or any
    /// middleware that calls `next` again, a `307`/`308` redirect, the same `RequestBody` value sent twice —
    /// fails with ``ServiceError/transport(_:underlying:attempts:)`` over a ``BodyStreamError`` rather than
    /// send a partial or empty body. A sequence that throws fails the request with its error; one that gives
    /// another number of bytes than `length` fails it with
    /// ``BodyStreamError/lengthMismatch(declared:produced:)``.
    ///
    /// Backends: ``CurlBackend`` streams it. A backend that reads file bodies into memory (``StubBackend``,
    /// most backends of your own) gets this body collected into memory too. ``URLSessionBackend``, which
    /// cannot stream it on Linux, refuses it before sending
    /// (``ServiceError/InvalidRequestReason/unsupportedBodyStream(backend:)``).
    /// - Parameters:
    ///   - chunks: the body's bytes, in order; empty chunks are skipped.
    ///   - length: the body's length in bytes, when known in advance.
    ///   - contentType: the Content-Type sent unless the realm, endpoint or override sets one.
    public static func stream<Chunks: AsyncSequence & Sendable>(
        _ chunks: Chunks, length: Int64? = nil, contentType: String = "application/octet-stream"
    ) -> RequestBody where Chunks.Element == Data {
        RequestBody(content: .stream(BodyStream(chunks, length: length)), contentType: contentType)
    }

    /// A `multipart/form-data` body; above ``MultipartForm/memoryThreshold`` it is written to a temporary
    /// file and streamed, and the file is removed once the request is over.
    public static func multipart(_ form: MultipartForm) -> RequestBody {
        RequestBody(content: .multipart(form), contentType: "multipart/form-data")
    }
}
