import Foundation

/// Turns an `Encodable` value into the parameter tree a `[String: Any]` holds (`[String: Any]`, `[Any]`,
/// strings, numbers, bools, `NSNull`), so that `QueryWriter` and `JSONWriter` write it by the same rules as a
/// dictionary. Leaves keep their Swift types (an `Int` stays an `Int`), which is what makes the bytes equal.
struct ParameterTreeEncoder {
    let dates: URLEncodedFormEncoder.DateEncoding
    let data: URLEncodedFormEncoder.DataEncoding

    /// The value's fields; a value that is not a set of named fields (a struct, a class or a dictionary)
    /// is refused.
    func parameters(_ value: some Encodable) throws -> [String: Any] {
        let slot = Slot()
        try value.encode(to: TreeEncoder(options: self, slot: slot, codingPath: []))
        guard let object = slot.value as? ObjectBox else {
            throw EncodingError.invalidValue(
                value,
                EncodingError.Context(
                    codingPath: [],
                    debugDescription:
                        "a \(type(of: value)) is not a set of named fields: parameters come from a "
                        + "struct, a class or a dictionary"))
        }
        return object.resolved
    }

    /// A leaf that is not written as its own fields: dates and data per the strategies, URLs as text, and
    /// `Decimal`, whose own `Encodable` form is a set of fields; `nil` for everything else.
    func leaf(_ value: some Encodable) -> Any? {
        switch value {
        case let date as Date:
            switch dates {
            case .iso8601: date.formatted(Self.iso8601)
            case .secondsSince1970: date.timeIntervalSince1970
            case .millisecondsSince1970: (date.timeIntervalSince1970 * 1000).rounded()
            case let .custom(format): format(date)
            }
        case let bytes as Data:
            switch data {
            case .base64: bytes.base64EncodedString()
            case let .custom(format): format(bytes)
            }
        case let url as URL: url.absoluteString
        case let decimal as Decimal: decimal
        default: nil
        }
    }

    private static let iso8601 = Date.ISO8601FormatStyle()
}

/// Where one encoder puts what it encodes: an object, an array or a single value.
private final class Slot {
    var value: Any?

    /// The box already here (a container asked for twice, as `super` encoding does), or a new one put here.
    func box<Box>(_ make: () -> Box) -> Box {
        if let existing = value as? Box { return existing }
        let box = make()
        value = box
        return box
    }
}

/// An object being filled; nested containers sit in it as boxes until ``resolved``.
private final class ObjectBox {
    var values: [String: Any] = [:]
    var hasBoxes = false

    init(capacity: Int = 0) {
        if capacity > 0 { values.reserveCapacity(capacity) }
    }

    var resolved: [String: Any] {
        guard hasBoxes else { return values }
        return values.mapValues(resolve)
    }
}

/// An array being filled; nested containers sit in it as boxes until ``resolved``.
private final class ArrayBox {
    var values: [Any] = []
    var hasBoxes = false

    var resolved: [Any] {
        guard hasBoxes else { return values }
        return values.map(resolve)
    }
}

private func resolve(_ value: Any) -> Any {
    switch value {
    case let object as ObjectBox: object.resolved
    case let array as ArrayBox: array.resolved
    case let slot as Slot: slot.value.map(resolve) ?? NSNull()
    default: value
    }
}

