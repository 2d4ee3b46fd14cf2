import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One stored response and what it was stored for.
struct CacheEntry: Codable, Sendable {
    /// `METHOD URL`.
    let key: String
    /// The request's values of the headers the response varies on, lower-cased names, normalised.
    let varyValues: [String: String]
    let status: Int
    private(set) var headers: [String: String] {
        didSet { servedFields = HeaderFields(unsorted: headers) }
    }
    /// `headers` as a hit serves them (with an `Age` of its own added): made when the headers change, not
    /// on every hit. Not stored: it is made again from `headers`.
    private(set) var servedFields: HeaderFields
    let body: Data
    private(set) var requestTime: Date
    private(set) var responseTime: Date
    /// What reuse decisions need, read from the headers once when the response is stored or refreshed
    /// rather than on every hit.
    private(set) var summary: Summary

    private enum CodingKeys: String, CodingKey {
        case key, varyValues, status, headers, body, requestTime, responseTime, summary
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        key = try container.decode(String.self, forKey: .key)
        varyValues = try container.decode([String: String].self, forKey: .varyValues)
        status = try container.decode(Int.self, forKey: .status)
        headers = try container.decode([String: String].self, forKey: .headers)
        servedFields = HeaderFields(unsorted: headers)
        body = try container.decode(Data.self, forKey: .body)
        requestTime = try container.decode(Date.self, forKey: .requestTime)
        responseTime = try container.decode(Date.self, forKey: .responseTime)
        summary = try container.decode(Summary.self, forKey: .summary)
    }

    struct Summary: Codable, Sendable, Equatable {
        /// The response's `Cache-Control`.
        let control: CacheControl
        /// Its freshness lifetime (RFC 9111 §4.2.1).
        let lifetime: TimeInterval
        /// Its corrected initial age: how old it was on arrival (§4.2.3).
        let initialAge: TimeInterval

        init(status: Int, headers: HeaderFields, requestTime: Date, responseTime: Date) {
            control = CacheControl(headers.value(for: "Cache-Control"))
            lifetime = Freshness.lifetime(
                status: status, headers: headers, control: control, responseTime: responseTime)
            initialAge = Freshness.age(
                headers: headers, requestTime: requestTime, responseTime: responseTime, now: responseTime)
        }
    }

