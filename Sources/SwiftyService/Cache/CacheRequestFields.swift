import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The request header fields a cache decision reads, found in one pass over the request's fields. A hit
/// reads nothing else, and builds no copy of the fields: URLRequest's own lookups and a copy of every
/// field cost more than the rest of a hit.
struct CacheRequestFields {
    /// The request's fields as URLRequest holds them.
    let all: HTTPHeaderDictionary
    /// `Cache-Control`, if the request has one.
    private(set) var cacheControl: String?
    /// Whether the request has a `Range`.
    private(set) var hasRange = false
    /// Whether the app made the request conditional itself (`If-None-Match`, `If-Modified-Since`,
    /// `If-Match`, `If-Unmodified-Since`, `If-Range`).
    private(set) var isConditional = false

    init(_ request: URLRequest) {
        self.init(request.allHTTPHeaderFields ?? [:])
    }

    init(_ all: HTTPHeaderDictionary) {
        self.all = all
        for (name, value) in all {
            // The length first: most fields are none of these, and it costs nothing to ask.
            switch name.utf8.count {
            case 13 where cacheControl == nil && HeaderFields.namesMatch(name, "Cache-Control"):
                cacheControl = value
            case 5 where HeaderFields.namesMatch(name, "Range"):
                hasRange = true
            default:
                if Self.isConditionalName(name) { isConditional = true }
            }
        }
    }

    /// The value of the field `name` (compared case-insensitively): for the fields a response varies on.
    func value(for name: String) -> String? {
        all.first { HeaderFields.namesMatch($0.key, name) }?.value
    }

    private static func isConditionalName(_ name: String) -> Bool {
        var bytes = name.utf8.makeIterator()
        // Only names starting with "If-" can be one: most requests have none, and this is a hit's path.
        guard bytes.next().map({ $0 | 0x20 }) == UInt8(ascii: "i"),
            bytes.next().map({ $0 | 0x20 }) == UInt8(ascii: "f"),
            bytes.next() == UInt8(ascii: "-")
        else { return false }
        return conditionals.contains { HeaderFields.namesMatch($0, name) }
    }

    private static let conditionals = [
        "If-None-Match", "If-Modified-Since", "If-Match", "If-Unmodified-Since", "If-Range",
    ]
}
