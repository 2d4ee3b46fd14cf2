import Foundation

/// One stored cookie.
public struct Cookie: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The cookie's name.
    public let name: String
    /// The cookie's value; a secret, so no description ever prints it.
    public let value: String
    /// The domain it belongs to, lower-cased, without a leading dot.
    public let domain: String
    /// The path it is sent under (and below).
    public let path: String
    /// When it expires; `nil` for a session cookie.
    public let expiresAt: Date?
    /// Whether it is sent only over https.
    public let isSecure: Bool
    /// Whether it had the HttpOnly attribute; kept for callers, as a client without scripts has nothing to hide from.
    public let isHTTPOnly: Bool
    /// Whether it is sent only to exactly `domain` (no Domain attribute was given).
    public let isHostOnly: Bool
    /// When it was first stored; a replacement keeps the creation time of the cookie it replaces.
    public let createdAt: Date

    /// "name=<redacted>; domain=…; path=…" — the value is never printed (cookies are secrets).
    public var description: String {
        var text = "\(name)=<redacted>; domain=\(domain); path=\(path)"
        if expiresAt == nil { text += "; session" }
        if isSecure { text += "; secure" }
        if isHTTPOnly { text += "; httponly" }
        if isHostOnly { text += "; host-only" }
        return text
    }

    /// The same cookie, created at `date`.
    func created(at date: Date) -> Cookie {
        Cookie(
            name: name, value: value, domain: domain, path: path, expiresAt: expiresAt, isSecure: isSecure,
            isHTTPOnly: isHTTPOnly, isHostOnly: isHostOnly, createdAt: date
        )
    }

    /// Whether it has expired by `now`.
    func isExpired(at now: Date) -> Bool {
        expiresAt.map { $0 <= now } ?? false
    }

    /// Whether RFC 6265 §5.4 sends it with a request to `target` (expiry aside).
    func isSent(to target: Target) -> Bool {
        let domainMatches =
            isHostOnly || target.isIPAddress
            ? target.host == domain
            : Cookie.domain(target.host, matches: domain)
        return domainMatches && Cookie.path(target.path, matches: path) && (!isSecure || target.isSecure)
    }
}

extension Cookie {
    /// What the cookie rules look at in a request URL.
    struct Target {
        /// Lower-cased, without a trailing dot or IPv6 brackets.
        let host: String
        let isIPAddress: Bool
        /// The path as sent on the wire (still percent-encoded); `/` when the URL has none.
        let path: String
        let isSecure: Bool

        /// `nil` for URLs without a host (such as `file:` URLs), which have no cookies.
        init?(_ url: URL) {
            guard var host = url.host?.lowercased() else { return nil }
            if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            if host.hasSuffix(".") { host.removeLast() }
            guard !host.isEmpty else { return nil }
            self.host = host
            isIPAddress = host.contains(":") || Target.isIPv4(host)
            let rawPath = URLComponents(url: url, resolvingAgainstBaseURL: false)?.percentEncodedPath ?? ""
            path = rawPath.isEmpty ? "/" : rawPath
            isSecure = ["https", "wss"].contains(url.scheme?.lowercased() ?? "")
        }

        private static func isIPv4(_ host: String) -> Bool {
            let parts = host.split(separator: ".", omittingEmptySubsequences: false)
            return parts.count == 4
                && parts.allSatisfy { part in
                    !part.isEmpty && part.count <= 3 && part.allSatisfy(\.isASCII)
                        && part.allSatisfy(\.isNumber)
                }
        }
    }

