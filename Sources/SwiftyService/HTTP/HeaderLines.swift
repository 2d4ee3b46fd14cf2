/// A response head's field lines as they came, each without its line break, with a line feed between them:
/// kept so by the backend that reads the head, and parsed into ``HeaderFields`` only when they are asked
/// for. Most responses' fields are never read, and parsing every line into strings as it came cost a
/// libcurl transfer ~2 µs on the backend's one thread.
struct HeaderLines: Sendable {
    private var bytes: [UInt8] = []

    init() {}

    /// Lines with room for `capacity` bytes, so that a usual head grows its storage once.
    init(capacity: Int) {
        bytes.reserveCapacity(capacity)
    }

    /// Appends a field line (name, colon, value), without its line break.
    mutating func append(_ line: UnsafeRawBufferPointer) {
        if !bytes.isEmpty { bytes.append(UInt8(ascii: "\n")) }
        // As typed bytes: the raw buffer's own overload copied them one at a time.
        bytes.append(contentsOf: line.assumingMemoryBound(to: UInt8.self))
    }

    /// Removes every line, keeping the storage for the next head.
    mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
    }

    /// The fields: names and values without the blanks around them, in the order they came; a repeated
    /// name's values joined with ", " under its first spelling (RFC 9110 §5.3).
    var fields: HeaderFields {
        var fields = HeaderFields()
        // Each field's name folded, in the order of `fields`: a line's name is looked for among these
        // integers before any string is made for it. A scan, not a dictionary: for the usual dozen fields it
        // costs a fraction of one hashing, and the 1,000 fields a head may have bound a flood's scans to half
        // a million integer comparisons.
        var names: [UInt64] = []
        bytes.withUnsafeBytes { all in
            var start = 0
            while start < all.count {
                var end = start
                while end < all.count, all[end] != UInt8(ascii: "\n") { end += 1 }
                let line = UnsafeRawBufferPointer(rebasing: all[start..<end])
                start = end + 1
                guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { continue }
                let name = HeaderName.trimmed(UnsafeRawBufferPointer(rebasing: line[0..<colon]))
                let folded = HeaderName.fold(name)
                let value = String(
                    decoding: HeaderName.trimmed(UnsafeRawBufferPointer(rebasing: line[(colon + 1)...])),
                    as: UTF8.self)
                var searched = 0
                var position: Int?
                while position == nil, let index = names[searched...].firstIndex(of: folded) {
                    if HeaderName.same(name, fields.fields[index].name) { position = index }
                    searched = index + 1
                }
                if let position {
                    fields.join(value, at: position)
                } else {
                    names.append(folded)
                    fields.append(String(decoding: name, as: UTF8.self), value)
                }
            }
        }
        return fields
    }
}
