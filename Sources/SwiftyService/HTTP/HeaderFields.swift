/// Header fields in the order they were set, with names compared case-insensitively (RFC 9110 §5.1).
struct HeaderFields: Sendable, Equatable {
    private(set) var fields: [Field] = []

    struct Field: Sendable, Equatable {
        var name: String
        var value: String
    }

    init() {}

    init(_ dictionary: HTTPHeaderDictionary) {
        // Sorted so that two spellings of one name ("accept", "Accept") always resolve the same way.
        for (name, value) in dictionary.sorted(by: { $0.key < $1.key }) { set(name, value) }
    }

    /// The dictionary's fields in its own order: for response headers, whose names are distinct already.
    init(unsorted dictionary: HTTPHeaderDictionary) {
        fields = dictionary.map { Field(name: $0.key, value: $0.value) }
    }

    var isEmpty: Bool { fields.isEmpty }

    /// Adds a field without looking for one of the same name: for a name known to be absent.
    mutating func append(_ name: String, _ value: String) {
        fields.append(Field(name: name, value: value))
    }

    /// Sets a field, replacing any field whose name matches case-insensitively; the new spelling wins.
    mutating func set(_ name: String, _ value: String) {
        if let index = fields.firstIndex(where: { Self.namesMatch($0.name, name) }) {
            fields[index] = Field(name: name, value: value)
        } else {
            fields.append(Field(name: name, value: value))
        }
    }

    /// Adds a field, or joins `value` to the field of the same name in any spelling (RFC 9110 §5.3).
    mutating func add(_ name: String, _ value: String) {
        if let index = fields.firstIndex(where: { Self.namesMatch($0.name, name) }) {
            join(value, at: index)
        } else {
            fields.append(Field(name: name, value: value))
        }
    }

    /// Adds `value` to the field at `index`, after a comma: a repeated name's values, as RFC 9110 §5.3 joins them.
    mutating func join(_ value: String, at index: Int) {
        fields[index].value += ", " + value
    }

    /// Makes room for `count` fields, so that a head read field by field grows its storage once.
    mutating func reserveCapacity(_ count: Int) {
        fields.reserveCapacity(count)
    }

    /// Removes every field, keeping the storage for the next head.
    mutating func removeAll() {
        fields.removeAll(keepingCapacity: true)
    }

    mutating func merge(_ other: HeaderFields) {
        if fields.isEmpty {
            fields = other.fields
            return
        }
        for field in other.fields { set(field.name, field.value) }
    }

    mutating func merge(_ dictionary: HTTPHeaderDictionary) {
        for (name, value) in dictionary { set(name, value) }
    }

    func value(for name: String) -> String? {
        fields.first(where: { Self.namesMatch($0.name, name) })?.value
    }

    var dictionary: HTTPHeaderDictionary {
        var result = HTTPHeaderDictionary(minimumCapacity: fields.count)
        for field in fields { result[field.name] = field.value }
        return result
    }

    static func namesMatch(_ a: String, _ b: String) -> Bool {
        var left = a.utf8.makeIterator()
        var right = b.utf8.makeIterator()
        while true {
            switch (left.next(), right.next()) {
            case (nil, nil): return true
            case let (l?, r?):
                if l != r && lowercase(l) != lowercase(r) { return false }
            default: return false
            }
        }
    }

    /// The byte with an ASCII upper-case letter made lower case: header names compare so.
    static func lowercase(_ byte: UInt8) -> UInt8 {
        (byte >= 0x41 && byte <= 0x5A) ? byte | 0x20 : byte
    }

    /// RFC 9110 §5.5: visible characters, spaces, tabs and obs-text; never CR, LF, NUL or other controls.
    static func isValidValue(_ value: String) -> Bool {
        value.utf8.allBytesSatisfy { $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }
    }
}

/// RFC 9110 §5.6.2 tokens: header names and methods.
enum HTTPToken {
    static func isValid(_ string: String) -> Bool {
        !string.isEmpty && ASCIISet.token.containsAll(string)
    }
}

extension String.UTF8View {
    /// `allSatisfy`, over the string's own buffer when it has one: these checks run on every header of every
    /// request, and the buffer loop is several times cheaper than the view's iterator.
    @inline(__always)
    func allBytesSatisfy(_ predicate: (UInt8) -> Bool) -> Bool {
        withContiguousStorageIfAvailable { $0.allSatisfy(predicate) } ?? allSatisfy(predicate)
    }
}
