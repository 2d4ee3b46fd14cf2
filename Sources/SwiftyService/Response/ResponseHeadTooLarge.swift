import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A response head past what SwiftyService reads: too many header fields, or too many bytes before the
/// body; arrives as ``ServiceError/transport(_:underlying:attempts:)``.
///
/// A server that sends tens of thousands of header fields is either broken or hostile. Every backend stops
/// reading such a head at the limit (URLSession, which parses a head before showing it, refuses it once
/// parsed), so that it can neither fill memory nor hold up the other requests of the backend.
public struct ResponseHeadTooLarge: Error, CustomStringConvertible, Sendable {
    /// The limit a response head went past.
    public enum Limit: Sendable, Equatable {
        /// More header fields than this.
        case fields(Int)
        /// More bytes of head (status line and header lines) than this.
        case bytes(Int)
    }

    /// The limit the head went past.
    public let limit: Limit

    /// The failure for a head past `limit`.
    public init(_ limit: Limit) {
        self.limit = limit
    }

    /// The failure for `head` when it is past SwiftyService's limits (1,000 header fields, 256 KiB), as
    /// parsed by the platform; `nil` when it is within them. For adapters of libraries that show a head
    /// only once it is parsed; one that reads header lines itself should stop at the limits instead.
    public init?(checking head: URLResponse) {
        guard let problem = Self.problem(with: head) else { return nil }
        self = problem
    }

    /// `the response head has more than 1000 header fields` or `… is larger than 262144 bytes`
    public var description: String {
        switch limit {
        case let .fields(count): "the response head has more than \(count) header fields"
        case let .bytes(count): "the response head is larger than \(count) bytes"
        }
    }

    /// Why a response head of `fields` header fields and `bytes` bytes may not be read, or `nil` when it
    /// may.
    package static func problem(fields: Int, bytes: Int) -> ResponseHeadTooLarge? {
        if fields > HTTPLimits.maxResponseHeaderFields {
            return ResponseHeadTooLarge(.fields(HTTPLimits.maxResponseHeaderFields))
        }
        if bytes > HTTPLimits.maxResponseHeadBytes {
            return ResponseHeadTooLarge(.bytes(HTTPLimits.maxResponseHeadBytes))
        }
        return nil
    }

    /// Why `head` may not be used, or `nil` when it may, for transports that only show a head once they
    /// have parsed it (URLSession): repeated names are joined there, so this counts fewer fields than the
    /// wire had, and the bytes of names, values and line ends without the status line.
    package static func problem(with head: URLResponse) -> ResponseHeadTooLarge? {
        guard let head = head as? HTTPURLResponse else { return nil }
        let fields = head.allHeaderFields
        if fields.count > HTTPLimits.maxResponseHeaderFields {
            return problem(fields: fields.count, bytes: 0)
        }
        var bytes = 0
        for (name, value) in fields {
            bytes += ((name.base as? String)?.utf8.count ?? 0) + ((value as? String)?.utf8.count ?? 0) + 4
        }
        return problem(fields: fields.count, bytes: bytes)
    }
}
