import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The URL builder against Foundation on random input: whatever we write, Foundation reads back unchanged.
@Suite struct URLBuilderPropertyTests {
    let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com/v1")!)

    static func randomText(using generator: inout SystemRandomNumberGenerator) -> String {
        let alphabet = Array("abcXYZ019 -._~!$&'()*+,;=:@/?#[]%\"<>\\^`{|}é日😀\u{7F}\t")
        return String(
            (0..<Int.random(in: 0...10, using: &generator)).map { _ in
                alphabet.randomElement(using: &generator)!
            })
    }

    @Test func randomQueryParametersDecodeBackToTheirKeysAndValuesInSortedOrder() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            var parameters: [String: any Sendable] = [:]
            for _ in 0..<Int.random(in: 1...5, using: &generator) {
                parameters[Self.randomText(using: &generator)] = Self.randomText(using: &generator)
            }
            let url = try TestEndpoint(realm, "search", parameters: parameters).urlRequest().url!
            let components = try #require(URLComponents(url: url, resolvingAgainstBaseURL: false))
            let items = try #require(components.percentEncodedQueryItems)
            let decoded = items.map { ($0.name.removingPercentEncoding!, $0.value!.removingPercentEncoding!) }
            let expected = parameters.keys.sorted().map { ($0, parameters[$0] as! String) }
            #expect(decoded.map(\.0) == expected.map(\.0))
            #expect(decoded.map(\.1) == expected.map(\.1))
            #expect(components.host == "api.example.com" && components.path == "/v1/search")
            #expect(!url.absoluteString.contains(" ") && !url.absoluteString.contains("+"))
        }
    }

    @Test func randomPathsStayInsideTheBaseURLAndDecodeBackToThemselves() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            let path = Self.randomText(using: &generator).replacingOccurrences(of: "/", with: "")
            // `.` and `..` are refused, as InvalidRequestTests checks.
            guard !path.isEmpty, path != ".", path != ".." else { continue }
            let url = try TestEndpoint(realm, "files/" + path).urlRequest().url!
            let components = try #require(URLComponents(url: url, resolvingAgainstBaseURL: false))
            #expect(components.percentEncodedQuery == nil, "\(path)")
            #expect(components.fragment == nil, "\(path)")
            #expect(components.percentEncodedPath.removingPercentEncoding == "/v1/files/" + path)
        }
    }

    @Test func randomIdentifiersAreOneSegmentThatDecodesBackToThemselves() async throws {
        var generator = SystemRandomNumberGenerator()
        let users = Service(baseURL: URL(string: "https://api.example.com/v1/users")!)
        realm.use(.stub).register(users)
        for _ in 0..<300 {
            let id = Self.randomText(using: &generator)
            // Empty, `.` and `..` identifiers are refused, as ServiceCRUDTests checks.
            guard !id.isEmpty, id != ".", id != ".." else { continue }
            let url = try await users.retrieve(id).value.request.url!
            let components = try #require(URLComponents(url: url, resolvingAgainstBaseURL: false))
            let path = components.percentEncodedPath
            #expect(path.hasPrefix("/v1/users/"))
            let segment = String(path.dropFirst("/v1/users/".count))
            #expect(
                !segment.contains("/") && components.percentEncodedQuery == nil && components.fragment == nil)
            #expect(segment.removingPercentEncoding == id)
        }
    }

    @Test func randomPathSegmentValuesAreOneSegmentThatDecodesBackToThemselves() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            let value = Self.randomText(using: &generator)
            guard !value.isEmpty, value != ".", value != ".." else { continue }
            let url = try TestEndpoint(realm, "files/\(pathSegment: value)/meta").urlRequest().url!
            let components = try #require(URLComponents(url: url, resolvingAgainstBaseURL: false))
            let path = components.percentEncodedPath
            #expect(path.hasPrefix("/v1/files/") && path.hasSuffix("/meta"), "\(value.debugDescription)")
            let segment = String(path.dropFirst("/v1/files/".count).dropLast("/meta".count))
            #expect(
                !segment.contains("/") && components.percentEncodedQuery == nil && components.fragment == nil)
            #expect(segment.removingPercentEncoding == value, "\(value.debugDescription)")
        }
    }
}
