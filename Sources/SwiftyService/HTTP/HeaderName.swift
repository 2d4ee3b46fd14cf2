/// Header names as HTTP compares them: ASCII letters in either case are the same.
enum HeaderName {
    /// FNV-1a of the name's bytes with ASCII letters in lower case: equal for names HTTP holds equal.
    static func fold(_ name: UnsafeRawBufferPointer) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in name {
            hash = (hash ^ UInt64(HeaderFields.lowercase(byte))) &* 0x100_0000_01b3
        }
        return hash
    }

    /// Whether the bytes `name` and the string `other` are the same name, ASCII letters in either case.
    static func same(_ name: UnsafeRawBufferPointer, _ other: String) -> Bool {
        var other = other
        return other.withUTF8 { other in
            name.count == other.count
                && zip(name, other).allSatisfy { HeaderFields.lowercase($0) == HeaderFields.lowercase($1) }
        }
    }

    /// `bytes` without the spaces and tabs around them.
    static func trimmed(_ bytes: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        func isBlank(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        var lower = 0
        var upper = bytes.count
        while lower < upper, isBlank(bytes[lower]) { lower += 1 }
        while upper > lower, isBlank(bytes[upper - 1]) { upper -= 1 }
        return UnsafeRawBufferPointer(rebasing: bytes[lower..<upper])
    }
}
