/// A set of ASCII bytes as two 64-bit masks. Membership is a shift and a mask: these sets are tested for
/// every byte of every URL and header, where a `switch` over ranges behind a predicate closure costs a call
/// per byte.
struct ASCIISet: Sendable {
    /// Bytes 0–63.
    let low: UInt64
    /// Bytes 64–127.
    let high: UInt64

    @inline(__always)
    func contains(_ byte: UInt8) -> Bool {
        if byte < 64 { return (low >> UInt64(byte)) & 1 != 0 }
        if byte < 128 { return (high >> UInt64(byte &- 64)) & 1 != 0 }
        return false
    }

    /// Whether every byte of `string` is in the set.
    @inline(__always)
    func containsAll(_ string: some StringProtocol) -> Bool {
        string.utf8.withContiguousStorageIfAvailable { $0.allSatisfy(contains) }
            ?? string.utf8.allSatisfy(contains)
    }

    /// `ALPHA / DIGIT / "-" / "." / "_" / "~"`: the only bytes a query key or value keeps as they are.
    static var unreserved: ASCIISet { ASCIISet(low: 0x03FF_6000_0000_0000, high: 0x47FF_FFFE_87FF_FFFE) }
    /// `pchar` without `/`: what one path segment keeps (unreserved, sub-delims, `:` and `@`).
    static var segment: ASCIISet { ASCIISet(low: 0x2FFF_7FD2_0000_0000, high: 0x47FF_FFFE_87FF_FFFF) }
    /// A path's characters: a segment's and `/`.
    static var path: ASCIISet { ASCIISet(low: 0x2FFF_FFD2_0000_0000, high: 0x47FF_FFFE_87FF_FFFF) }
    /// RFC 9110 §5.6.2 `tchar`: header names and methods.
    static var token: ASCIISet { ASCIISet(low: 0x03FF_6CFA_0000_0000, high: 0x57FF_FFFF_C7FF_FFFE) }
}

/// RFC 3986 percent-encoding into a byte buffer.
enum PercentEncoding {
    /// Whether a query key or value keeps `byte` as it is.
    static func isUnreserved(_ byte: UInt8) -> Bool { ASCIISet.unreserved.contains(byte) }

    /// Appends `string`, percent-encoding every byte not in `keep`.
    static func append(_ string: some StringProtocol, to buffer: inout [UInt8], keeping keep: ASCIISet) {
        let done: Void? = string.utf8.withContiguousStorageIfAvailable {
            append(bytes: $0, to: &buffer, keeping: keep)
        }
        if done == nil { append(bytes: string.utf8, to: &buffer, keeping: keep) }
    }

    @inline(__always)
    private static func append(
        bytes: some Collection<UInt8>, to buffer: inout [UInt8], keeping keep: ASCIISet
    ) {
        for byte in bytes {
            if keep.contains(byte) {
                buffer.append(byte)
            } else {
                buffer.append(UInt8(ascii: "%"))
                buffer.append(hexDigit(byte >> 4))
                buffer.append(hexDigit(byte & 0x0F))
            }
        }
    }

    @inline(__always)
    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "A") + nibble - 10
    }

    /// The string encoded, or the string itself when nothing needs encoding (the usual case).
    static func encode(_ string: String, keeping keep: ASCIISet) -> String {
        if keep.containsAll(string) { return string }
        var buffer: [UInt8] = []
        buffer.reserveCapacity(string.utf8.count + 16)
        append(string, to: &buffer, keeping: keep)
        return String(decoding: buffer, as: UTF8.self)
    }
}
