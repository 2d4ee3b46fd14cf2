import Foundation

/// Writes an `Encodable` value as `application/x-www-form-urlencoded` text: byte for byte what the same
/// parameters written as a `[String: Any]` make in a query string or form body.
///
/// The value's fields become keys, sorted at every level; nested values become `filter[since]`, arrays follow
/// ``arrays``, bools ``bools``; everything is percent-encoded per RFC 3986. An optional that is `nil` is left
/// out (`encodeIfPresent`, what synthesized conformances use); an explicit `encodeNil` writes an empty value,
/// as `NSNull` does. Dates are written per ``dates`` (ISO 8601 by default), `Data` per ``data`` (Base64),
/// URLs as their absolute string, numbers as a dictionary's numbers are (`2.0` as `2`).
///
/// ```swift
/// struct Search: Encodable { let q: String; let page: Int; let tags: [String] }
/// let text = try URLEncodedFormEncoder().encode(Search(q: "swift", page: 2, tags: ["a", "b"]))
/// // "page=2&q=swift&tags%5B%5D=a&tags%5B%5D=b"
/// ```
/// Endpoints take such values as parameters through `[String: Any].encoding(_:)`, and as a form body
/// through ``RequestBody/form(_:encoder:)``.
public struct URLEncodedFormEncoder: Sendable {
    /// How a `Date` is written.
    public enum DateEncoding: Sendable {
        /// `2026-12-01T09:30:00Z`: ISO 8601 in UTC, whole seconds.
        case iso8601
        /// Seconds since 1970 as a number: `1796117400`, or `1796117400.5` with a fraction.
        case secondsSince1970
        /// Milliseconds since 1970 as a number: `1796117400000`.
        case millisecondsSince1970
        /// Whatever the closure returns.
        case custom(@Sendable (Date) -> String)
    }

    /// How `Data` is written.
    public enum DataEncoding: Sendable {
        /// Base64 with padding (`+`, `/` and `=` are then percent-encoded like any other byte).
        case base64
        /// Whatever the closure returns.
        case custom(@Sendable (Data) -> String)
    }

    /// How arrays are written.
    public var arrays: ParameterEncoding.ArrayStyle
    /// How bools are written.
    public var bools: ParameterEncoding.BoolStyle
    /// How dates are written.
    public var dates: DateEncoding
    /// How `Data` is written.
    public var data: DataEncoding

    /// An encoder with these styles; the defaults are ``ParameterEncoding``'s.
    public init(
        arrays: ParameterEncoding.ArrayStyle = .brackets, bools: ParameterEncoding.BoolStyle = .numeric,
        dates: DateEncoding = .iso8601, data: DataEncoding = .base64
    ) {
        self.arrays = arrays
        self.bools = bools
        self.dates = dates
        self.data = data
    }

    /// `value` as form text: `page=2&q=swift`.
    /// - Throws: `EncodingError.invalidValue` for a value that is not a set of named fields (a struct,
    ///   class or dictionary), or that holds what a query cannot (NaN, a value nested over 100 deep), or the
    ///   value's own encoding error.
    public func encode(_ value: some Encodable) throws -> String {
        String(decoding: try bytes(value), as: UTF8.self)
    }

    func bytes(_ value: some Encodable) throws -> [UInt8] {
        let parameters = try ParameterTreeEncoder(dates: dates, data: data).parameters(value)
        var writer = QueryWriter(.form(arrays: arrays, bools: bools))
        do {
            try writer.write(parameters)
        } catch let problem as ParameterProblem {
            throw EncodingError.invalidValue(
                value,
                EncodingError.Context(
                    codingPath: [],
                    debugDescription: "parameter '\(problem.key)' cannot be encoded: \(problem.reason)"))
        }
        return writer.bytes
    }
}

extension Dictionary where Key == String, Value == Any {
    /// `value`'s fields as parameters, for an endpoint's `parameters`: they are then written like any
    /// dictionary, per the endpoint's ``ParameterEncoding`` (query or form with its array and bool styles,
    /// or JSON).
    ///
    /// ```swift
    /// var parameters: [String: Any]? {
    ///     switch self {
    ///     case let .search(filter): .encoding(filter)
    ///     }
    /// }
    /// ```
    /// A value that cannot be encoded fails the request with
    /// ``ServiceError/InvalidRequestReason/unencodableParameter(key:reason:)``, naming where; nothing is sent.
    public static func encoding(
        _ value: some Encodable, dates: URLEncodedFormEncoder.DateEncoding = .iso8601,
        data: URLEncodedFormEncoder.DataEncoding = .base64
    ) -> [String: Any] {
        do {
            return try ParameterTreeEncoder(dates: dates, data: data).parameters(value)
        } catch {
            return UnencodableValue.parameters(for: error)
        }
    }
}

extension RequestBody {
    /// An `application/x-www-form-urlencoded` body from a dictionary, written as a form of the endpoint's
    /// parameters would be; the endpoint's ``SwiftyServiceProtocol/parameters`` then go to the query.
    public static func form(
        _ parameters: [String: Any], arrays: ParameterEncoding.ArrayStyle = .brackets,
        bools: ParameterEncoding.BoolStyle = .numeric
    ) -> RequestBody {
        var writer = QueryWriter(.form(arrays: arrays, bools: bools))
        do {
            try writer.write(parameters)
            return .formData(Data(writer.bytes))
        } catch let problem as ParameterProblem {
            return RequestBody(
                content: .unencodable("parameter '\(problem.key)' cannot be encoded: \(problem.reason)"),
                contentType: formContentType)
        } catch {
            return RequestBody(content: .unencodable("\(error)"), contentType: formContentType)
        }
    }

    /// An `application/x-www-form-urlencoded` body from an `Encodable` value, written by `encoder`; the
    /// endpoint's ``SwiftyServiceProtocol/parameters`` then go to the query (Moya's composite parameters).
    public static func form(_ value: some Encodable, encoder: URLEncodedFormEncoder = URLEncodedFormEncoder())
        -> RequestBody
    {
        do {
            return .formData(Data(try encoder.bytes(value)))
        } catch {
            return RequestBody(
                content: .unencodable(UnencodableValue.reason(of: error)), contentType: formContentType)
        }
    }

    static let formContentType = "application/x-www-form-urlencoded; charset=utf-8"

    private static func formData(_ data: Data) -> RequestBody {
        RequestBody(content: .data(data), contentType: formContentType)
    }
}
