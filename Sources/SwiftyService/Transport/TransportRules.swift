import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What may leave the process, checked in one place: where a request is built, before each attempt a
/// middleware may have changed, and at each redirect.
package enum TransportRules {
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
        if length > HTTPLimits.maxURLLength { return .urlTooLong(length: length) }
        if let method = request.httpMethod, !HTTPToken.isValid(method) { return .invalidMethod(method) }
        for (name, value) in request.allHTTPHeaderFields ?? [:] {
            if !HTTPToken.isValid(name) { return .invalidHeaderName(name) }
            if !HeaderFields.isValidValue(value) { return .invalidHeaderValue(name: name) }
        }
        return nil
    }
}
