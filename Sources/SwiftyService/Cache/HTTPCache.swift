import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A private HTTP cache (RFC 9111) that a realm's requests go through, so that cache policies mean the
/// same on every platform — on Linux, URLSession caches nothing at all.
///
/// ```swift
/// let cache = try HTTPCache(memoryLimit: 10 << 20, directory: cachesURL.appendingPathComponent("api"))
/// ServiceRealm.get("users").useCache(cache)
///     .overrideCachePolicy(.returnCacheDataElseLoad, forCrudMethod: .retrieve)
/// ```
/// Entries live in memory up to `memoryLimit` bytes and, with a `directory`, on disk up to `diskLimit`
/// bytes, least recently used first out. Disk entries are written atomically, so processes may share a
/// directory; an unreadable entry is ignored and removed.
public final class HTTPCache: Sendable {
    private struct Memory {
        var entries: [String: [CacheEntry]] = [:]
        var lastUse: [String: UInt64] = [:]
        var bytes = 0
        var clock: UInt64 = 0
    }

    /// Bytes of bodies and headers kept in memory at most.
    public let memoryLimit: Int
    /// Bytes kept on disk at most.
    public let diskLimit: Int
    /// The directory entries are kept in, if any.
    public let directory: URL?
    let now: @Sendable () -> Date
    private let memory = Locked.make(Memory())
    private let disk: DiskStore?

    /// A cache in memory and, with `directory`, on disk (created if missing).
    /// - Throws: when the directory cannot be created.
    public init(
        memoryLimit: Int = 10 << 20, directory: URL? = nil, diskLimit: Int = 100 << 20,
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws {
        self.memoryLimit = memoryLimit
        self.diskLimit = diskLimit
        self.directory = directory
        self.now = now
        disk = try directory.map { try DiskStore(directory: $0, limit: diskLimit) }
    }

    /// Bytes held in memory now.
    public var memoryUsage: Int { memory.withLock { $0.bytes } }

    /// Forgets everything, in memory and on disk.
    public func removeAll() {
        memory.withLock { $0 = Memory() }
        disk?.removeAll()
    }

    /// The stored response that `request` may use (ignoring freshness), if any.
    func entry(for request: URLRequest) -> CacheEntry? {
        let key = Self.key(for: request)
        let headers = HeaderFields(request.allHTTPHeaderFields ?? [:])
        let variants = memory.withLock { memory -> [CacheEntry]? in
            guard let variants = memory.entries[key] else { return nil }
            memory.clock += 1
            memory.lastUse[key] = memory.clock
            return variants
        }
        if let found = (variants ?? []).first(where: { $0.matches(headers) }) { return found }
        guard let stored = disk?.load(key) else { return nil }
        remember(key, stored)
        return stored.first { $0.matches(headers) }
    }

    /// Stores `entry`, replacing the variant it matches.
    func store(_ entry: CacheEntry) {
        let variants = memory.withLock { memory -> [CacheEntry] in
            var variants = memory.entries[entry.key] ?? []
            variants.removeAll { $0.varyValues == entry.varyValues }
            variants.append(entry)
            return variants
        }
        remember(entry.key, variants)
        disk?.save(entry.key, variants)
    }

    /// Forgets every variant stored for the URL of `request` (after an unsafe method succeeded on it).
    func invalidate(_ url: URL) {
        for method in ["GET", "HEAD"] {
            let key = method + " " + url.absoluteString
            memory.withLock { memory in
                if let removed = memory.entries.removeValue(forKey: key) {
                    memory.bytes -= removed.reduce(0) { $0 + $1.cost }
                    memory.lastUse[key] = nil
                }
            }
            disk?.remove(key)
        }
    }

    private func remember(_ key: String, _ variants: [CacheEntry]) {
        memory.withLock { memory in
            memory.bytes -= memory.entries[key]?.reduce(0) { $0 + $1.cost } ?? 0
            memory.entries[key] = variants
            memory.bytes += variants.reduce(0) { $0 + $1.cost }
            memory.clock += 1
            memory.lastUse[key] = memory.clock
            while memory.bytes > memoryLimit,
                let oldest = memory.lastUse.min(by: { $0.value < $1.value })?.key
            {
                memory.bytes -= memory.entries.removeValue(forKey: oldest)?.reduce(0) { $0 + $1.cost } ?? 0
                memory.lastUse[oldest] = nil
            }
        }
    }

    static func key(for request: URLRequest) -> String {
        (request.httpMethod ?? "GET") + " " + (request.url?.absoluteString ?? "")
    }
}

/// One stored response and what it was stored for.
struct CacheEntry: Codable, Sendable, Equatable {
    /// `METHOD URL`.
    let key: String
    /// The request's values of the headers the response varies on, lower-cased names.
    let varyValues: [String: String]
    let status: Int
    var headers: [String: String]
    let body: Data
    var requestTime: Date
    var responseTime: Date

    var cost: Int {
        body.count + headers.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count } + key.utf8.count
    }

    var headerFields: HeaderFields { HeaderFields(headers) }

    init(request: URLRequest, response: Response, requestTime: Date, responseTime: Date) {
        key = HTTPCache.key(for: request)
        var headers: [String: String] = [:]
        for case let (name as String, value as String) in response.response.allHeaderFields {
            headers[name] = value
        }
        self.headers = headers
        let requestHeaders = HeaderFields(request.allHTTPHeaderFields ?? [:])
        varyValues = Self.varyNames(HeaderFields(headers)).reduce(into: [:]) { values, name in
            values[name] = requestHeaders.value(for: name) ?? ""
        }
        status = response.statusCode
        body = response.data
        self.requestTime = requestTime
        self.responseTime = responseTime
    }

    static func varyNames(_ headers: HeaderFields) -> [String] {
        (headers.value(for: "Vary") ?? "").split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }.filter { !$0.isEmpty }
    }

    /// Whether a request with `headers` selects this variant.
    func matches(_ headers: HeaderFields) -> Bool {
        varyValues.allSatisfy { name, value in (headers.value(for: name) ?? "") == value }
    }

    func response(for request: URLRequest, source: Response.Source) -> Response {
        var response = Response(request: request, statusCode: status, headers: headers, data: body)
        response.source = source
        return response
    }

    /// The entry after a 304: its headers updated from the 304's, its times those of the revalidation.
    func revalidated(by notModified: Response, requestTime: Date, responseTime: Date) -> CacheEntry {
        var entry = self
        for case let (name as String, value as String) in notModified.response.allHeaderFields
        where !["content-length", "content-encoding", "transfer-encoding"].contains(name.lowercased()) {
            if let existing = entry.headers.keys.first(where: { HeaderFields.namesMatch($0, name) }) {
                entry.headers[existing] = nil
            }
            entry.headers[name] = value
        }
        // A 304 without a Date is dated on arrival, so the refreshed entry does not inherit the old age.
        if notModified.header("Date") == nil {
            for name in entry.headers.keys where HeaderFields.namesMatch(name, "Date") {
                entry.headers[name] = nil
            }
            entry.headers["Date"] = HTTPDate.format(responseTime)
        }
        entry.requestTime = requestTime
        entry.responseTime = responseTime
        return entry
    }
}
