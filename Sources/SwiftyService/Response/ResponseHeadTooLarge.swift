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
        guard let problem = TransportRules.headProblem(with: head) else { return nil }
        self = problem
    }

    /// `the response head has more than 1000 header fields` or `… is larger than 262144 bytes`
    public var description: String {
        switch limit {
        case let .fields(count): "the response head has more than \(count) header fields"
        case let .bytes(count): "the response head is larger than \(count) bytes"
        }
    }
}
