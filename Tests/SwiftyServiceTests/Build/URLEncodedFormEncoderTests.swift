import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

struct SearchFilter: Encodable, Sendable {
    enum Sort: String, Encodable, Sendable { case newest, oldest }
    struct Range: Encodable, Sendable {
        let from: Int
        let to: Int?
    }

    var q = "a b+c/é"
    var page = 2
    var verbose = true
    var tags = ["x", "y"]
    var sort = Sort.newest
    var range = Range(from: 1, to: nil)
    var missing: String? = nil
    var ratio = 2.5
}

/// `encodeNil` written on purpose, which a synthesized conformance never does.
struct ExplicitNull: Encodable {
    enum CodingKeys: String, CodingKey { case cleared }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeNil(forKey: .cleared)
    }
}

@Suite struct URLEncodedFormEncoderTests {
    let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!)

    @Test(
        "Fields are sorted at every level, nested as brackets, percent-encoded per RFC 3986; nil is left out")
    func writesWhatADictionaryWrites() throws {
        let text = try URLEncodedFormEncoder().encode(SearchFilter())
        #expect(
            text
                == "page=2&q=a%20b%2Bc%2F%C3%A9&range%5Bfrom%5D=1&ratio=2.5&sort=newest&tags%5B%5D=x&tags%5B%5D=y&verbose=1"
        )
        let dictionary: [String: Any] = [
            "q": "a b+c/é", "page": 2, "verbose": true, "tags": ["x", "y"], "sort": "newest",
            "range": ["from": 1, "to": String?.none as Any], "ratio": 2.5,
        ]
        #expect(text == String(decoding: try RequestBodyBytes.form(dictionary), as: UTF8.self))
    }

    @Test func arrayAndBoolStylesAreTheParameterEncodingsOnes() throws {
        let value = SearchFilter()
        let indexed = try URLEncodedFormEncoder(arrays: .indexed, bools: .literal).encode(value)
        #expect(indexed.contains("tags%5B0%5D=x&tags%5B1%5D=y") && indexed.hasSuffix("verbose=true"))
        #expect(try URLEncodedFormEncoder(arrays: .noBrackets).encode(value).contains("tags=x&tags=y"))
    }

    @Test("A subclass's superEncoder() puts the superclass's fields under super, as JSONEncoder does")
    func superclassFieldsGoUnderSuper() throws {
        class Base: Encodable {
            var id = 1
        }
        final class Child: Base {
            enum CodingKeys: String, CodingKey { case name }
            var name = "x"
            override func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(name, forKey: .name)
                try super.encode(to: container.superEncoder())
            }
        }
        #expect(try URLEncodedFormEncoder().encode(Child()) == "name=x&super%5Bid%5D=1")
    }

    @Test func anExplicitNullIsAnEmptyValue() throws {
        #expect(try URLEncodedFormEncoder().encode(ExplicitNull()) == "cleared=")
    }

    @Test(
        "Dates: ISO 8601 by default, seconds or milliseconds since 1970, or a closure; data: Base64 or a closure"
    )
    func dateAndDataStrategies() throws {
        struct Stamped: Encodable {
            let at = Date(timeIntervalSince1970: 1_796_117_400.5)
            let blob = Data([0xFB, 0xFF, 0x00])
            let link = URL(string: "https://example.com/a?b=c")!
            let price = Decimal(string: "12.50")!
        }
        #expect(
            try URLEncodedFormEncoder().encode(Stamped())
                == "at=2026-12-01T09%3A30%3A00Z&blob=%2B%2F8A&link=https%3A%2F%2Fexample.com%2Fa%3Fb%3Dc&price=12.5"
        )
        let seconds = try URLEncodedFormEncoder(dates: .secondsSince1970, data: .custom { "\($0.count)" })
            .encode(Stamped())
        #expect(seconds.hasPrefix("at=1796117400.5&blob=3&"))
        #expect(
            try URLEncodedFormEncoder(dates: .millisecondsSince1970).encode(Stamped()).hasPrefix(
                "at=1796117400500&"))
        #expect(
            try URLEncodedFormEncoder(dates: .custom { _ in "today" }).encode(Stamped()).hasPrefix(
                "at=today&"))
    }

    @Test func aValueThatIsNotASetOfNamedFieldsIsRefused() {
        #expect(throws: EncodingError.self) { try URLEncodedFormEncoder().encode([1, 2]) }
        #expect(throws: EncodingError.self) { try URLEncodedFormEncoder().encode("text") }
        #expect(throws: EncodingError.self) { try URLEncodedFormEncoder().encode(["x": Double.nan]) }
    }

    @Test func anEndpointTakesAnEncodableAsItsParametersInEveryEncoding() throws {
        let filter = SearchFilter()
        let query = try TestEndpoint(realm, "search", parameters: [:]).with(.encoding(filter)).urlRequest()
        #expect(query.url?.query == (try URLEncodedFormEncoder().encode(filter)))
        let form = try TestEndpoint(realm, "search", method: .post, encoding: .form(bools: .literal))
            .with(.encoding(filter)).urlRequest()
        #expect(form.httpBody == Data(try URLEncodedFormEncoder(bools: .literal).encode(filter).utf8))
        let json = try TestEndpoint(realm, "search", method: .post).with(.encoding(filter)).urlRequest()
        let object = try #require(try JSONSerialization.jsonObject(with: json.httpBody!) as? [String: Any])
        #expect(object["page"] as? Int == 2 && (object["range"] as? [String: Any])?["from"] as? Int == 1)
    }

    @Test("A value that cannot be encoded fails the request before anything is sent, naming its key")
    func unencodableValuesFailTheRequest() throws {
        struct Broken: Encodable {
            struct Inner: Encodable {
                func encode(to encoder: any Encoder) throws {
                    throw EncodingError.invalidValue(
                        0, .init(codingPath: encoder.codingPath, debugDescription: "no can do"))
                }
            }
            let filter = ["since": Inner()]
        }
        let error = #expect(throws: ServiceError.self) {
            try TestEndpoint(realm, "search", parameters: [:]).with(.encoding(Broken())).urlRequest()
        }
        guard case let .invalidRequest(.unencodableParameter(key, reason), _, _)? = error else {
            Issue.record("expected unencodableParameter, got \(String(describing: error))")
            return
        }
        #expect(key == "filter[since]" && reason == "no can do")
    }

    @Test(
        "A form body goes with query parameters (Moya's composite parameters), from a dictionary or an Encodable"
    )
    func formBodyWithQueryParameters() throws {
        let fromValue = try TestEndpoint(
            realm, "things", method: .post, parameters: ["page": 2],
            body: .form(SearchFilter.Range(from: 3, to: 4))
        ).urlRequest()
        #expect(fromValue.url?.query == "page=2")
        #expect(fromValue.httpBody == Data("from=3&to=4".utf8))
        #expect(
            fromValue.value(forHTTPHeaderField: "Content-Type")
                == "application/x-www-form-urlencoded; charset=utf-8")
        let fromDictionary = try TestEndpoint(
            realm, "things", method: .put, parameters: ["page": 2],
            body: .form(["ids": [1, 2], "ok": true], arrays: .indexed)
        ).urlRequest()
        #expect(fromDictionary.httpBody == Data("ids%5B0%5D=1&ids%5B1%5D=2&ok=1".utf8))
        #expect(fromDictionary.url?.query == "page=2")
        let broken = #expect(throws: ServiceError.self) {
            try TestEndpoint(realm, "things", method: .post, body: .form(["x": Float.infinity])).urlRequest()
        }
        #expect(broken?.description.contains("parameter 'x' cannot be encoded") == true)
    }
}

