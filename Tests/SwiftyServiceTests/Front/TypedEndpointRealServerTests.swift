import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// httpbin's endpoints, declared the way the README and the Typed endpoints article teach: an enum, and typed views of its cases.
enum HTTPBinAPI: SwiftyServiceProtocol {
    case anything(
        ServiceRealm, method: HTTPMethod, query: [String: any Sendable]? = nil, body: RequestBody? = nil)
    case search(ServiceRealm, SearchFilter)
    case slideshow(ServiceRealm)
    case status(ServiceRealm, Int)

    var realm: ServiceRealm {
        switch self {
        case let .anything(realm, _, _, _), let .search(realm, _), let .slideshow(realm),
            let .status(realm, _):
            realm
        }
    }
    var path: String {
        switch self {
        case .anything, .search: "anything"
        case .slideshow: "json"
        case let .status(_, code): "status/\(code)"
        }
    }
    var method: HTTPMethod {
        switch self {
        case let .anything(_, method, _, _): method
        case .status: .delete
        default: .get
        }
    }
    var parameters: [String: Any]? {
        switch self {
        case let .anything(_, _, query, _): query
        case let .search(_, filter): .encoding(filter)
        default: nil
        }
    }
    var body: RequestBody? {
        guard case let .anything(_, _, _, body) = self else { return nil }
        return body
    }

    static func echo(
        _ realm: ServiceRealm, _ method: HTTPMethod = .get, query: [String: any Sendable]? = nil,
        body: RequestBody? = nil
    ) -> TypedEndpoint<Echo> {
        anything(realm, method: method, query: query, body: body).returning(Echo.self)
    }
}

@Suite("Typed endpoints against a real server", .timeLimit(.minutes(5)), .tags(.realServer))
struct TypedEndpointRealServerTests {
    let ann = TypedUser(id: 1, name: "Ann", joined: Date(timeIntervalSince1970: 1_796_083_200))

    @Test func aTypedGETReturnsTheDecodedBody() async throws {
        // httpbin /anything: echoes method and query arguments.
        let echo = try await HTTPBinAPI.echo(try HTTPBin.realm(), query: ["uid": 42]).request()
        #expect(echo.method == "GET")
        #expect(echo.args["uid"] == .one("42"))
    }

    @Test("A typed POST sends JSON and reads the value back at a key path, with the realm's date strategy")
    func aTypedPOSTReadsAtAKeyPath() async throws {
        // httpbin /anything: echoes a JSON body, parsed, in `json`.
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let realm = try HTTPBin.realm().setDecoder(decoder)
        let user = try await HTTPBinAPI.anything(realm, method: .post, body: .json(ann, encoder: encoder))
            .returning(TypedUser.self, atKeyPath: "json").request()
        #expect(user == ann)
    }

    @Test func aNestedKeyPathReadsDeepInsideTheBody() async throws {
        // httpbin /json: {"slideshow": {"author": "Yours Truly", …}}.
        let author = try await HTTPBinAPI.slideshow(try HTTPBin.realm())
            .returning(String.self, atKeyPath: "slideshow.author").request()
        #expect(author == "Yours Truly")
    }

    @Test func a204IsNoContent() async throws {
        // httpbin /status/204: no body at all.
        let recorder = CallbackRecorder<Result<NoContent, ServiceError>>()
        HTTPBinAPI.status(try HTTPBin.realm(), 204).returning(NoContent.self).request { recorder.record($0) }
        #expect(try await recorder.first().get() == NoContent())
    }

    @Test("A body of another shape fails as .decoding, naming the endpoint, the type and the coding path")
    func decodingFailuresAgainstTheServer() async throws {
        // httpbin /json: a slideshow, not a user.
        let error = await #expect(throws: ServiceError.self) {
            try await HTTPBinAPI.slideshow(try HTTPBin.realm()).returning(TypedUser.self).request()
        }
        #expect(error?.kind == .decoding)
        let failure = try #require(error?.underlyingError as? DecodingFailure)
        #expect(failure.endpoint.hasPrefix("HTTPBinAPI.slideshow("))
        #expect(failure.type == "TypedUser" && failure.codingPath == "id")
        #expect(error?.response?.statusCode == 200)
        #expect(
            error?.description.contains(
                "/json: status 200, but the body could not be decoded: HTTPBinAPI.slideshow(") == true)
    }

    @Test("An Encodable value is the query, as its dictionary would be")
    func encodableQuery() async throws {
        // httpbin /anything: echoes query arguments (a repeated key as a list); X-Raw-Request-URI as sent.
        let realm = try HTTPBin.realm()
        let response = try await HTTPBinAPI.search(realm, SearchFilter()).request()
        let echo = try response.echo()
        #expect(echo.args["q"] == .one("a b+c/é") && echo.args["tags[]"] == .many(["x", "y"]))
        #expect(echo.args["range[from]"] == .one("1") && echo.args["range[to]"] == nil)
        #expect(response.rawRequestURI == "/anything?" + (try URLEncodedFormEncoder().encode(SearchFilter())))
    }

    @Test("A form body from an Encodable goes with query parameters")
    func formBodyAndQueryTogether() async throws {
        // httpbin /anything: echoes the parsed form in `form` and the query in `args`.
        let echo = try await HTTPBinAPI.echo(
            try HTTPBin.realm(), .post, query: ["page": 2], body: .form(SearchFilter.Range(from: 3, to: 4))
        ).request()
        #expect(echo.args == ["page": .one("2")])
        #expect(echo.form == ["from": .one("3"), "to": .one("4")])
        #expect(echo.headers["Content-Type"] == "application/x-www-form-urlencoded; charset=utf-8")
    }

    @Test func crudReadsAreTyped() async throws {
        // httpbin /anything/users/1: echoes the URL it was asked for.
        let users = Service(baseURL: try HTTPBin.anything().appendingPathComponent("users"))
        try HTTPBin.realm().register(users)
        let url = try await users.retrieve("1").value(as: String.self, atKeyPath: "url")
        #expect(url.hasSuffix("/anything/users/1"))
    }
}
