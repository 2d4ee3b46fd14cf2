import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Random `Encodable` values against the dictionaries they stand for: the same query and form bytes through
/// every path, in every array and bool style (the fuzz target `encodable-query` checks the same rule).
@Suite struct EncodableParameterPropertyTests {
    let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!)

    static func randomBytes(using generator: inout SystemRandomNumberGenerator) -> Data {
        // Small alphabet bytes make keys collide and values nest, where the rules are easiest to break.
        let alphabet: [UInt8] = Array(0...12) + Array("ab é[]%+&=".utf8) + [0xFF, 0x80, 0x7F]
        return Data(
            (0..<Int.random(in: 0...200, using: &generator)).map { _ in
                alphabet.randomElement(using: &generator)!
            })
    }

    @Test func randomValuesWriteTheirDictionarysBytesThroughTheEncoder() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            var input = FuzzInput(Self.randomBytes(using: &generator))
            let value = input.encodableObject(depth: 3)
            for arrays in [ParameterEncoding.ArrayStyle.brackets, .noBrackets, .indexed] {
                for bools in [ParameterEncoding.BoolStyle.numeric, .literal] {
                    try FuzzTargets.checkEncodable(value, arrays: arrays, bools: bools)
                }
            }
        }
    }

    @Test func randomValuesBuildTheirDictionarysQueryAndFormThroughAnEndpoint() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            var input = FuzzInput(Self.randomBytes(using: &generator))
            let value = input.encodableObject(depth: 3)
            let query = ParameterEncoding.query(arrays: .indexed, bools: .literal)
            let fromValue = try? TestEndpoint(realm, "q", encoding: query).with(.encoding(value)).urlRequest()
            let fromDictionary = try? TestEndpoint(realm, "q", encoding: query).with(value.dictionary)
                .urlRequest()
            #expect(fromValue?.url == fromDictionary?.url, "\(value)")
            #expect((fromValue == nil) == (fromDictionary == nil), "\(value)")
            let form = ParameterEncoding.form(arrays: .noBrackets)
            let formFromValue = try? TestEndpoint(realm, "f", method: .post, encoding: form).with(
                .encoding(value)
            )
            .urlRequest()
            let formFromDictionary = try? TestEndpoint(realm, "f", method: .post, encoding: form)
                .with(value.dictionary).urlRequest()
            #expect(formFromValue?.httpBody == formFromDictionary?.httpBody, "\(value)")
            let encoded = try? URLEncodedFormEncoder(arrays: .noBrackets).encode(value)
            #expect(encoded.map { Data($0.utf8) } == formFromDictionary?.httpBody ?? nil, "\(value)")
        }
    }
}
