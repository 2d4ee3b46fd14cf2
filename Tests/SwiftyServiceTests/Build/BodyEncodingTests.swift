import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite struct BodyEncodingTests {
    let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!)

    func jsonBody(_ parameters: [String: any Sendable]) throws -> Data {
        try #require(TestEndpoint(realm, "x", method: .post, parameters: parameters).urlRequest().httpBody)
    }

    func foundationJSON(_ object: [String: Any]) throws -> Data {
        try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
    }

    @Test func theJSONBodyIsWhatJSONSerializationWritesWithSortedKeys() throws {
        let samples: [[String: any Sendable]] = [
            ["name": "Ann", "age": 42, "admin": true],
            ["quote": "\"hi\"\\ /path\n\t\r\u{08}\u{0C}\u{01}\u{1F}", "emoji": "😀 é 日本"],
            [
                "nested": [
                    "b": [1, 2, ["c": NSNull()] as [String: any Sendable]] as [any Sendable], "a": [String](),
                ]
                    as [String: any Sendable], "empty": [String: Int](),
            ],
            ["big": Int64.max, "small": Int64.min, "neg": -1, "zero": 0, "u": UInt64.max],
            ["bools": [true, false], "null": NSNull()],
        ]
        for sample in samples {
            #expect(try jsonBody(sample) == foundationJSON(sample), "\(sample)")
        }
    }

    @Test func numbersRoundTripToTheSameValues() throws {
        let doubles: [Double] = [
            0.1, 1.5, -2.25, 3.0, 1e-7, 6.02214076e23, 123456789.125, -0.5, 1e300, .ulpOfOne,
        ]
        let body = try jsonBody(["values": doubles])
        let parsed = try JSONSerialization.jsonObject(with: body) as! [String: [Double]]
        #expect(parsed["values"] == doubles)
    }

    @Test func randomDictionariesMatchFoundationAfterParsing() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<300 {
            let value = RandomJSON.object(depth: 3, using: &generator)
            let ours = try JSONSerialization.jsonObject(with: try jsonBody(value)) as! NSDictionary
            let theirs = try JSONSerialization.jsonObject(with: try foundationJSON(value)) as! NSDictionary
            #expect(ours == theirs)
        }
    }

    @Test func anOptionalInsideTheJSONBodyIsNullOrItsValue() throws {
        let missing: String? = nil
        #expect(try jsonBody(["a": missing, "b": Optional("x")]) == Data(#"{"a":null,"b":"x"}"#.utf8))
    }

    @Test func aFormBodyIsURLEncodedWithItsContentType() throws {
        let request = try TestEndpoint(
            realm, "x", method: .post, parameters: ["b": "x y+z", "a": [1, 2]],
            encoding: .form
        ).urlRequest()
        #expect(request.httpBody == Data("a%5B%5D=1&a%5B%5D=2&b=x%20y%2Bz".utf8))
        #expect(
            request.value(forHTTPHeaderField: "Content-Type")
                == "application/x-www-form-urlencoded; charset=utf-8")
        #expect(request.url?.query == nil)
    }

    @Test func anEncodableBodyUsesTheChosenEncoder() throws {
        struct Payload: Encodable { let userName: String }
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        let request = try TestEndpoint(
            realm, "x", method: .post, body: .json(Payload(userName: "ann"), encoder: encoder)
        )
        .urlRequest()
        #expect(request.httpBody == Data(#"{"user_name":"ann"}"#.utf8))
        #expect(request.value(forHTTPHeaderField: "Content-Type") == "application/json")
    }

    @Test func rawDataIsSentAsIsWithItsContentType() throws {
        let bytes = Data([0, 1, 2, 255])
        let plain = try TestEndpoint(realm, "x", method: .put, body: .data(bytes)).urlRequest()
        #expect(plain.httpBody == bytes)
        #expect(plain.value(forHTTPHeaderField: "Content-Type") == "application/octet-stream")
        let typed = try TestEndpoint(realm, "x", method: .put, body: .data(bytes, contentType: "image/png"))
            .urlRequest()
        #expect(typed.value(forHTTPHeaderField: "Content-Type") == "image/png")
    }

    @Test func aContentTypeFromTheRealmOrEndpointWinsOverTheBodysOwn() throws {
        realm.addHeader("content-type", withValue: "application/vnd.api+json")
        let fromRealm = try TestEndpoint(realm, "x", method: .post, parameters: ["a": 1]).urlRequest()
        #expect(fromRealm.value(forHTTPHeaderField: "Content-Type") == "application/vnd.api+json")
        let fromEndpoint = try TestEndpoint(
            realm, "x", method: .post, body: .data(Data()),
            headers: ["Content-Type": "text/plain"]
        ).urlRequest()
        #expect(fromEndpoint.value(forHTTPHeaderField: "Content-Type") == "text/plain")
    }

    @Test func withABodyOfItsOwnTheParametersGoToTheQuery() throws {
        let request = try TestEndpoint(
            realm, "x", method: .post, parameters: ["page": 2], body: .data(Data("raw".utf8))
        )
        .urlRequest()
        #expect(request.url?.query == "page=2")
        #expect(request.httpBody == Data("raw".utf8))
    }

    @Test func aBodyAndParametersThatBothWantTheBodyAreRefused() throws {
        for encoding in [ParameterEncoding.json, .form] {
            let endpoint = TestEndpoint(
                realm, "x", method: .post, parameters: ["a": 1], encoding: encoding,
                body: .data(Data()))
            #expect {
                try endpoint.urlRequest()
            } throws: { error in
                guard case let ServiceError.invalidRequest(reason, _, _) = error,
                    case .conflictingBody = reason
                else { return false }
                return true
            }
        }
    }

    @Test func noParametersMeansNoBodyAndNoContentType() throws {
        let request = try TestEndpoint(realm, "x", method: .post).urlRequest()
        #expect(request.httpBody == nil)
        #expect(request.value(forHTTPHeaderField: "Content-Type") == nil)
        let empty = try TestEndpoint(realm, "x", method: .post, parameters: [:]).urlRequest()
        #expect(empty.httpBody == Data("{}".utf8))
    }
}

