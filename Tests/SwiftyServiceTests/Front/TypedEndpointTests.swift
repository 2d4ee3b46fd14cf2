import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

struct TypedUser: Codable, Sendable, Equatable {
    let id: Int
    let name: String
    var joined: Date?
}

/// An endpoint enum with typed views of its cases, as the Typed endpoints article shows.
enum TypedUsers: SwiftyServiceProtocol {
    case info(ServiceRealm, id: Int)
    case remove(ServiceRealm, id: Int)
    case legacyDates(ServiceRealm)

    var realm: ServiceRealm {
        switch self {
        case let .info(realm, _), let .remove(realm, _), let .legacyDates(realm): realm
        }
    }
    var path: String {
        switch self {
        case let .info(_, id), let .remove(_, id): "users/\(id)"
        case .legacyDates: "legacy"
        }
    }
    var method: HTTPMethod {
        switch self {
        case .remove: .delete
        default: .get
        }
    }
    var decoder: JSONDecoder? {
        guard case .legacyDates = self else { return nil }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        return decoder
    }

    static func user(_ realm: ServiceRealm, id: Int) -> TypedEndpoint<TypedUser> {
        info(realm, id: id).returning(TypedUser.self)
    }
    static func enveloped(_ realm: ServiceRealm, id: Int) -> TypedEndpoint<TypedUser> {
        info(realm, id: id).returning(TypedUser.self, atKeyPath: "data.user")
    }
    static func delete(_ realm: ServiceRealm, id: Int) -> TypedEndpoint<NoContent> {
        remove(realm, id: id).returning(NoContent.self)
    }
}

@Suite struct TypedEndpointTests {
    let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com/v1")!)
    let ann = TypedUser(id: 1, name: "Ann")

