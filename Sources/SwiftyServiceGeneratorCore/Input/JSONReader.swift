/// Reads JSON text (RFC 8259) into a ``JSON`` value, keeping the order of object members.
///
/// Foundation's `JSONSerialization` loses that order, which generated code would then shuffle.
enum JSONReader {
    /// Nesting deeper than this is refused rather than recursed into.
    static let maxDepth = 512

    static func read(_ bytes: [UInt8]) throws(SyntaxError) -> JSON {
        try bytes.withUnsafeBufferPointer { buffer throws(SyntaxError) in
            var reader = Cursor(bytes: buffer)
            if let invalid = TextInput.firstInvalidUTF8(buffer) {
                throw reader.error("the text is not valid UTF-8", at: invalid)
            }
            reader.skipWhitespace()
            if reader.index == 0, buffer.starts(with: [0xEF, 0xBB, 0xBF]) {
                reader.index = 3
                reader.skipWhitespace()
            }
            let value = try reader.value(depth: 0)
            reader.skipWhitespace()
            guard reader.index == buffer.count else { throw reader.error("unexpected text after the JSON value") }
            return value
        }
    }

    private struct Cursor {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        func error(_ message: String, at offset: Int? = nil) -> SyntaxError {
            SyntaxError(message: message, position: Self.position(of: offset ?? index, in: bytes))
        }

        static func position(of offset: Int, in bytes: UnsafeBufferPointer<UInt8>) -> TextPosition {
            var line = 1
            var column = 1
            for byte in bytes[..<min(offset, bytes.count)] {
                if byte == UInt8(ascii: "\n") {
                    line += 1
                    column = 1
                } else if byte & 0xC0 != 0x80 {
                    column += 1
                }
            }
            return TextPosition(line: line, column: column)
        }

        mutating func skipWhitespace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }

