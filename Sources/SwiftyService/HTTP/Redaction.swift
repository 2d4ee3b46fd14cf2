import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Which parts of a request are secret, so that logs and recorded cassettes never hold them.
///
/// `Authorization`, `Proxy-Authorization`, `Cookie` and `Set-Cookie` are always secret; a realm declares
/// more with ``ServiceRealm/declareSecrets(headers:queryKeys:)``. Header names compare case-insensitively;
/// a query key matches with or without a bracketed suffix (`token` covers `token[]`).
public struct Redaction: Sendable, Hashable {
    /// Secret header names, lower-cased.
    public private(set) var headers: Set<String>
    /// Secret query keys.
    public private(set) var queryKeys: Set<String>

    /// What a secret header value is replaced with.
    public static let headerPlaceholder = "<redacted>"
    /// What a secret query value is replaced with (URL-safe).
    public static let queryPlaceholder = "REDACTED"
    /// Headers that are always secret.
    public static let alwaysSecretHeaders: Set<String> = [
        "authorization", "proxy-authorization", "cookie", "set-cookie",
    ]

    /// The headers that are always secret, and no query keys.
    public static let `default` = Redaction()

    /// The headers that are always secret, plus `headers` and `queryKeys`.
    public init(headers: [String] = [], queryKeys: [String] = []) {
        self.headers = Self.alwaysSecretHeaders.union(headers.map { $0.lowercased() })
        self.queryKeys = Set(queryKeys)
    }

    /// Both sets of secrets.
    public func union(_ other: Redaction) -> Redaction {
        var result = self
        result.headers.formUnion(other.headers)
        result.queryKeys.formUnion(other.queryKeys)
        return result
    }

    /// Whether the header called `name` is secret.
    public func isSecret(header name: String) -> Bool {
        headers.contains(name.lowercased())
    }

    /// Whether the query key `key` (decoded, e.g. `token[]`) is secret.
    public func isSecret(queryKey key: String) -> Bool {
        if queryKeys.contains(key) { return true }
        guard let bracket = key.firstIndex(of: "[") else { return false }
        return queryKeys.contains(String(key[..<bracket]))
    }

    /// The headers with every secret value replaced by ``headerPlaceholder``.
    public func redacting(headers: HTTPHeaderDictionary) -> HTTPHeaderDictionary {
        var result = headers
        for name in headers.keys where isSecret(header: name) { result[name] = Self.headerPlaceholder }
        return result
    }

    /// The URL with the value of every secret query key replaced by ``queryPlaceholder``.
    public func redacting(_ url: URL) -> URL {
        guard !queryKeys.isEmpty,
            let query = URLComponents(url: url, resolvingAgainstBaseURL: false)?.percentEncodedQuery,
            !query.isEmpty
        else { return url }
        let redacted = query.split(separator: "&", omittingEmptySubsequences: false).map { pair -> String in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = String(parts[0]).removingPercentEncoding ?? String(parts[0])
            guard isSecret(queryKey: key) else { return String(pair) }
            return "\(parts[0])=\(Self.queryPlaceholder)"
        }.joined(separator: "&")
        let string = url.absoluteString
        guard let range = string.range(of: "?" + query) else { return url }
        return URL(string: string.replacingCharacters(in: range, with: "?" + redacted)) ?? url
    }

    /// The values of the cookies in a `Cookie` header (`a=1; b=2`) or a `Set-Cookie` line (`a=1; Path=/`).
    package static func cookieValues(_ header: String) -> [String] {
        header.split(separator: ";").compactMap { pair in
            guard let equals = pair.firstIndex(of: "=") else { return nil }
            return pair[pair.index(after: equals)...].trimmingCharacters(in: .whitespaces)
        }.filter { !$0.isEmpty }
    }

    /// The values of `request`'s secret headers and query parameters, so that they can be scrubbed
    /// wherever else they show up — in a body a server echoes, for instance: each whole value, the
    /// credential after an auth scheme (`Bearer <token>`), percent-decoded query values, and the forms
    /// JSON gives them (`/` written as `\/`).
    public func secretValues(in request: URLRequest) -> [String] {
        var values: [String] = []
        for (name, value) in request.allHTTPHeaderFields ?? [:] where isSecret(header: name) {
            values.append(value)
            if name.caseInsensitiveCompare("Cookie") == .orderedSame { values += Self.cookieValues(value) }
            if let space = value.firstIndex(of: " ") {
                values.append(value[value.index(after: space)...].trimmingCharacters(in: .whitespaces))
            }
        }
        if !queryKeys.isEmpty, let url = request.url,
            let items = URLComponents(url: url, resolvingAgainstBaseURL: false)?.percentEncodedQueryItems
        {
            for item in items {
                guard let value = item.value,
                    isSecret(queryKey: item.name.removingPercentEncoding ?? item.name)
                else { continue }
                values.append(value)
                if let decoded = value.removingPercentEncoding, decoded != value { values.append(decoded) }
            }
        }
        values += values.filter { $0.contains("/") }.map { $0.replacingOccurrences(of: "/", with: #"\/"#) }
        return values.filter { !$0.isEmpty }
    }
}
