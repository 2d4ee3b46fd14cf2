/// Reading a description file: JSON or YAML, told apart by its first character.
public enum TextInput {
    /// The value of a JSON or YAML text. A YAML stream must hold one document.
    /// - Throws: ``SyntaxError`` naming the line and column of the first problem.
    public static func read(_ bytes: [UInt8]) throws(SyntaxError) -> JSON {
        guard startsLikeJSON(bytes) else { return try readYAML(bytes) }
        do {
            return try JSONReader.read(bytes)
        } catch {
            // A YAML flow mapping that is not JSON (`{a: 1}`) is still YAML; a broken JSON file is reported as JSON.
            guard let yaml = try? readYAML(bytes) else { throw error }
            return yaml
        }
    }

    private static func readYAML(_ bytes: [UInt8]) throws(SyntaxError) -> JSON {
        let documents = try YAMLReader.read(bytes)
        guard documents.count <= 1 else {
            throw SyntaxError(
                message: "the file holds \(documents.count) YAML documents; a description is one",
                position: TextPosition(line: 1, column: 1))
        }
        return documents.first ?? .null
    }

    /// JSON starts with `{` or `[` after white space; an OpenAPI file in YAML starts with a key.
    static func startsLikeJSON(_ bytes: [UInt8]) -> Bool {
        var index = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        return index < bytes.count && (bytes[index] == UInt8(ascii: "{") || bytes[index] == UInt8(ascii: "["))
    }

    /// The offset of the first byte that is not part of valid UTF-8, if there is one.
    static func firstInvalidUTF8(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        var index = 0
        let count = bytes.count
        while index < count {
            let byte = bytes[index]
            if byte < 0x80 {
                index += 1
                continue
            }
            let length: Int
            let minimum: UInt32
            var scalar: UInt32
            switch byte {
            case 0xC2...0xDF: (length, minimum, scalar) = (2, 0x80, UInt32(byte & 0x1F))
            case 0xE0...0xEF: (length, minimum, scalar) = (3, 0x800, UInt32(byte & 0x0F))
            case 0xF0...0xF4: (length, minimum, scalar) = (4, 0x10000, UInt32(byte & 0x07))
            default: return index
            }
            guard index + length <= count else { return index }
            for offset in 1..<length {
                let next = bytes[index + offset]
                guard next & 0xC0 == 0x80 else { return index }
                scalar = scalar << 6 | UInt32(next & 0x3F)
            }
            if scalar < minimum || scalar > 0x10FFFF || (0xD800...0xDFFF).contains(scalar) { return index }
            index += length
        }
        return nil
    }
}
