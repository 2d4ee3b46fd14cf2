import Foundation

/// The `Cache-Control` directives a private cache acts on (RFC 9111 §5.2), from a request or a response.
struct CacheControl: Codable, Equatable, Sendable {
    var maxAge: TimeInterval?
    var noStore = false
    var noCache = false
    /// The fields `no-cache="…"` names: the response may be reused without them (§5.2.2.4).
    var noCacheFields: [String] = []
    var mustRevalidate = false
    var isPublic = false
    var isPrivate = false
    /// RFC 8246: the response will not change while it is fresh, so a reload need not revalidate it.
    var immutable = false
    /// §5.2.2.3: only a cache that knows the status's caching rules may store the response, and such a
    /// cache ignores `no-store` beside it.
    var mustUnderstand = false
    /// RFC 5861: how long past its lifetime a response may be served while it is revalidated behind it.
    var staleWhileRevalidate: TimeInterval?
    /// RFC 5861: how long past its lifetime a response may be served when revalidation fails.
    var staleIfError: TimeInterval?
    /// Request only (§5.2.1): stale responses this old past their lifetime are acceptable; `.infinity`
    /// without a value.
    var maxStale: TimeInterval?
    /// Request only (§5.2.1): the response must stay fresh for this long yet.
    var minFresh: TimeInterval?
    /// Request only (§5.2.1.7): answer from the cache or not at all.
    var onlyIfCached = false

    init(_ header: String?) {
        guard let header else { return }
        for (name, value) in Self.directives(header) {
            switch name {
            case "max-age":
                // A malformed max-age makes the response stale (§4.2.1): treat it as 0.
                maxAge = value.flatMap(Freshness.deltaSeconds) ?? 0
            case "no-store": noStore = true
            case "no-cache":
                let fields = (value ?? "").split(separator: ",").map {
                    $0.trimmingCharacters(in: .whitespaces).lowercased()
                }.filter { !$0.isEmpty }
                if fields.isEmpty { noCache = true } else { noCacheFields += fields }
            case "must-revalidate", "proxy-revalidate": mustRevalidate = true
            case "public": isPublic = true
            case "private": isPrivate = true
            case "immutable": immutable = true
            case "must-understand": mustUnderstand = true
            case "stale-while-revalidate": staleWhileRevalidate = value.flatMap(Freshness.deltaSeconds)
            case "stale-if-error": staleIfError = value.flatMap(Freshness.deltaSeconds)
            case "max-stale": maxStale = value.map { Freshness.deltaSeconds($0) ?? 0 } ?? .infinity
            case "min-fresh": minFresh = value.flatMap(Freshness.deltaSeconds)
            case "only-if-cached": onlyIfCached = true
            default: continue
            }
        }
    }

    /// `name[=value]` pairs, names lower-cased; a quoted value may hold commas (`no-cache="a, b"`) and
    /// backslash escapes. Read on bytes: a cache hit parses this on every request.
    static func directives(_ header: String) -> [(String, String?)] {
        let bytes = Array(header.utf8)
        let count = bytes.count
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }
        func text(_ range: Range<Int>) -> String {
            var upper = range.upperBound
            while upper > range.lowerBound, isSpace(bytes[upper - 1]) { upper -= 1 }
            return String(decoding: bytes[range.lowerBound..<upper], as: UTF8.self)
        }
        var result: [(String, String?)] = []
        var index = 0
        while index < count {
            while index < count, isSpace(bytes[index]) || bytes[index] == comma { index += 1 }
            guard index < count else { break }
            let nameStart = index
            while index < count, bytes[index] != equals, bytes[index] != comma { index += 1 }
            let name = text(nameStart..<index).lowercased()
            var value: String?
            if index < count, bytes[index] == equals {
                index += 1
                while index < count, isSpace(bytes[index]) { index += 1 }
                let valueStart = index
                if index < count, bytes[index] == quote {
                    var unquoted: [UInt8] = []
                    index += 1
                    while index < count, bytes[index] != quote {
                        if bytes[index] == backslash, index + 1 < count { index += 1 }
                        unquoted.append(bytes[index])
                        index += 1
                    }
                    // Without its closing quote the value stays as written, and reads as no number.
                    value =
                        index < count ? String(decoding: unquoted, as: UTF8.self) : text(valueStart..<count)
                }
                while index < count, bytes[index] != comma { index += 1 }
                if value == nil { value = text(valueStart..<index) }
            }
            if !name.isEmpty { result.append((name, value)) }
        }
        return result
    }

    private static let comma = UInt8(ascii: ",")
    private static let equals = UInt8(ascii: "=")
    private static let quote = UInt8(ascii: "\"")
    private static let backslash = UInt8(ascii: "\\")
}

/// Freshness and age of a stored response (RFC 9111 §4.2).
enum Freshness {
    /// Statuses a cache may store and give heuristic freshness without explicit directives (§4.2.2).
    static let heuristicallyCacheable: Set<Int> = [200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501]
    /// The statuses whose caching requirements this cache knows and carries out, for `must-understand`
    /// (§5.2.2.3): those of RFC 9110 it stores, and the redirects it stores with explicit freshness. (206 and
    /// 304 are never stored.)
    static let understood: Set<Int> = heuristicallyCacheable.union([302, 303, 307])
    /// The longest heuristic lifetime: a day, whatever Last-Modified suggests.
    static let heuristicCap: TimeInterval = 86_400
    /// The largest delta-seconds a cache must keep; larger values mean this much (RFC 9111 §1.2.2).
    static let maxDeltaSeconds: TimeInterval = 2_147_483_648

