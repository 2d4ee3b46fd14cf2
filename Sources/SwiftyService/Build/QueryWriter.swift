/// Writes parameters as `application/x-www-form-urlencoded` text: the query string and form bodies.
///
/// Keys are sorted at every level, so one endpoint always builds one URL; keys and values are
/// percent-encoded per RFC 3986 (space `%20`, `+` `%2B`, brackets `%5B` `%5D`).
struct QueryWriter {
    let arrays: ParameterEncoding.ArrayStyle
    let bools: ParameterEncoding.BoolStyle
    private(set) var bytes: [UInt8] = []

    init(_ encoding: ParameterEncoding) {
        arrays = encoding.arrays
        bools = encoding.bools
    }

    mutating func write(_ parameters: [String: Any]) throws {
        bytes.reserveCapacity(bytes.count + parameters.count * 16)
        for (key, value) in parameters.sorted(by: { $0.key < $1.key }) {
            try write(value, key: key, keyIsEncoded: false, depth: 1)
        }
    }

    private mutating func write(_ value: Any, key: String, keyIsEncoded: Bool, depth: Int) throws {
        switch ParameterValue(value) {
        case let .string(string): pair(key, keyIsEncoded, string)
        case let .number(number): pair(key, keyIsEncoded, number)
        case let .bool(bool):
            switch bools {
            case .numeric: pair(key, keyIsEncoded, bool ? "1" : "0")
            case .literal: pair(key, keyIsEncoded, bool ? "true" : "false")
            }
        case .null: pair(key, keyIsEncoded, "")
        case .absent: break
        case let .array(array):
            guard depth < ParameterValue.maxDepth else { throw tooDeep(key, keyIsEncoded) }
            let base = encoded(key, keyIsEncoded)
            for (index, element) in array.enumerated() {
                switch arrays {
                case .brackets: try write(element, key: base + "%5B%5D", keyIsEncoded: true, depth: depth + 1)
                case .noBrackets: try write(element, key: base, keyIsEncoded: true, depth: depth + 1)
                case .indexed:
                    try write(element, key: base + "%5B\(index)%5D", keyIsEncoded: true, depth: depth + 1)
                }
            }
        case let .object(object):
            guard depth < ParameterValue.maxDepth else { throw tooDeep(key, keyIsEncoded) }
            let base = encoded(key, keyIsEncoded)
            for nestedKey in object.keys.sorted() {
                let nested =
                    base + "%5B" + PercentEncoding.encode(nestedKey, keeping: .unreserved)
                    + "%5D"
                try write(object[nestedKey]!, key: nested, keyIsEncoded: true, depth: depth + 1)
            }
        case let .unsupported(reason):
            throw ParameterProblem(key: Self.readable(encoded(key, keyIsEncoded)), reason: reason)
        }
    }

    private func tooDeep(_ key: String, _ keyIsEncoded: Bool) -> ParameterProblem {
        ParameterProblem(key: Self.readable(encoded(key, keyIsEncoded)), reason: ParameterValue.tooDeep)
    }

    private func encoded(_ key: String, _ isEncoded: Bool) -> String {
        isEncoded ? key : PercentEncoding.encode(key, keeping: .unreserved)
    }

    private mutating func pair(_ key: String, _ keyIsEncoded: Bool, _ value: String) {
        if !bytes.isEmpty { bytes.append(UInt8(ascii: "&")) }
        if keyIsEncoded {
            bytes.append(contentsOf: key.utf8)
        } else {
            PercentEncoding.append(key, to: &bytes, keeping: .unreserved)
        }
        bytes.append(UInt8(ascii: "="))
        PercentEncoding.append(value, to: &bytes, keeping: .unreserved)
    }

    /// `filter%5Bsince%5D` → `filter[since]`, for error messages.
    private static func readable(_ encodedKey: String) -> String {
        encodedKey.removingPercentEncodingIfPossible
    }
}

extension String {
    fileprivate var removingPercentEncodingIfPossible: String {
        var bytes: [UInt8] = []
        var iterator = utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%"), let high = iterator.next(), let low = iterator.next(),
                let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
            else {
                bytes.append(byte)
                continue
            }
            bytes.append(value)
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