/// Random JSON-able values, for comparing the JSON writer with Foundation's.
enum RandomJSON {
    static func object(depth: Int, using generator: inout SystemRandomNumberGenerator) -> [String:
        any Sendable]
    {
        var result: [String: any Sendable] = [:]
        for _ in 0..<Int.random(in: 0...5, using: &generator) {
            result[string(using: &generator)] = value(depth: depth - 1, using: &generator)
        }
        return result
    }

    static func value(depth: Int, using generator: inout SystemRandomNumberGenerator) -> any Sendable {
        switch Int.random(in: 0..<(depth > 0 ? 8 : 6), using: &generator) {
        case 0: return string(using: &generator)
        case 1: return Int.random(in: Int.min...Int.max, using: &generator)
        case 2: return Double.random(in: -1e12...1e12, using: &generator)
        case 3: return Bool.random(using: &generator)
        case 4: return NSNull()
        case 5: return Double(Int.random(in: -1000...1000, using: &generator)) / 8
        case 6:
            return (0..<Int.random(in: 0...4, using: &generator)).map { _ in
                value(depth: depth - 1, using: &generator)
            }
        default: return object(depth: depth - 1, using: &generator)
        }
    }

    static func string(using generator: inout SystemRandomNumberGenerator) -> String {
        let alphabet = Array("abcXYZ019 _-\"\\/\n\t\u{01}\u{1F}é日😀+&=?#%")
        return String(
            (0..<Int.random(in: 0...12, using: &generator)).map { _ in
                alphabet.randomElement(using: &generator)!
            })
    }
}
