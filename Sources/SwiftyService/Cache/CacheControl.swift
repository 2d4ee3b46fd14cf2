import Foundation

/// The `Cache-Control` directives a private cache acts on (RFC 9111 §5.2).
struct CacheControl: Equatable {
    var maxAge: TimeInterval?
    var noStore = false
    var noCache = false
    var mustRevalidate = false
    var isPublic = false
    var isPrivate = false

    init(_ header: String?) {
        guard let header else { return }
        for part in header.split(separator: ",") {
            let pieces = part.split(separator: "=", maxSplits: 1).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            guard let name = pieces.first?.lowercased(), !name.isEmpty else { continue }
            let value =
                pieces.count > 1 ? pieces[1].trimmingCharacters(in: CharacterSet(charactersIn: "\"")) : nil
            switch name {
            case "max-age":
                // A malformed max-age makes the response stale (§4.2.1): treat it as 0.
                maxAge = value.flatMap(Freshness.deltaSeconds) ?? 0
            case "no-store": noStore = true
            case "no-cache": noCache = true
            case "must-revalidate", "proxy-revalidate": mustRevalidate = true
            case "public": isPublic = true
            case "private": isPrivate = true
            default: continue
            }
        }
    }
}

/// Freshness and age of a stored response (RFC 9111 §4.2).
enum Freshness {
    /// Statuses a cache may store and give heuristic freshness without explicit directives (§4.2.2).
    static let heuristicallyCacheable: Set<Int> = [200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501]
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

    /// How long a response stays fresh after it was generated.
    static func lifetime(status: Int, headers: HeaderFields) -> TimeInterval {
        let control = CacheControl(headers.value(for: "Cache-Control"))
        if let maxAge = control.maxAge { return maxAge }
        let date = headers.value(for: "Date").flatMap(HTTPDate.parse)
        if let expiresText = headers.value(for: "Expires") {
            // An invalid Expires means "already expired" (§5.3).
            guard let expires = HTTPDate.parse(expiresText), let date else { return 0 }
            return max(expires.timeIntervalSince(date), 0)
        }
        if heuristicallyCacheable.contains(status),
            let lastModified = headers.value(for: "Last-Modified")
                .flatMap(HTTPDate.parse), let date
        {
            return min(max(date.timeIntervalSince(lastModified), 0) * 0.1, heuristicCap)
        }
        return 0
    }

    /// The response's age now (§4.2.3).
    static func age(headers: HeaderFields, requestTime: Date, responseTime: Date, now: Date) -> TimeInterval {
        let dateValue = headers.value(for: "Date").flatMap(HTTPDate.parse) ?? responseTime
        let ageValue =
            headers.value(for: "Age").flatMap { deltaSeconds($0.trimmingCharacters(in: .whitespaces)) } ?? 0
        let apparentAge = max(0, responseTime.timeIntervalSince(dateValue))
        let responseDelay = responseTime.timeIntervalSince(requestTime)
        let correctedInitialAge = max(apparentAge, ageValue + responseDelay)
        return correctedInitialAge + now.timeIntervalSince(responseTime)
    }

    /// Whether a response with these parts may be stored.
    static func isStorable(method: String, status: Int, request: HeaderFields, response: HeaderFields) -> Bool
    {
        guard method == "GET" || method == "HEAD", status != 206 else { return false }
        let responseControl = CacheControl(response.value(for: "Cache-Control"))
        guard !responseControl.noStore, !CacheControl(request.value(for: "Cache-Control")).noStore else {
            return false
        }
        if response.value(for: "Vary")?.contains("*") == true { return false }
        return heuristicallyCacheable.contains(status) || responseControl.maxAge != nil
            || responseControl.isPublic
            || response.value(for: "Expires") != nil
    }
}
