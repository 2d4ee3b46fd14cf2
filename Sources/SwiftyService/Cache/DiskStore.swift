import Foundation

/// Cache entries on disk: one file per `METHOD URL` holding its variants, written atomically and
/// evicted least recently used first.
struct DiskStore: Sendable {
    let directory: URL
    let limit: Int
    private let sizes: Locked<[String: Int]>

    init(directory: URL, limit: Int) throws {
        self.directory = directory
        self.limit = limit
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var sizes: [String: Int] = [:]
        for file in (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        where file.hasSuffix(Self.fileExtension) {
            let size =
                (try? FileManager.default.attributesOfItem(
                    atPath: directory.appendingPathComponent(file).path))?[
                    .size] as? Int
            sizes[file] = size ?? 0
        }
        self.sizes = .make(sizes)
    }

    static let fileExtension = ".cache"

    /// The entries stored for `key`; a file that cannot be read as such is removed and counts as none.
    func load(_ key: String) -> [CacheEntry]? {
        let file = url(for: key)
        guard let data = try? Data(contentsOf: file) else { return nil }
        guard let entries = try? JSONDecoder().decode([CacheEntry].self, from: data),
            entries.allSatisfy({ $0.key == key })
        else {
            remove(key)
            return nil
        }
        try? FileManager.default.setAttributes([.modificationDate: Date()], ofItemAtPath: file.path)
        return entries
    }

    func save(_ key: String, _ entries: [CacheEntry]) {
        guard let data = try? JSONEncoder().encode(entries), data.count <= limit else { return }
        let file = url(for: key)
        guard (try? data.write(to: file, options: .atomic)) != nil else { return }
        let total = sizes.withLock { sizes -> Int in
            sizes[file.lastPathComponent] = data.count
            return sizes.values.reduce(0, +)
        }
        if total > limit { evict(keeping: file.lastPathComponent) }
    }

    func remove(_ key: String) {
        let file = url(for: key)
        try? FileManager.default.removeItem(at: file)
        sizes.withLock { $0[file.lastPathComponent] = nil }
    }

    func removeAll() {
        for name in sizes.withLock({ Array($0.keys) }) {
            try? FileManager.default.removeItem(at: directory.appendingPathComponent(name))
        }
        sizes.withLock { $0 = [:] }
    }

    /// Removes the least recently used files until the directory fits the limit again.
    private func evict(keeping newest: String) {
        let files = sizes.withLock { $0 }
        let byAge = files.keys.filter { $0 != newest }.map { name -> (String, Date) in
            let path = directory.appendingPathComponent(name).path
            let modified =
                (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date
            return (name, modified ?? .distantPast)
        }.sorted { $0.1 < $1.1 }
        var total = files.values.reduce(0, +)
        for (name, _) in byAge where total > limit {
            try? FileManager.default.removeItem(at: directory.appendingPathComponent(name))
            total -= files[name] ?? 0
            sizes.withLock { $0[name] = nil }
        }
    }

    /// A file name from the key: FNV-1a, 64 bits, twice with different seeds, so collisions are remote;
    /// the key stored inside the file is checked on load anyway.
    private func url(for key: String) -> URL {
        func fnv(_ seed: UInt64) -> String {
            var hash = seed
            for byte in key.utf8 {
                hash ^= UInt64(byte)
                hash = hash &* 0x100_0000_01b3
            }
            return String(hash, radix: 16)
        }
        return directory.appendingPathComponent(
            fnv(0xcbf2_9ce4_8422_2325) + fnv(0x8422_2325_cbf2_9ce4) + Self.fileExtension)
    }
}
