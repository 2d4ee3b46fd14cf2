import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite struct URLBuildingTests {
    let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com/v1")!)

    func url(
        _ path: String, _ parameters: [String: any Sendable]? = nil, method: HTTPMethod = .get,
        encoding: ParameterEncoding = .automatic
    ) throws -> String {
        try TestEndpoint(realm, path, method: method, parameters: parameters, encoding: encoding)
            .urlRequest().url!.absoluteString
    }

    @Test func theBaseURLAndThePathAreJoinedByExactlyOneSlash() throws {
        #expect(try url("user/info") == "https://api.example.com/v1/user/info")
        #expect(try url("/user/info") == "https://api.example.com/v1/user/info")
        realm.setBaseURL(URL(string: "https://api.example.com/v1/")!)
        #expect(try url("//user/info") == "https://api.example.com/v1/user/info")
    }

    @Test func anEmptyPathIsTheBaseURLItselfTrailingSlashIncluded() throws {
        #expect(try url("") == "https://api.example.com/v1")
        realm.setBaseURL(URL(string: "https://api.example.com/v1/")!)
        #expect(try url("") == "https://api.example.com/v1/")
        #expect(try url("", ["a": 1]) == "https://api.example.com/v1/?a=1")
    }

    @Test func theBaseURLsOwnQueryIsKeptBeforeTheParameters() throws {
        realm.setBaseURL(URL(string: "https://api.example.com/v1?key=abc#fragment")!)
        #expect(try url("items", ["page": 2]) == "https://api.example.com/v1/items?key=abc&page=2")
        #expect(try url("items") == "https://api.example.com/v1/items?key=abc")
    }

    @Test func pathCharactersThatAURLCannotHoldArePercentEncoded() throws {
        #expect(try url("files/my report.pdf") == "https://api.example.com/v1/files/my%20report.pdf")
        #expect(try url("search?q=1") == "https://api.example.com/v1/search%3Fq=1")
        #expect(try url("a#b/100%") == "https://api.example.com/v1/a%23b/100%25")
        #expect(try url("café/ü") == "https://api.example.com/v1/caf%C3%A9/%C3%BC")
        #expect(try url("users/me:profile@x") == "https://api.example.com/v1/users/me:profile@x")
    }

    @Test func queryKeysAreSortedSoOneEndpointAlwaysBuildsOneURL() throws {
        let parameters: [String: any Sendable] = ["zeta": 1, "alpha": "a", "mid": true, "beta": 2.5]
        let first = try url("q", parameters)
        #expect(first == "https://api.example.com/v1/q?alpha=a&beta=2.5&mid=1&zeta=1")
        for _ in 0..<20 { #expect(try url("q", parameters) == first) }
    }

    @Test func queryValuesAreEscapedPerRFC3986() throws {
        #expect(
            try url("q", ["q": "a b+c&d=e/f?g"]) == "https://api.example.com/v1/q?q=a%20b%2Bc%26d%3De%2Ff%3Fg"
        )
        #expect(
            try url("q", ["naïve key": "日本"])
                == "https://api.example.com/v1/q?na%C3%AFve%20key=%E6%97%A5%E6%9C%AC")
        #expect(try url("q", ["safe": "AZaz09-._~"]) == "https://api.example.com/v1/q?safe=AZaz09-._~")
    }

    @Test func arraysAreWrittenInTheChosenStyle() throws {
        let ids: [String: any Sendable] = ["ids": [1, 2]]
        #expect(try url("q", ids) == "https://api.example.com/v1/q?ids%5B%5D=1&ids%5B%5D=2")
        #expect(
            try url("q", ids, encoding: .query(arrays: .noBrackets))
                == "https://api.example.com/v1/q?ids=1&ids=2")
        #expect(
            try url("q", ids, encoding: .query(arrays: .indexed))
                == "https://api.example.com/v1/q?ids%5B0%5D=1&ids%5B1%5D=2")
        #expect(
            try url("q", ids, encoding: .automatic(arrays: .indexed))
                == "https://api.example.com/v1/q?ids%5B0%5D=1&ids%5B1%5D=2")
    }

    @Test func boolsAreWrittenInTheChosenStyle() throws {
        let flags: [String: any Sendable] = ["on": true, "off": false]
        #expect(try url("q", flags) == "https://api.example.com/v1/q?off=0&on=1")
        #expect(
            try url("q", flags, encoding: .query(bools: .literal))
                == "https://api.example.com/v1/q?off=false&on=true")
    }

    @Test func nestedDictionariesUseBracketedKeysInSortedOrder() throws {
        let filter: [String: any Sendable] = ["filter": ["since": "2024", "author": "me"]]
        #expect(
            try url("q", filter)
                == "https://api.example.com/v1/q?filter%5Bauthor%5D=me&filter%5Bsince%5D=2024")
    }

    @Test func nilValuesAreLeftOutAndNullsAreEmpty() throws {
        let missing: Int? = nil
        let parameters: [String: any Sendable] = ["a": missing, "b": NSNull(), "c": Optional(3)]
        #expect(try url("q", parameters) == "https://api.example.com/v1/q?b=&c=3")
    }

    @Test func numbersOfEveryKindAreWrittenPlainly() throws {
        let parameters: [String: any Sendable] = [
            "a": Int64(-9_000_000_000), "b": UInt8(7), "c": 3.0, "d": 0.1, "e": Float(1.5),
            "f": NSNumber(value: 12),
            "g": NSNumber(value: true), "h": Decimal(string: "12.50")!,
        ]
        #expect(
            try url("q", parameters)
                == "https://api.example.com/v1/q?a=-9000000000&b=7&c=3&d=0.1&e=1.5&f=12&g=1&h=12.5")
    }

    @Test func parametersGoToTheQueryForGetHeadAndDeleteAndToAJSONBodyOtherwise() throws {
        for method in [HTTPMethod.get, .head, .delete] {
            let request = try TestEndpoint(realm, "x", method: method, parameters: ["a": 1]).urlRequest()
            #expect(request.url?.query == "a=1")
            #expect(request.httpBody == nil)
        }
        for method in [HTTPMethod.post, .put, .patch, "PROPFIND"] {
            let request = try TestEndpoint(realm, "x", method: method, parameters: ["a": 1]).urlRequest()
            #expect(request.url?.query == nil)
            #expect(request.httpBody == Data(#"{"a":1}"#.utf8))
            #expect(request.value(forHTTPHeaderField: "Content-Type") == "application/json")
            #expect(request.httpMethod == method.rawValue)
        }
    }

    @Test func anEndpointMayChooseTheQueryForAPost() throws {
        let request = try TestEndpoint(realm, "x", method: .post, parameters: ["a": 1], encoding: .query)
            .urlRequest()
        #expect(request.url?.query == "a=1")
        #expect(request.httpBody == nil)
    }

    @Test func anEndpointWithABaseURLOfItsOwnUsesIt() throws {
        let endpoint = TestEndpoint(realm, "status", baseURL: URL(string: "https://other.example.org/api/")!)
        #expect(try endpoint.urlRequest().url?.absoluteString == "https://other.example.org/api/status")
    }

    @Test func anOverrideMayMoveOneRequestToAnotherHost() throws {
        let request = try TestEndpoint(realm, "status")
            .override { $0.setBaseURL(URL(string: "http://127.0.0.1:8080/staging")!) }
            .urlRequest()
        #expect(request.url?.absoluteString == "http://127.0.0.1:8080/staging/status")
        #expect(try TestEndpoint(realm, "status").urlRequest().url?.host == "api.example.com")
    }
}
