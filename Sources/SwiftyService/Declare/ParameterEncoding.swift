import Foundation

/// Where an endpoint's parameters go and how they are written.
///
/// `.automatic` puts them in the query string for GET, HEAD and DELETE and in a JSON body otherwise.
/// Query and form encodings sort keys, percent-encode per RFC 3986 (space is `%20`, `+` is `%2B`), and
/// write arrays and bools in the chosen style.
public struct ParameterEncoding: Sendable, Hashable {
    /// How arrays are written in a query or form: `ids[]=1&ids[]=2`, `ids=1&ids=2` or `ids[0]=1&ids[1]=2`.
    public enum ArrayStyle: Sendable, Hashable {
        /// `ids[]=1&ids[]=2` (Rails, PHP, Alamofire's default).
        case brackets
        /// `ids=1&ids=2`.
        case noBrackets
        /// `ids[0]=1&ids[1]=2`.
        case indexed
    }

    /// How bools are written in a query or form: `1`/`0` or `true`/`false`.
    public enum BoolStyle: Sendable, Hashable {
        /// `1` and `0` (Alamofire's default).
        case numeric
        /// `true` and `false`.
        case literal
    }

    enum Destination: Sendable, Hashable {
        case automatic, query, form, json
    }

    let destination: Destination
    /// How arrays are written in a query or form.
    public let arrays: ArrayStyle
    /// How bools are written in a query or form.
    public let bools: BoolStyle

    private init(_ destination: Destination, arrays: ArrayStyle = .brackets, bools: BoolStyle = .numeric) {
        self.destination = destination
        self.arrays = arrays
        self.bools = bools
    }

    /// Query string for GET, HEAD and DELETE, JSON body otherwise.
    public static let automatic = ParameterEncoding(.automatic)
    /// Always the query string.
    public static let query = ParameterEncoding(.query)
    /// An `application/x-www-form-urlencoded` body.
    public static let form = ParameterEncoding(.form)
    /// An `application/json` body.
    public static let json = ParameterEncoding(.json)

    /// `.automatic`, with these styles for the query string.
    public static func automatic(arrays: ArrayStyle = .brackets, bools: BoolStyle = .numeric) -> Self {
        Self(.automatic, arrays: arrays, bools: bools)
    }

    /// The query string, with these styles.
    public static func query(arrays: ArrayStyle = .brackets, bools: BoolStyle = .numeric) -> Self {
        Self(.query, arrays: arrays, bools: bools)
    }

    /// A form body, with these styles.
    public static func form(arrays: ArrayStyle = .brackets, bools: BoolStyle = .numeric) -> Self {
        Self(.form, arrays: arrays, bools: bools)
    }
}

/// A `JSONEncoder` that writes keys in sorted order; made per use, as encoders are not shareable on
/// every platform.
func sortedKeysEncoder() -> JSONEncoder {
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    return encoder
}