/// The bytes of a form body made from a dictionary, as an endpoint sends it.
enum RequestBodyBytes {
    static func form(_ parameters: [String: Any]) throws -> Data {
        let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!)
        return try TestEndpoint(realm, "x", method: .post, encoding: .form).with(parameters).urlRequest()
            .httpBody ?? Data()
    }
}

extension TestEndpoint {
    /// The same endpoint with these parameters, which need not be Sendable (`TestEndpoint` keeps Sendable values).
    func with(_ parameters: [String: Any]) -> ParametersEndpoint {
        ParametersEndpoint(base: self, parameters: ParametersBox(parameters))
    }
}

/// Parameters held as they were given; only read by the request being built in the test.
final class ParametersBox: @unchecked Sendable {
    let value: [String: Any]
    init(_ value: [String: Any]) { self.value = value }
}

/// A ``TestEndpoint`` whose parameters are any dictionary.
struct ParametersEndpoint: SwiftyServiceProtocol {
    let base: TestEndpoint
    let box: ParametersBox

    init(base: TestEndpoint, parameters: ParametersBox) {
        self.base = base
        box = parameters
    }

    var realm: ServiceRealm { base.realm }
    var path: String { base.path }
    var method: HTTPMethod { base.method }
    var parameters: [String: Any]? { box.value }
    var parameterEncoding: ParameterEncoding { base.parameterEncoding }
    var body: RequestBody? { base.body }
}