private struct TreeEncoder: Encoder {
    let options: ParameterTreeEncoder
    let slot: Slot
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(
            KeyedContainer(options: options, object: slot.box { ObjectBox() }, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        UnkeyedContainer(options: options, array: slot.box { ArrayBox() }, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleValueContainer(options: options, slot: slot, codingPath: codingPath)
    }

    /// What `value` becomes in the tree: a leaf as it is, anything else through its own `encode(to:)`.
    static func tree(of value: some Encodable, options: ParameterTreeEncoder, codingPath: [any CodingKey])
        throws
        -> Any
    {
        if let leaf = options.leaf(value) { return leaf }
        let slot = Slot()
        try value.encode(to: TreeEncoder(options: options, slot: slot, codingPath: codingPath))
        switch slot.value {
        case let object as ObjectBox: return object.resolved
        case let array as ArrayBox: return array.resolved
        case let single?: return single
        // A value that encoded nothing at all is an empty object, as JSONEncoder writes it.
        case nil: return [String: Any]()
        }
    }
}

private struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let options: ParameterTreeEncoder
    let object: ObjectBox
    let codingPath: [any CodingKey]

    mutating func encodeNil(forKey key: Key) throws { object.values[key.stringValue] = NSNull() }
    mutating func encode(_ value: Bool, forKey key: Key) throws { object.values[key.stringValue] = value }
    mutating func encode(_ value: String, forKey key: Key) throws { object.values[key.stringValue] = value }
    mutating func encode(_ value: Double, forKey key: Key) throws { object.values[key.stringValue] = value }
    mutating func encode(_ value: Float, forKey key: Key) throws { object.values[key.stringValue] = value }
    mutating func encode(_ value: Int, forKey key: Key) throws { object.values[key.stringValue] = value }
    mutating func encode(_ value: Int8, forKey key: Key) throws { object.values[key.stringValue] = value }
    mutating func encode(_ value: Int16, forKey key: Key) throws { object.values[key.stringValue] = value }
    mutating func encode(_ value: Int32, forKey key: Key) throws { object.values[key.stringValue] = value }
    mutating func encode(_ value: Int64, forKey key: Key) throws { object.values[key.stringValue] = value }
    mutating func encode(_ value: UInt, forKey key: Key) throws { object.values[key.stringValue] = value }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { object.values[key.stringValue] = value }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { object.values[key.stringValue] = value }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { object.values[key.stringValue] = value }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { object.values[key.stringValue] = value }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        object.values[key.stringValue] = try TreeEncoder.tree(
            of: value, options: options, codingPath: codingPath + [key])
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    {
        let nested = ObjectBox()
        object.values[key.stringValue] = nested
        object.hasBoxes = true
        return KeyedEncodingContainer(
            KeyedContainer<NestedKey>(options: options, object: nested, codingPath: codingPath + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let nested = ArrayBox()
        object.values[key.stringValue] = nested
        object.hasBoxes = true
        return UnkeyedContainer(options: options, array: nested, codingPath: codingPath + [key])
    }

    /// The superclass's fields under `super`, as JSONEncoder puts them (a `Key` named so may not exist).
    mutating func superEncoder() -> any Encoder { superEncoder(at: PathKey(stringValue: "super")) }

    mutating func superEncoder(forKey key: Key) -> any Encoder { superEncoder(at: key) }

    private func superEncoder(at key: any CodingKey) -> any Encoder {
        let slot = Slot()
        object.values[key.stringValue] = slot
        object.hasBoxes = true
        return TreeEncoder(options: options, slot: slot, codingPath: codingPath + [key])
    }
}

private struct UnkeyedContainer: UnkeyedEncodingContainer {
    let options: ParameterTreeEncoder
    let array: ArrayBox
    let codingPath: [any CodingKey]
    var count: Int { array.values.count }

    private var nextKey: any CodingKey { IndexKey(intValue: array.values.count) }

    init(options: ParameterTreeEncoder, array: ArrayBox, codingPath: [any CodingKey]) {
        self.options = options
        self.array = array
        self.codingPath = codingPath
    }

    mutating func encodeNil() throws { array.values.append(NSNull()) }
    mutating func encode(_ value: Bool) throws { array.values.append(value) }
    mutating func encode(_ value: String) throws { array.values.append(value) }
    mutating func encode(_ value: Double) throws { array.values.append(value) }
    mutating func encode(_ value: Float) throws { array.values.append(value) }
    mutating func encode(_ value: Int) throws { array.values.append(value) }
    mutating func encode(_ value: Int8) throws { array.values.append(value) }
    mutating func encode(_ value: Int16) throws { array.values.append(value) }
    mutating func encode(_ value: Int32) throws { array.values.append(value) }
    mutating func encode(_ value: Int64) throws { array.values.append(value) }
    mutating func encode(_ value: UInt) throws { array.values.append(value) }
    mutating func encode(_ value: UInt8) throws { array.values.append(value) }
    mutating func encode(_ value: UInt16) throws { array.values.append(value) }
    mutating func encode(_ value: UInt32) throws { array.values.append(value) }
    mutating func encode(_ value: UInt64) throws { array.values.append(value) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        array.values.append(
            try TreeEncoder.tree(of: value, options: options, codingPath: codingPath + [nextKey]))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
        -> KeyedEncodingContainer<NestedKey>
    {
        let nested = ObjectBox()
        let path = codingPath + [nextKey]
        array.values.append(nested)
        array.hasBoxes = true
        return KeyedEncodingContainer(
            KeyedContainer<NestedKey>(options: options, object: nested, codingPath: path))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let nested = ArrayBox()
        let path = codingPath + [nextKey]
        array.values.append(nested)
        array.hasBoxes = true
        return UnkeyedContainer(options: options, array: nested, codingPath: path)
    }

    mutating func superEncoder() -> any Encoder {
        let slot = Slot()
        let path = codingPath + [nextKey]
        array.values.append(slot)
        array.hasBoxes = true
        return TreeEncoder(options: options, slot: slot, codingPath: path)
    }
}

private struct SingleValueContainer: SingleValueEncodingContainer {
    let options: ParameterTreeEncoder
    let slot: Slot
    let codingPath: [any CodingKey]

    mutating func encodeNil() throws { slot.value = NSNull() }
    mutating func encode(_ value: Bool) throws { slot.value = value }
    mutating func encode(_ value: String) throws { slot.value = value }
    mutating func encode(_ value: Double) throws { slot.value = value }
    mutating func encode(_ value: Float) throws { slot.value = value }
    mutating func encode(_ value: Int) throws { slot.value = value }
    mutating func encode(_ value: Int8) throws { slot.value = value }
    mutating func encode(_ value: Int16) throws { slot.value = value }
    mutating func encode(_ value: Int32) throws { slot.value = value }
    mutating func encode(_ value: Int64) throws { slot.value = value }
    mutating func encode(_ value: UInt) throws { slot.value = value }
    mutating func encode(_ value: UInt8) throws { slot.value = value }
    mutating func encode(_ value: UInt16) throws { slot.value = value }
    mutating func encode(_ value: UInt32) throws { slot.value = value }
    mutating func encode(_ value: UInt64) throws { slot.value = value }

    mutating func encode<T: Encodable>(_ value: T) throws {
        slot.value = try TreeEncoder.tree(of: value, options: options, codingPath: codingPath)
    }
}

private struct IndexKey: CodingKey {
    let intValue: Int?
    var stringValue: String { intValue.map(String.init) ?? "" }
    init(intValue: Int) { self.intValue = intValue }
    init?(stringValue: String) { nil }
}

/// What stands in the parameters of a value that could not be encoded: the request then fails as for any
/// parameter that cannot be written, naming where (`filter[since]`) and why.
struct UnencodableValue {
    let reason: String

    static func parameters(for error: any Error) -> [String: Any] {
        let path: [any CodingKey] =
            switch error as? EncodingError {
            case let .invalidValue(_, context)?: context.codingPath
            default: []
            }
        let names = path.map { $0.intValue.map(String.init) ?? $0.stringValue }
        let key =
            names.first.map { first in first + names.dropFirst().map { "[\($0)]" }.joined() } ?? "(value)"
        return [key: UnencodableValue(reason: reason(of: error))]
    }

    static func reason(of error: any Error) -> String {
        switch error as? EncodingError {
        case let .invalidValue(_, context)?: context.debugDescription
        default: String(describing: error)
        }
    }
}
