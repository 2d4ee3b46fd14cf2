/// RFC 3986 percent-encoding into a byte buffer.
enum PercentEncoding {
    /// `ALPHA / DIGIT / "-" / "." / "_" / "~"`: the only bytes a query key or value keeps as they are.
    static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// `pchar` without `/`: what one path segment keeps.
    static func isSegmentCharacter(_ byte: UInt8) -> Bool {
        if isUnreserved(byte) { return true }
        switch byte {
        case UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("),
            UInt8(ascii: ")"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: ";"),
            UInt8(ascii: "="), UInt8(ascii: ":"), UInt8(ascii: "@"):
            return true
        default:
            return false
        }
    }

    static func isPathCharacter(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "/") || isSegmentCharacter(byte)
    }

    static func append(_ string: String, to buffer: inout [UInt8], keeping keep: (UInt8) -> Bool) {
        for byte in string.utf8 {
            if keep(byte) {
                buffer.append(byte)
            } else {
                buffer.append(UInt8(ascii: "%"))
                buffer.append(hexDigits[Int(byte >> 4)])
                buffer.append(hexDigits[Int(byte & 0x0F)])
            }
        }
    }

    /// The string encoded, or the string itself when nothing needs encoding (the usual case).
    static func encode(_ string: String, keeping keep: (UInt8) -> Bool) -> String {
        if string.utf8.allSatisfy(keep) { return string }
        var buffer: [UInt8] = []
        buffer.reserveCapacity(string.utf8.count + 16)
        append(string, to: &buffer, keeping: keep)
        return String(decoding: buffer, as: UTF8.self)
    }

    private static let hexDigits = Array("0123456789ABCDEF".utf8)
}
