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
        /// A key's variants and when they were last used, in one slot: a hit looks the key up once.
        var slots: [MemoryKey: Slot] = [:]
        var bytes = 0
        var clock: UInt64 = 0
    }

    /// A memory slot's key: the method and the URL of ``key(for:)``, kept apart so that a lookup joins no
    /// strings.
    private struct MemoryKey: Hashable {
        let method: Substring
        let url: Substring

        init(method: String, url: String) {
            self.method = method[...]
            self.url = url[...]
        }

        /// The parts of a `METHOD URL` key.
        init(_ key: String) {
            let space = key.firstIndex(of: " ") ?? key.endIndex
            method = key[..<space]
            url = space == key.endIndex ? "" : key[key.index(after: space)...]
        }

        var joined: String { method + " " + url }
    }

    private struct Slot {
        var variants: [CacheEntry]
        var lastUse: UInt64
        var cost: Int { variants.reduce(0) { $0 + $1.cost } }
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
    /// The variants being revalidated in the background now, so that many callers start one.
    private let revalidating = Locked.make(Set<String>())

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

    /// The largest body worth storing: one larger than the cache's room would only push itself out.
    var largestBody: Int { directory == nil ? memoryLimit : max(memoryLimit, diskLimit) }

    /// Bytes held in memory now.
    public var memoryUsage: Int { memory.withLock { $0.bytes } }

    /// Forgets everything, in memory and on disk.
    public func removeAll() {
        memory.withLock { $0 = Memory() }
        disk?.removeAll()
    }

    /// The stored response that `request` may use (ignoring freshness), if any.
    /// `method` and `fields` are the request's, when the caller has read them already.
    func entry(for request: URLRequest, method: String? = nil, fields: CacheRequestFields? = nil)
        -> CacheEntry?
    {
        let key = MemoryKey(
            method: method ?? request.httpMethod ?? "GET", url: request.url?.absoluteString ?? "")
        let fields = fields ?? CacheRequestFields(request)
        let variants = memory.withLock { memory -> [CacheEntry]? in
            guard let index = memory.slots.index(forKey: key) else { return nil }
            memory.clock += 1
            memory.slots.values[index].lastUse = memory.clock
            return memory.slots.values[index].variants
        }
        if let found = (variants ?? []).first(where: { $0.matches(fields) }) { return found }
        guard let stored = disk?.load(key.joined) else { return nil }
        remember(key, stored)
        return stored.first { $0.matches(fields) }
    }

    /// Stores `entry`, replacing the variant it matches.
    func store(_ entry: CacheEntry) {
        let key = MemoryKey(entry.key)
        let variants = memory.withLock { memory -> [CacheEntry] in
            var variants = memory.slots[key]?.variants ?? []
            variants.removeAll { $0.varyValues == entry.varyValues }
            variants.append(entry)
            return variants
        }
        remember(key, variants)
        disk?.save(entry.key, variants)
    }

    /// Forgets every variant stored for the URL of `request` (after an unsafe method succeeded on it).
    func invalidate(_ url: URL) {
        for method in ["GET", "HEAD"] {
            let key = MemoryKey(method: method, url: url.absoluteString)
            memory.withLock { memory in
                if let removed = memory.slots.removeValue(forKey: key) { memory.bytes -= removed.cost }
            }
            disk?.remove(key.joined)
        }
    }

    private func remember(_ key: MemoryKey, _ variants: [CacheEntry]) {
        memory.withLock { memory in
            memory.bytes -= memory.slots[key]?.cost ?? 0
            memory.clock += 1
            let slot = Slot(variants: variants, lastUse: memory.clock)
            memory.slots[key] = slot
            memory.bytes += slot.cost
            while memory.bytes > memoryLimit,
                let oldest = memory.slots.min(by: { $0.value.lastUse < $1.value.lastUse })?.key
            {
                memory.bytes -= memory.slots.removeValue(forKey: oldest)?.cost ?? 0
            }
        }
    }

    /// Marks the variant `entry` as being revalidated in the background; `false` when it already is.
    func beginBackgroundRevalidation(of entry: CacheEntry) -> Bool {
        revalidating.withLock { $0.insert(entry.variantID).inserted }
    }

    /// Marks the variant `entry` as no longer being revalidated.
    func endBackgroundRevalidation(of entry: CacheEntry) {
        _ = revalidating.withLock { $0.remove(entry.variantID) }
    }

    static func key(for request: URLRequest) -> String {
        (request.httpMethod ?? "GET") + " " + (request.url?.absoluteString ?? "")
    }
}