    /// delta-seconds (RFC 9111 §1.2.2): digits only, so not `inf`, `nan`, `-1` or `1e9`; past 2^31, 2^31.
    static func deltaSeconds(_ text: String) -> TimeInterval? {
        let digits = text.utf8
        guard !digits.isEmpty, digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
        else {
            return nil
        }
        return min(TimeInterval(text) ?? maxDeltaSeconds, maxDeltaSeconds)
    }

    /// The `Date` header's time, or the time of receipt when it is missing or invalid (RFC 9110 §6.6.1).
    static func dateValue(_ headers: HeaderFields, responseTime: Date) -> Date {
        headers.value(for: "Date").flatMap { HTTPDate.parseForCache($0, now: responseTime) } ?? responseTime
    }

    /// The `Age` header's value: the first member when there are several (`Age: 7200, 0`, or two lines).
    /// A first member that is not delta-seconds (`abc`, `-5`, `7200.0`) is ignored, as RFC 9111 §5.1
    /// says a cache should: the response counts as having no `Age`.
    static func ageValue(_ headers: HeaderFields) -> TimeInterval {
        guard let header = headers.value(for: "Age") else { return 0 }
        let first = header.utf8.prefix { $0 != UInt8(ascii: ",") }
            .drop { $0 == 0x20 || $0 == 0x09 }.reversed().drop { $0 == 0x20 || $0 == 0x09 }.reversed()
        return deltaSeconds(String(decoding: first, as: UTF8.self)) ?? 0
    }

    /// How long a response stays fresh after it was generated (§4.2.1); `responseTime` stands in for a
    /// missing or invalid `Date`.
    static func lifetime(
        status: Int, headers: HeaderFields, control: CacheControl? = nil, responseTime: Date = Date()
    ) -> TimeInterval {
        let control = control ?? CacheControl(headers.value(for: "Cache-Control"))
        if let maxAge = control.maxAge { return maxAge }
        let date = dateValue(headers, responseTime: responseTime)
        if let expiresText = headers.value(for: "Expires") {
            // An invalid Expires means "already expired" (§5.3).
            guard let expires = HTTPDate.parseForCache(expiresText, now: responseTime) else { return 0 }
            return max(expires.timeIntervalSince(date), 0)
        }
        // `public` allows heuristic freshness whatever the status (§4.2.2).
        if heuristicallyCacheable.contains(status) || control.isPublic,
            let lastModified = headers.value(for: "Last-Modified").flatMap({
                HTTPDate.parseForCache($0, now: responseTime)
            })
        {
            return min(max(date.timeIntervalSince(lastModified), 0) * 0.1, heuristicCap)
        }
        return 0
    }

    /// The response's age now (§4.2.3).
    static func age(headers: HeaderFields, requestTime: Date, responseTime: Date, now: Date) -> TimeInterval {
        let apparentAge = max(
            0, responseTime.timeIntervalSince(dateValue(headers, responseTime: responseTime)))
        let responseDelay = max(0, responseTime.timeIntervalSince(requestTime))
        let correctedInitialAge = max(apparentAge, ageValue(headers) + responseDelay)
        return correctedInitialAge + max(0, now.timeIntervalSince(responseTime))
    }

    /// Whether a POST's answer may be stored for later GET and HEAD requests of its URL (RFC 9110 §9.3.3): one
    /// a GET's would be stored as, with explicit freshness (`max-age` or `Expires`), and a `Content-Location`
    /// that names the URL posted to.
    static func isReusableForGETs(
        status: Int, response: HeaderFields, request: HeaderFields, postedTo url: URL
    )
        -> Bool
    {
        guard let location = response.value(for: "Content-Location"),
            URL(string: location, relativeTo: url)?.absoluteURL.absoluteString
                == url.absoluteURL.absoluteString,
            CacheControl(response.value(for: "Cache-Control")).maxAge != nil
                || response.value(for: "Expires") != nil
        else { return false }
        return isStorable(method: "GET", status: status, request: request, response: response)
    }

    /// Whether a response with these parts may be stored (§3): never a 304 or a 206, nor anything
    /// `no-store` or `Vary: *`; otherwise with explicit freshness, `public`, or a status allowing heuristics.
    /// With `must-understand`, only a status this cache understands, and then its `no-store` is ignored
    /// (§5.2.2.3).
    static func isStorable(method: String, status: Int, request: HeaderFields, response: HeaderFields) -> Bool
    {
        guard method == "GET" || method == "HEAD", (200..<600).contains(status), status != 206, status != 304
        else { return false }
        let responseControl = CacheControl(response.value(for: "Cache-Control"))
        if responseControl.mustUnderstand, !understood.contains(status) { return false }
        guard !responseControl.noStore || responseControl.mustUnderstand,
            !CacheControl(request.value(for: "Cache-Control")).noStore
        else {
            return false
        }
        if response.value(for: "Vary")?.contains("*") == true { return false }
        return heuristicallyCacheable.contains(status) || responseControl.maxAge != nil
            || responseControl.isPublic || response.value(for: "Expires") != nil
    }
}