    var cost: Int {
        body.count + headers.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count } + key.utf8.count
    }

    var headerFields: HeaderFields { HeaderFields(headers) }

    /// The key and the variant: what one background revalidation at a time is for.
    var variantID: String {
        key + "\n"
            + varyValues.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: "\n")
    }

    init(request: URLRequest, response: Response, requestTime: Date, responseTime: Date) {
        key = HTTPCache.key(for: request)
        let headers = Self.storable(response.allHeaders)
        self.headers = Self.withoutAge(headers)
        servedFields = HeaderFields(unsorted: self.headers)
        let requestHeaders = HeaderFields(request.allHTTPHeaderFields ?? [:])
        varyValues = Self.varyNames(HeaderFields(headers)).reduce(into: [:]) { values, name in
            values[name] = Self.normalised(requestHeaders.value(for: name), of: name)
        }
        status = response.statusCode
        // A small body comes in the larger buffer CurlBackend reserves for it: kept for long, it gets storage
        // of its own size, as the cache counts bytes, not buffers.
        body = response.data.count < 1024 ? response.data.withUnsafeBytes { Data($0) } : response.data
        self.requestTime = requestTime
        self.responseTime = responseTime
        summary = Summary(
            status: status, headers: HeaderFields(headers), requestTime: requestTime,
            responseTime: responseTime)
    }

    /// `headers` without `Age`: the summary keeps the age on arrival, and each served copy gets its own.
    static func withoutAge(_ headers: [String: String]) -> [String: String] {
        headers.filter { !HeaderFields.namesMatch($0.key, "Age") }
    }

    /// Hop-by-hop fields, which describe one connection and are never stored (RFC 9111 §3.1).
    static let hopByHop: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "te", "transfer-encoding", "upgrade",
        "proxy-authenticate", "proxy-authentication-info", "proxy-authorization",
    ]

    /// The fields of `all` a cache may keep: not hop-by-hop, not named by `Connection`, not named by
    /// `no-cache="…"` (reusable without them, §5.2.2.4).
    static func storable(_ headers: [String: String]) -> [String: String] {
        let fields = HeaderFields(headers)
        var dropped = hopByHop
        for name in (fields.value(for: "Connection") ?? "").split(separator: ",") {
            dropped.insert(name.trimmingCharacters(in: .whitespaces).lowercased())
        }
        dropped.formUnion(CacheControl(fields.value(for: "Cache-Control")).noCacheFields)
        return headers.filter { !dropped.contains($0.key.lowercased()) }
    }

    static func varyNames(_ headers: HeaderFields) -> [String] {
        (headers.value(for: "Vary") ?? "").split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }.filter { !$0.isEmpty }
    }

    /// A Vary-ed request value as the cache compares it (RFC 9111 §4.1 allows normalising): list members
    /// trimmed and joined by `, `, so that `a,b` and `a ,  b` select the same variant; and for
    /// `Accept-Language` (`name`, lower-cased), whose language ranges ignore case and whose order carries no
    /// meaning beside their weights (RFC 9110 §12.5.4), members lower-cased, without spaces, and sorted, so
    /// that `en, de` and `De, EN` do too.
    static func normalised(_ value: String?, of name: String) -> String {
        guard let value else { return "" }
        let members = value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        guard name == "accept-language" else { return members.joined(separator: ", ") }
        return members.map { member in
            member.lowercased().split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
                .joined(separator: ";")
        }
        .filter { !$0.isEmpty }.sorted().joined(separator: ", ")
    }

    /// Whether a request with `fields` selects this variant.
    func matches(_ fields: CacheRequestFields) -> Bool {
        varyValues.allSatisfy { name, value in Self.normalised(fields.value(for: name), of: name) == value }
    }

    /// The age of the stored response at `now` (RFC 9111 §4.2.3).
    func age(at now: Date) -> TimeInterval {
        summary.initialAge + max(0, now.timeIntervalSince(responseTime))
    }

    /// The stored response as served at `now`, with an `Age` of its own (RFC 9111 §5.1).
    func response(for request: URLRequest, source: Response.Source, now: Date) -> Response {
        // Stored entries keep no Age, so it is added, not looked for; the stored fields are shared, not copied.
        let age = HeaderFields.Field(
            name: "Age", value: String(Int(min(age(at: now), Freshness.maxDeltaSeconds))))
        var response = Response(
            request: request, statusCode: status, fields: servedFields, adding: age, data: body)
        response.source = source
        return response
    }

    /// The entry after a 304: its headers updated from the 304's, its times those of the revalidation.
    func revalidated(by notModified: Response, requestTime: Date, responseTime: Date) -> CacheEntry {
        var entry = self
        let updates = Self.storable(notModified.allHeaders)
        for (name, value) in updates
        where !["content-length", "content-encoding", "content-range"].contains(name.lowercased()) {
            if let existing = entry.headers.keys.first(where: { HeaderFields.namesMatch($0, name) }) {
                entry.headers[existing] = nil
            }
            entry.headers[name] = value
        }
        // A 304 without a Date is dated on arrival, so the refreshed entry does not inherit the old age (nor
        // an old Age: stored entries keep none).
        if notModified.header("Date") == nil {
            for name in entry.headers.keys where HeaderFields.namesMatch(name, "Date") {
                entry.headers[name] = nil
            }
            entry.headers["Date"] = HTTPDate.format(responseTime)
        }
        entry.requestTime = requestTime
        entry.responseTime = responseTime
        entry.summary = Summary(
            status: status, headers: entry.headerFields, requestTime: requestTime, responseTime: responseTime)
        entry.headers = Self.withoutAge(entry.headers)
        return entry
    }
}
