/// An endpoint's `path` as it goes into the URL: plain text, percent-encoded segment by segment, with the
/// values written with `\(pathSegment:)` kept as exactly one segment each.
///
/// A `.` or `..` segment is refused, in any spelling a server may decode to one (`%2E%2E`): it would move
/// the request out of its base path.
enum PathEncoding {
    /// Brackets a value that `appendInterpolation(pathSegment:)` has encoded already. Unicode noncharacters:
    /// never part of interchanged text, and percent-encoded like any other when they come from outside.
    static let valueStart = Unicode.Scalar(0xFDD0)!
    static let valueEnd = Unicode.Scalar(0xFDD1)!

    /// A value as exactly one path segment: `/`, `?`, `#`, `%` and everything else a segment cannot hold
    /// percent-encoded; `nil` for an empty value, `.` and `..`, which no encoding keeps in one segment.
    static func segment(_ value: String) -> String? {
        guard !value.isEmpty, value != ".", value != ".." else { return nil }
        return PercentEncoding.encode(value, keeping: .segment)
    }

    /// The path percent-encoded, leading slashes dropped; or why it cannot be sent.
    static func encode(_ path: String) -> Result<String, Problem> {
        if let plain = plain(path) { return .success(plain) }
        var trimmed = Substring(path)
        while trimmed.first == "/" { trimmed = trimmed.dropFirst() }
        // The usual path: nothing to encode, no value markers (they are not ASCII), no dot at all.
        if ASCIISet.path.containsAll(trimmed) {
            guard trimmed.utf8.contains(UInt8(ascii: ".")) else { return .success(String(trimmed)) }
            return hasDotSegment(trimmed)
                ? .failure(Problem(.dotSegment(path: readable(path)))) : .success(String(trimmed))
        }
        var encoded: [UInt8] = []
        encoded.reserveCapacity(trimmed.utf8.count + 16)
        // Scalars, not Characters: a marker must be found even where a neighbour would join it into one grapheme.
        var rest = trimmed.unicodeScalars[...]
        while let start = rest.firstIndex(of: valueStart) {
            PercentEncoding.append(String(rest[..<start]), to: &encoded, keeping: .path)
            let afterStart = rest.index(after: start)
            guard let end = rest[afterStart...].firstIndex(of: valueEnd) else {
                rest = rest[start...]
                break
            }
            let value = String(rest[afterStart..<end])
            let decoded = value.removingPercentEncoding ?? value
            if decoded.isEmpty {
                return .failure(
                    Problem(
                        .invalidIdentifier(
                            "a \\(pathSegment:) value in the path '\(readable(path))' is empty")))
            }
            if decoded == "." || decoded == ".." {
                return .failure(Problem(.dotSegment(path: readable(path))))
            }
            // Only what `segment(_:)` writes passes as a value: anything else did not come from the marker API.
            guard segment(decoded) == value else {
                return .failure(
                    Problem(
                        .invalidIdentifier(
                            "the path '\(readable(path))' holds a segment marker that \\(pathSegment:) did not write"
                        )))
            }
            encoded.append(contentsOf: value.utf8)
            rest = rest[rest.index(after: end)...]
        }
        PercentEncoding.append(String(rest), to: &encoded, keeping: .path)
        let result = String(decoding: encoded, as: UTF8.self)
        return hasDotSegment(Substring(result))
            ? .failure(Problem(.dotSegment(path: readable(path)))) : .success(result)
    }

    /// The usual path as it goes, read in one pass over its bytes: nothing to encode, no value markers, no
    /// `.` or `..` segment, leading slashes dropped; `nil` when it needs more than that (the generic reads of a
    /// substring cost a request more than half a microsecond).
    private static func plain(_ path: String) -> String? {
        var path = path
        let start = path.withUTF8 { bytes -> Int? in
            var start = 0
            while start < bytes.count, bytes[start] == UInt8(ascii: "/") { start += 1 }
            var segmentStart = start
            for index in start...bytes.count {
                let byte = index < bytes.count ? bytes[index] : UInt8(ascii: "/")
                if byte == UInt8(ascii: "/") {
                    let length = index - segmentStart
                    if (length == 1 || length == 2) && bytes[segmentStart] == UInt8(ascii: ".")
                        && bytes[index - 1] == UInt8(ascii: ".")
                    {
                        return nil
                    }
                    segmentStart = index + 1
                } else if !ASCIISet.path.contains(byte) {
                    return nil
                }
            }
            return start
        }
        guard let start else { return nil }
        return start == 0 ? path : String(path[path.utf8.index(path.utf8.startIndex, offsetBy: start)...])
    }

    /// Why a path cannot be sent.
    struct Problem: Error {
        let reason: ServiceError.InvalidRequestReason
        init(_ reason: ServiceError.InvalidRequestReason) { self.reason = reason }
    }

    /// The path as error messages show it: without the markers around its values.
    static func readable(_ path: String) -> String {
        String(String.UnicodeScalarView(path.unicodeScalars.filter { $0 != valueStart && $0 != valueEnd }))
    }

    private static func hasDotSegment(_ encodedPath: Substring) -> Bool {
        // Segment by segment in place: splitting made an array per request.
        let bytes = encodedPath.utf8
        var start = bytes.startIndex
        while true {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: "/")) ?? bytes.endIndex
            if isDotSegment(encodedPath[start..<end]) { return true }
            guard end < bytes.endIndex else { return false }
            start = bytes.index(after: end)
        }
    }

    /// `.` or `..`, also written `%2E` (RFC 3986 §2.3: the same character, and servers decode it first).
    private static func isDotSegment(_ segment: Substring) -> Bool {
        guard !segment.isEmpty, segment.utf8.count <= 6 else { return false }
        var dots = 0
        var bytes = segment.utf8[...]
        while let byte = bytes.first {
            if byte == UInt8(ascii: ".") {
                bytes = bytes.dropFirst()
            } else if bytes.starts(with: "%2E".utf8) || bytes.starts(with: "%2e".utf8) {
                bytes = bytes.dropFirst(3)
            } else {
                return false
            }
            dots += 1
        }
        return dots <= 2
    }
}

extension DefaultStringInterpolation {
    /// Writes `value` into an endpoint's `path` as exactly one segment, whatever it holds: use it for values
    /// from outside, `"users/\(pathSegment: name)/posts"`.
    ///
    /// `/`, `?`, `#` and `%` are percent-encoded, so the value can neither add segments nor end the path;
    /// an empty value, `.` and `..` make the request fail with ``ServiceError/invalidRequest(_:method:url:)``
    /// before anything is sent. The string holds markers that only the request builder reads: use it as a
    /// `path`, not as text to show.
    public mutating func appendInterpolation(pathSegment value: some CustomStringConvertible) {
        let text = value.description
        appendLiteral(String(Character(PathEncoding.valueStart)))
        // An empty value stays empty between the markers, and so does `.` or `..` left as it is: the builder
        // refuses both.
        appendLiteral(PathEncoding.segment(text) ?? (text.isEmpty ? "" : text))
        appendLiteral(String(Character(PathEncoding.valueEnd)))
    }
}
