import Foundation

/// What a parameter value is, told apart once so the query and JSON writers share one set of rules.
enum ParameterValue {
    case string(String)
    /// A number already written the way JSON and query strings both want it.
    case number(String)
    case bool(Bool)
    case array([Any])
    case object([String: Any])
    /// `NSNull`: JSON `null`, an empty value in a query.
    case null
    /// `Optional.none`: JSON `null`, left out of a query.
    case absent
    case unsupported(String)

    init(_ value: Any) {
        // Exact types first: dynamic casts would bridge NSNumber(1) to `true` and back.
        switch ObjectIdentifier(type(of: value)) {
        case ObjectIdentifier(String.self): self = .string(value as! String)
        case ObjectIdentifier([String: Any].self): self = .object(value as! [String: Any])
        case ObjectIdentifier([Any].self): self = .array(value as! [Any])
        case ObjectIdentifier(Int.self): self = .number(String(value as! Int))
        case ObjectIdentifier(Bool.self): self = .bool(value as! Bool)
        case ObjectIdentifier(Double.self): self = Self.number(value as! Double)
        case ObjectIdentifier(Int64.self): self = .number(String(value as! Int64))
        case ObjectIdentifier(Int32.self): self = .number(String(value as! Int32))
        case ObjectIdentifier(Int16.self): self = .number(String(value as! Int16))
        case ObjectIdentifier(Int8.self): self = .number(String(value as! Int8))
        case ObjectIdentifier(UInt.self): self = .number(String(value as! UInt))
        case ObjectIdentifier(UInt64.self): self = .number(String(value as! UInt64))
        case ObjectIdentifier(UInt32.self): self = .number(String(value as! UInt32))
        case ObjectIdentifier(UInt16.self): self = .number(String(value as! UInt16))
        case ObjectIdentifier(UInt8.self): self = .number(String(value as! UInt8))
        case ObjectIdentifier(Float.self): self = Self.number(value as! Float)
        case ObjectIdentifier(Substring.self): self = .string(String(value as! Substring))
        case ObjectIdentifier(Character.self): self = .string(String(value as! Character))
        case ObjectIdentifier(Decimal.self):
            let decimal = value as! Decimal
            self = decimal.isNaN ? .unsupported("NaN cannot be encoded") : .number(decimal.description)
        default: self = Self.classifyDynamically(value)
        }
    }

    /// Containers first: asking a dictionary whether it bridges to `NSNumber` costs more than the rest.
    private static func classifyDynamically(_ value: Any) -> ParameterValue {
        if let optional = value as? any OptionalParameter {
            guard let wrapped = optional.wrappedParameter else { return .absent }
            return ParameterValue(wrapped)
        }
        if let object = value as? [String: Any] { return .object(object) }
        if let array = value as? [Any] { return .array(array) }
        if let string = value as? String { return .string(string) }
        if value is NSNull { return .null }
        if let number = value as? NSNumber { return Self.number(number) }
        if let unencodable = value as? UnencodableValue { return .unsupported(unencodable.reason) }
        return .unsupported("a value of type \(type(of: value)) has no JSON or query form; convert it first")
    }

    private static let booleanNumberType: AnyClass = type(of: NSNumber(value: true))

    private static func number(_ number: NSNumber) -> ParameterValue {
        if type(of: number) == booleanNumberType { return .bool(number.boolValue) }
        switch UInt8(bitPattern: number.objCType.pointee) {
        case UInt8(ascii: "d"), UInt8(ascii: "f"): return Self.number(number.doubleValue)
        case UInt8(ascii: "Q"), UInt8(ascii: "L"), UInt8(ascii: "I"):
            return .number(String(number.uint64Value))
        default: return .number(String(number.int64Value))
        }
    }

    static func number(_ double: Double) -> ParameterValue {
        guard double.isFinite else { return .unsupported("\(double) cannot be encoded") }
        // Integral values print without a fraction, as JSONSerialization does.
        if double == double.rounded(), abs(double) < 1e15 { return .number(String(Int64(double))) }
        return .number(double.description)
    }

    static func number(_ float: Float) -> ParameterValue {
        guard float.isFinite else { return .unsupported("\(float) cannot be encoded") }
        if float == float.rounded(), abs(float) < 1e7 { return .number(String(Int64(float))) }
        return .number(float.description)
    }
}

/// Lets an `Any` that holds an optional be unwrapped without knowing its type.
private protocol OptionalParameter {
    var wrappedParameter: Any? { get }
}

extension Optional: OptionalParameter {
    fileprivate var wrappedParameter: Any? {
        switch self {
        case let .some(value): value
        case .none: nil
        }
    }
}

extension ParameterValue {
    /// How deep parameters may nest: dictionaries and arrays inside one another, 100 levels at most. Deeper
    /// ones are refused, rather than written by a recursion that could exhaust the stack.
    static let maxDepth = 100

    static let tooDeep = "it is nested deeper than \(maxDepth) levels"
}

/// A parameter that cannot be written, and where it sits (`filter[since]`).
struct ParameterProblem: Error {
    let key: String
    let reason: String
}