        mutating func value(depth: Int) throws(SyntaxError) -> JSON {
            guard depth < JSONReader.maxDepth else { throw error("values nest deeper than \(JSONReader.maxDepth) levels") }
            guard index < bytes.count else { throw error("the text ends where a value should be") }
            switch bytes[index] {
            case UInt8(ascii: "{"): return try object(depth: depth)
            case UInt8(ascii: "["): return try array(depth: depth)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): return try literal("true", .bool(true))
            case UInt8(ascii: "f"): return try literal("false", .bool(false))
            case UInt8(ascii: "n"): return try literal("null", .null)
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
            default: throw error("unexpected character '\(Self.show(bytes[index]))' where a value should be")
            }
        }

        static func show(_ byte: UInt8) -> String {
            byte >= 0x20 && byte < 0x7F ? String(UnicodeScalar(byte)) : "\\u{\(String(byte, radix: 16))}"
        }

        mutating func literal(_ word: StaticString, _ value: JSON) throws(SyntaxError) -> JSON {
            let count = word.utf8CodeUnitCount
            guard index + count <= bytes.count,
                UnsafeBufferPointer(start: word.utf8Start, count: count).elementsEqual(bytes[index..<index + count])
            else { throw error("unexpected word where a value should be") }
            index += count
            return value
        }

        mutating func object(depth: Int) throws(SyntaxError) -> JSON {
            index += 1
            var members: [JSONObject.Member] = []
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object(JSONObject(members))
            }
            while true {
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                    throw error("expected a string key in the object")
                }
                let key = try string()
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else {
                    throw error("expected ':' after the key \"\(key)\"")
                }
                index += 1
                skipWhitespace()
                members.append((key, try value(depth: depth + 1)))
                skipWhitespace()
                guard index < bytes.count else { throw error("the object is not closed") }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                guard bytes[index] == UInt8(ascii: "}") else { throw error("expected ',' or '}' in the object") }
                index += 1
                return .object(JSONObject(members))
            }
        }

        mutating func array(depth: Int) throws(SyntaxError) -> JSON {
            index += 1
            var elements: [JSON] = []
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(elements)
            }
            while true {
                skipWhitespace()
                elements.append(try value(depth: depth + 1))
                skipWhitespace()
                guard index < bytes.count else { throw error("the array is not closed") }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                guard bytes[index] == UInt8(ascii: "]") else { throw error("expected ',' or ']' in the array") }
                index += 1
                return .array(elements)
            }
        }

        mutating func number() throws(SyntaxError) -> JSON {
            let start = index
            var isInteger = true
            if bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") else {
                throw error("a number needs a digit after '-'")
            }
            if bytes[index] == UInt8(ascii: "0") {
                index += 1
            } else {
                skipDigits()
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                isInteger = false
                index += 1
                guard index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9")
                else { throw error("a number needs a digit after '.'") }
                skipDigits()
            }
            if index < bytes.count, bytes[index] | 0x20 == UInt8(ascii: "e") {
                isInteger = false
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                    index += 1
                }
                guard index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9")
                else { throw error("a number needs a digit in its exponent") }
                skipDigits()
            }
            let text = String(decoding: bytes[start..<index], as: UTF8.self)
            if isInteger, let integer = Int64(text) { return .integer(integer) }
            guard let double = Double(text) else { throw error("'\(text)' is not a number", at: start) }
            return .double(double)
        }

        mutating func skipDigits() {
            while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
                index += 1
            }
        }

        mutating func string() throws(SyntaxError) -> String {
            let start = index
            index += 1
            let contentStart = index
            // The usual string has no escapes: one pass finds its end, one String is made of the bytes.
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    let text = String(decoding: bytes[contentStart..<index], as: UTF8.self)
                    index += 1
                    return text
                }
                if byte == UInt8(ascii: "\\") { break }
                if byte < 0x20 { throw error("a control character must be escaped in a string") }
                index += 1
            }
            var buffer = Array(bytes[contentStart..<index])
            while index < bytes.count {
                let byte = bytes[index]
                switch byte {
                case UInt8(ascii: "\""):
                    index += 1
                    return String(decoding: buffer, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    index += 1
                    guard index < bytes.count else { break }
                    let escape = bytes[index]
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): buffer.append(escape)
                    case UInt8(ascii: "b"): buffer.append(0x08)
                    case UInt8(ascii: "f"): buffer.append(0x0C)
                    case UInt8(ascii: "n"): buffer.append(0x0A)
                    case UInt8(ascii: "r"): buffer.append(0x0D)
                    case UInt8(ascii: "t"): buffer.append(0x09)
                    case UInt8(ascii: "u"):
                        var scalar = try hex4()
                        if (0xD800..<0xDC00).contains(scalar) {
                            guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"),
                                bytes[index + 1] == UInt8(ascii: "u")
                            else { throw error("a high surrogate must be followed by a low one") }
                            index += 2
                            let low = try hex4()
                            guard (0xDC00..<0xE000).contains(low) else {
                                throw error("a high surrogate must be followed by a low one")
                            }
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        } else if (0xDC00..<0xE000).contains(scalar) {
                            throw error("a low surrogate without a high one")
                        }
                        buffer.append(contentsOf: String(Character(UnicodeScalar(scalar)!)).utf8)
                    default: throw error("unknown escape '\\\(Self.show(escape))'", at: index - 2)
                    }
                default:
                    if byte < 0x20 { throw error("a control character must be escaped in a string") }
                    buffer.append(byte)
                    index += 1
                }
            }
            throw error("the string is not closed", at: start)
        }

        mutating func hex4() throws(SyntaxError) -> UInt32 {
            guard index + 4 <= bytes.count else { throw error("\\u needs four hex digits") }
            var value: UInt32 = 0
            for byte in bytes[index..<index + 4] {
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: throw error("\\u needs four hex digits")
                }
                value = value << 4 | UInt32(digit)
            }
            index += 4
            return value
        }
    }
}
