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

    /// Sets a field, replacing any field whose name matches case-insensitively; the new spelling wins.
    mutating func set(_ name: String, _ value: String) {
        if let index = fields.firstIndex(where: { Self.namesMatch($0.name, name) }) {
            fields[index] = Field(name: name, value: value)
        } else {
            fields.append(Field(name: name, value: value))
        }
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

    private static func lowercase(_ byte: UInt8) -> UInt8 {
        (byte >= 0x41 && byte <= 0x5A) ? byte | 0x20 : byte
    }

    /// RFC 9110 §5.5: visible characters, spaces, tabs and obs-text; never CR, LF, NUL or other controls.
    static func isValidValue(_ value: String) -> Bool {
        value.utf8.allSatisfy { $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }
    }
}

/// RFC 9110 §5.6.2 tokens: header names and methods.
enum HTTPToken {
    static func isValid(_ string: String) -> Bool {
        !string.isEmpty && string.utf8.allSatisfy(isTokenCharacter)
    }

    static func isTokenCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
            UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
            UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }
}
