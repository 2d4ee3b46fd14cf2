import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What may leave the process, checked in one place: where a request is built, before each attempt a
/// middleware may have changed, and at each redirect.
package enum TransportRules {
    /// The longest URL sent, in characters: 64 KiB, eight times what RFC 9110 asks servers to accept.
    package static let maxURLLength = 65_536

    /// The most header fields read in one response (repeated names counted each time): ten times what
    /// real APIs send, a small fraction of what a hostile server can.
    package static let maxResponseHeaderFields = 1_000

    /// The most bytes read in one response head, status line and header lines with their line ends:
    /// 256 KiB, four times the 64 KiB that web servers accept in a request head by default.
    package static let maxResponseHeadBytes = 256 << 10

    /// Why a response head of `fields` header fields and `bytes` bytes may not be read, or `nil` when it
    /// may.
    package static func headProblem(fields: Int, bytes: Int) -> ResponseHeadTooLarge? {
        if fields > maxResponseHeaderFields { return ResponseHeadTooLarge(.fields(maxResponseHeaderFields)) }
        if bytes > maxResponseHeadBytes { return ResponseHeadTooLarge(.bytes(maxResponseHeadBytes)) }
        return nil
    }

    /// Why `head` may not be used, or `nil` when it may, for transports that only show a head once they
    /// have parsed it (URLSession): repeated names are joined there, so this counts fewer fields than the
    /// wire had, and the bytes of names, values and line ends without the status line.
    package static func headProblem(with head: URLResponse) -> ResponseHeadTooLarge? {
        guard let head = head as? HTTPURLResponse else { return nil }
        let fields = head.allHeaderFields
        if fields.count > maxResponseHeaderFields { return headProblem(fields: fields.count, bytes: 0) }
        var bytes = 0
        for (name, value) in fields {
            bytes += ((name.base as? String)?.utf8.count ?? 0) + ((value as? String)?.utf8.count ?? 0) + 4
        }
        return headProblem(fields: fields.count, bytes: bytes)
    }

    /// Whether requests may go to a URL of `scheme`: only `http` and `https`, in any letter case.
    package static func allows(scheme: String?) -> Bool {
        guard let scheme else { return false }
        return scheme.caseInsensitiveCompare("http") == .orderedSame
            || scheme.caseInsensitiveCompare("https") == .orderedSame
    }

    /// Why `request` may not be sent as it is, or `nil` when it may: a scheme other than http(s), a URL
    /// that is too long, a method or header name that is not a token, a header value with a control
    /// character.
    package static func problem(with request: URLRequest) -> ServiceError.InvalidRequestReason? {
        guard let url = request.url else { return .malformedURL("the request has no URL") }
        guard allows(scheme: url.scheme) else { return .unsupportedScheme(url.scheme ?? "") }
        let length = url.absoluteString.utf8.count
        if length > maxURLLength { return .urlTooLong(length: length) }
        if let method = request.httpMethod, !HTTPToken.isValid(method) { return .invalidMethod(method) }
        for (name, value) in request.allHTTPHeaderFields ?? [:] {
            if !HTTPToken.isValid(name) { return .invalidHeaderName(name) }
            if !HeaderFields.isValidValue(value) { return .invalidHeaderValue(name: name) }
        }
        return nil
    }
}

extension String {
    /// The URL as error messages show it: whole up to 1,000 characters, cut there beyond with its length.
    var abbreviatedURL: String {
        guard utf8.count > 1_024 else { return self }
        return "\(prefix(1_000))…(\(utf8.count) characters)"
    }
}
