/// Writes `[String: Any]` parameters as JSON without `JSONSerialization` (several times faster), with
/// sorted keys so one endpoint always sends the same bytes.
///
/// Output is what `JSONSerialization` with `.sortedKeys` and `.withoutEscapingSlashes` writes: integral
/// numbers without a fraction, the shortest round-tripping digits otherwise, `\uXXXX` for control characters.
struct JSONWriter {
    private(set) var bytes: [UInt8] = []
    /// Containers around the value being written, the parameters' own object included.
    private var depth = 1

    /// A value that cannot be written, with the way to it gathered while the error travels out, so that a
    /// body that can be written pays nothing for naming one that cannot.
    private struct Unwritable: Error {
        enum Step {
            case key(String)
            case index(Int)
        }
        /// Innermost first.
        var steps: [Step] = []
        let reason: String

        /// `filter[since]`, `ids[2]`.
        var problem: ParameterProblem {
            var key = ""
            for (position, step) in steps.reversed().enumerated() {
                switch step {
                case let .key(name): key += position == 0 ? name : "[\(name)]"
                case let .index(index): key += "[\(index)]"
                }
            }
            return ParameterProblem(key: key, reason: reason)
        }
    }

    mutating func write(_ object: [String: Any]) throws {
        bytes.reserveCapacity(object.count * 24)
        do {
            try writeObject(object)
        } catch {
            throw error.problem
        }
    }

    private mutating func write(_ value: Any) throws(Unwritable) {
        switch ParameterValue(value) {
        case let .string(string): writeString(string)
        case let .number(number): bytes.append(contentsOf: number.utf8)
        case let .bool(bool): bytes.append(contentsOf: (bool ? "true" : "false").utf8)
        case .null, .absent: bytes.append(contentsOf: "null".utf8)
        case let .array(array):
            guard depth < ParameterValue.maxDepth else { throw Unwritable(reason: ParameterValue.tooDeep) }
            depth += 1
            defer { depth -= 1 }
            bytes.append(UInt8(ascii: "["))
            for (index, element) in array.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                do {
                    try write(element)
                } catch {
                    var unwritable = error
                    unwritable.steps.append(.index(index))
                    throw unwritable
                }
            }
            bytes.append(UInt8(ascii: "]"))
        case let .object(object):
            guard depth < ParameterValue.maxDepth else { throw Unwritable(reason: ParameterValue.tooDeep) }
            depth += 1
            defer { depth -= 1 }
            try writeObject(object)
        case let .unsupported(reason):
            throw Unwritable(reason: reason)
        }
    }

    private mutating func writeObject(_ object: [String: Any]) throws(Unwritable) {
        bytes.append(UInt8(ascii: "{"))
        var first = true
        for key in object.keys.sorted() {
            if !first { bytes.append(UInt8(ascii: ",")) }
            first = false
            writeString(key)
            bytes.append(UInt8(ascii: ":"))
            do {
                try write(object[key]!)
            } catch {
                var unwritable = error
                unwritable.steps.append(.key(key))
                throw unwritable
            }
        }
        bytes.append(UInt8(ascii: "}"))
    }

    private mutating func writeString(_ string: String) {
        bytes.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x0A: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0x08: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
            case 0x0C: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
            case 0x00..<0x20:
                bytes.append(contentsOf: Array("\\u00".utf8))
                bytes.append(Self.hexDigits[Int(byte >> 4)])
                bytes.append(Self.hexDigits[Int(byte & 0x0F)])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)
}