    @Test func requestReturnsTheDecodedValue() async throws {
        realm.use(StubBackend().on(.path("/v1/users/1"), answer: .json(#"{"id": 1, "name": "Ann"}"#)))
        let user: TypedUser = try await TypedUsers.user(realm, id: 1).request()
        #expect(user == ann)
    }

    @Test func theCallbackGetsAResultOfTheValueExactlyOnce() async throws {
        realm.use(
            StubBackend(.delayed(0.01)).on(.path("/v1/users/1"), answer: .json(#"{"id": 1, "name": "Ann"}"#)))
        let recorder = CallbackRecorder<Result<TypedUser, ServiceError>>()
        TypedUsers.user(realm, id: 1).request { recorder.record($0) }
        #expect(try await recorder.first().get() == ann)
        #expect(try await recorder.count() == 1)
    }

    @Test func aFailedStatusArrivesAsTheStatusNotAsADecodingError() async throws {
        realm.use(StubBackend().on(.any, answer: .json(#"{"error": "no"}"#, statusCode: 404)))
        let recorder = CallbackRecorder<Result<TypedUser, ServiceError>>()
        TypedUsers.user(realm, id: 1).request { recorder.record($0) }
        #expect(try await recorder.first().failure?.kind == .unacceptableStatusCode)
    }

    @Test func noContentReadsNoBodyAtAll() async throws {
        realm.use(StubBackend().on(.any, answer: .status(204), .status(200, data: Data("not json".utf8))))
        #expect(try await TypedUsers.delete(realm, id: 1).request() == NoContent())
        #expect(try await TypedUsers.delete(realm, id: 1).request() == NoContent())
    }

    @Test func aValueAtAKeyPathIsReadOutOfItsEnvelope() async throws {
        realm.use(
            StubBackend().on(.any, answer: .json(#"{"data": {"user": {"id": 1, "name": "Ann"}}, "meta": 3}"#))
        )
        #expect(try await TypedUsers.enveloped(realm, id: 1).request() == ann)
    }

    @Test("A decoding failure names the endpoint, the type and the coding path")
    func decodingFailuresSayWhereAndWhat() async throws {
        realm.use(StubBackend().on(.any, answer: .json(#"{"data": {"user": {"id": 1, "name": 7}}}"#)))
        do {
            _ = try await TypedUsers.enveloped(realm, id: 1).request()
            Issue.record("expected a decoding failure")
        } catch let ServiceError.decoding(response, underlying) {
            let failure = try #require(underlying as? DecodingFailure)
            #expect(failure.endpoint.hasPrefix("TypedUsers.info("))
            #expect(failure.type == "TypedUser")
            #expect(failure.codingPath == "data.user.name")
            #expect(response.statusCode == 200)
            let description = ServiceError.decoding(response, underlying: underlying).description
            #expect(
                description.contains("TypedUsers.info(")
                    && description.contains("as TypedUser, at data.user.name"))
        }
    }

    @Test func aMissingKeyIsNamedWithItsPath() async throws {
        realm.use(StubBackend().on(.any, answer: .json(#"{"data": {}}"#)))
        let error = await #expect(throws: ServiceError.self) {
            try await TypedUsers.enveloped(realm, id: 1).request()
        }
        #expect((error?.underlyingError as? DecodingFailure)?.codingPath == "data.user")
    }

    @Test("The realm's decoder reads typed responses; an endpoint's own decoder and an override win over it")
    func decoderPrecedence() async throws {
        let iso = JSONDecoder()
        iso.dateDecodingStrategy = .iso8601
        realm.setDecoder(iso).use(
            StubBackend()
                .on(
                    .path("/v1/users/1"),
                    answer: .json(#"{"id": 1, "name": "Ann", "joined": "2026-12-01T00:00:00Z"}"#)
                )
                .on(.path("/v1/legacy"), answer: .json(#"{"id": 1, "name": "Ann", "joined": 1796083200}"#)))
        let joined = Date(timeIntervalSince1970: 1_796_083_200)
        #expect(try await TypedUsers.user(realm, id: 1).request().joined == joined)
        #expect(try await TypedUsers.legacyDates(realm).returning(TypedUser.self).request().joined == joined)
        let seconds = JSONDecoder()
        seconds.dateDecodingStrategy = .secondsSince1970
        let overridden = TypedUsers.user(realm, id: 1).override { $0.setDecoder(seconds) }
        await #expect(throws: ServiceError.self) { try await overridden.request() }
        #expect(try await TypedUsers.info(realm, id: 1).request(as: TypedUser.self).joined == joined)
    }

    @Test("A stub answers a typed endpoint with a value, wrapped at its key path, that reads back the same")
    func stubAnswersWithAValue() async throws {
        let stub = StubBackend(unmatched: .fail)
        realm.use(stub)
        stub.on(TypedUsers.user(realm, id: 1), answer: ann)
        stub.on(TypedUsers.enveloped(realm, id: 2), answer: TypedUser(id: 2, name: "Bob"))
        #expect(try await TypedUsers.user(realm, id: 1).request() == ann)
        #expect(try await TypedUsers.enveloped(realm, id: 2).request() == TypedUser(id: 2, name: "Bob"))
        let raw = try await TypedUsers.info(realm, id: 2).request()
        #expect(try raw.mapString() == #"{"data":{"user":{"id":2,"name":"Bob"}}}"#)
        #expect(raw.header("Content-Type") == "application/json")
    }

    @Test func theRawResponseStaysAtHand() async throws {
        realm.use(StubBackend().on(.any, answer: .value(ann)))
        let typed = TypedUsers.user(realm, id: 1)
        let response = try await typed.endpoint.request()
        #expect(try response.decode(TypedUser.self) == ann)
        #expect(try typed.urlRequest().url?.absoluteString == "https://api.example.com/v1/users/1")
        #expect(typed.description.hasPrefix("TypedUsers.info(") && typed.description.hasSuffix("→ TypedUser"))
    }

    @Test func aModuleWithItsOwnCallbackShapeGetsTypedEndpointsToo() async throws {
        realm.use(.stub)
        let old = OldStyleService.ping(realm: realm)
        let recorder = CallbackRecorder<Data?>()
        old.request { data, _ in recorder.record(data) }
        #expect(try await recorder.first() == Data("pong".utf8))
        #expect(try await old.returning(NoContent.self).request() == NoContent())
    }

    @Test func crudReadsAreTypedWithTheRealmsDecoder() async throws {
        let iso = JSONDecoder()
        iso.dateDecodingStrategy = .iso8601
        let users = Service(baseURL: URL(string: "https://api.example.com/v1/users")!)
        realm.setDecoder(iso).register(users)
        realm.use(
            StubBackend().on(
                .any, answer: .json(#"{"data": {"id": 1, "name": "Ann", "joined": "2026-12-01T00:00:00Z"}}"#))
        )
        let user = try await users.retrieve("1").value(as: TypedUser.self, atKeyPath: "data")
        #expect(user.joined == Date(timeIntervalSince1970: 1_796_083_200))
        let recorder = CallbackRecorder<Result<TypedUser, ServiceError>>()
        users.retrieve("1").then(as: TypedUser.self, atKeyPath: "data") { recorder.record($0) }
        #expect(try await recorder.first().get().name == "Ann")
        let failure = await #expect(throws: ServiceError.self) {
            try await users.retrieve("1").value(as: TypedUser.self)
        }
        let decoding = try #require(failure?.underlyingError as? DecodingFailure)
        #expect(decoding.endpoint == "GET https://api.example.com/v1/users/1" && decoding.codingPath == "id")
    }
}