    /// The cookie one Set-Cookie value describes, received from `target` at `now` (RFC 6265 §5.2 and §5.3).
    ///
    /// `nil` when the RFC says to ignore the whole header: a control character other than a tab anywhere in it
    /// (RFC 6265bis), no `=` in the name-value pair, an empty name, a name and value over
    /// `CookieJar.maxNameValueBytes`, a Domain that does not cover the host, or (RFC 6265bis) a Secure cookie from
    /// an insecure URL.
    init?(setCookie header: String, from target: Target, now: Date) {
        // A cookie is sent back in a header: one holding a control character would be refused there, or
        // (CR, LF) split it.
        guard !Cookie.holdsControlCharacter(header) else { return nil }
        let semicolon = header.firstIndex(of: ";") ?? header.endIndex
        let pair = header[..<semicolon]
        guard let equals = pair.firstIndex(of: "=") else { return nil }
        let name = Cookie.trimmed(pair[..<equals])
        let value = Cookie.trimmed(pair[pair.index(after: equals)...])
        guard !name.isEmpty, name.utf8.count + value.utf8.count <= CookieJar.maxNameValueBytes else {
            return nil
        }

        var expires: Date?
        var maxAgeExpiry: Date?
        var domainAttribute = ""
        var pathAttribute: String?
        var isSecure = false
        var isHTTPOnly = false
        // Later attributes override earlier ones of the same name, as the RFC's "last attribute" rule says.
        for attribute in header[semicolon...].split(separator: ";") {
            let attributeEquals = attribute.firstIndex(of: "=") ?? attribute.endIndex
            let attributeName = Cookie.trimmed(attribute[..<attributeEquals]).lowercased()
            let attributeValue =
                attributeEquals == attribute.endIndex
                ? "" : Cookie.trimmed(attribute[attribute.index(after: attributeEquals)...])
            switch attributeName {
            case "expires":
                expires = CookieDate.parse(attributeValue) ?? expires
            case "max-age":
                maxAgeExpiry = Cookie.expiry(maxAge: attributeValue, now: now) ?? maxAgeExpiry
            case "domain" where !attributeValue.isEmpty:
                let withoutDot =
                    attributeValue.hasPrefix(".") ? attributeValue.dropFirst() : attributeValue[...]
                domainAttribute = withoutDot.lowercased()
            case "path":
                pathAttribute = attributeValue.hasPrefix("/") ? attributeValue : nil
            case "secure":
                isSecure = true
            case "httponly":
                isHTTPOnly = true
            default:
                break
            }
        }
        if isSecure && !target.isSecure { return nil }

        var domain = target.host
        var isHostOnly = true
        if !domainAttribute.isEmpty {
            if target.isIPAddress || !domainAttribute.contains(".") {
                // Without a public suffix list, a dotless Domain (`com`) could reach unrelated sites,
                // and an IP address has no subdomains: only the host itself is allowed, as host-only.
                guard domainAttribute == target.host else { return nil }
            } else {
                guard Cookie.domain(target.host, matches: domainAttribute) else { return nil }
                domain = domainAttribute
                isHostOnly = false
            }
        }
        self.init(
            name: name, value: value, domain: domain,
            path: pathAttribute ?? Cookie.defaultPath(of: target.path),
            expiresAt: maxAgeExpiry ?? expires, isSecure: isSecure, isHTTPOnly: isHTTPOnly,
            isHostOnly: isHostOnly, createdAt: now
        )
    }

    /// RFC 6265bis §5.6: a control character other than HTAB (%x00-08, %x0A-1F, %x7F).
    static func holdsControlCharacter(_ text: String) -> Bool {
        !text.utf8.allBytesSatisfy { $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }
    }

    /// Whether the cookie may go out in a `Cookie` header: a name and value without control characters (a jar
    /// file written by hand, or by an older version, may hold one).
    var isSendable: Bool {
        !Cookie.holdsControlCharacter(name) && !Cookie.holdsControlCharacter(value)
    }

    /// RFC 6265 §5.1.3: `host` is `domain` or a subdomain of it.
    static func domain(_ host: String, matches domain: String) -> Bool {
        host == domain || host.hasSuffix("." + domain)
    }

    /// RFC 6265 §5.1.4: `/foo` matches `/foo`, `/foo/` and `/foo/bar`, but not `/foobar`.
    static func path(_ requestPath: String, matches cookiePath: String) -> Bool {
        let request = Array(requestPath.utf8)
        let cookie = Array(cookiePath.utf8)
        guard request.starts(with: cookie) else { return false }
        return request.count == cookie.count || cookie.last == UInt8(ascii: "/")
            || request[cookie.count] == UInt8(ascii: "/")
    }

    /// RFC 6265 §5.1.4's default-path: the request path up to, not including, its last `/`; else `/`.
    static func defaultPath(of requestPath: String) -> String {
        guard requestPath.hasPrefix("/"), let lastSlash = requestPath.lastIndex(of: "/"),
            lastSlash != requestPath.startIndex
        else { return "/" }
        return String(requestPath[..<lastSlash])
    }

    /// RFC 6265 §5.2.2: digits with an optional leading `-`; zero or less means "already expired".
    private static func expiry(maxAge: String, now: Date) -> Date? {
        let isNegative = maxAge.hasPrefix("-")
        let digits = isNegative ? maxAge.dropFirst() : maxAge[...]
        guard !digits.isEmpty, digits.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        if isNegative { return .distantPast }
        guard let seconds = Int(digits) else { return .distantFuture }  // too many digits for an Int: "never"
        return seconds > 0 ? min(now.addingTimeInterval(TimeInterval(seconds)), .distantFuture) : .distantPast
    }

    /// Without the spaces and tabs the RFC strips around names, values and attributes.
    static func trimmed(_ text: Substring) -> String {
        text.trimmingCharacters(in: .whitespaces)
    }
}
