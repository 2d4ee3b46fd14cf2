import Testing

@testable import SwiftyService

/// The byte sets are bit masks written as hexadecimal literals; each is checked here, byte by byte, against
/// its grammar as the RFCs spell it.
@Suite struct ASCIISetTests {
    static let alphanumerics = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

    @Test(arguments: [
        ("unreserved (RFC 3986 §2.3)", ASCIISet.unreserved, alphanumerics + "-._~"),
        ("segment, pchar (RFC 3986 §3.3)", ASCIISet.segment, alphanumerics + "-._~" + "!$&'()*+,;=" + ":@"),
        ("path", ASCIISet.path, alphanumerics + "-._~" + "!$&'()*+,;=" + ":@" + "/"),
        ("tchar (RFC 9110 §5.6.2)", ASCIISet.token, alphanumerics + "!#$%&'*+-.^_`|~"),
    ])
    func theSetHoldsExactlyItsGrammarsBytes(name: String, set: ASCIISet, grammar: String) {
        let expected = Set(grammar.utf8)
        for byte in UInt8.min...UInt8.max {
            #expect(set.contains(byte) == expected.contains(byte), "\(name): byte \(byte)")
        }
    }

    @Test func percentEncodingKeepsOnlyTheSetAndWritesUpperCaseHex() {
        #expect(PercentEncoding.encode("a b+c/é~", keeping: .unreserved) == "a%20b%2Bc%2F%C3%A9~")
        #expect(PercentEncoding.encode("a b/é", keeping: .path) == "a%20b/%C3%A9")
        #expect(PercentEncoding.encode("plain-text_1.0", keeping: .unreserved) == "plain-text_1.0")
    }
}
