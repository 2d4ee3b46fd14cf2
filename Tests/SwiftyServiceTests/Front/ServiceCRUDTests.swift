import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// CRUD services on the stub: what each call builds. The same calls against httpbin live in RealServer/.
@Suite struct ServiceCRUDTests {
    let spy = SpyBackend()
    let realm: ServiceRealm
    let users = Service(baseURL: URL(string: "https://api.example.com/v1/users")!)

    init() {
        realm = uniqueRealm().use(spy)
        realm.register(users)
    }

    func sent(_ promise: ServicePromise) async throws -> URLRequest {
        try await promise.value.request
    }

    @Test func eachCRUDCallUsesItsMappedMethodAndPath() async throws {
        let cases: [(ServicePromise, String, String)] = [
            (users.create(Data("{}".utf8)), "POST", "https://api.example.com/v1/users"),
            (users.retrieve(), "GET", "https://api.example.com/v1/users"),
            (users.retrieve("1"), "GET", "https://api.example.com/v1/users/1"),
            (
                users.retrieve(query: ["page": 2, "q": "a b"]), "GET",
                "https://api.example.com/v1/users?page=2&q=a%20b"
            ),
            (
                users.retrieve("1", query: ["expand": true]), "GET",
                "https://api.example.com/v1/users/1?expand=1"
            ),
            (users.update("1", Data("{}".utf8)), "PUT", "https://api.example.com/v1/users/1"),
            (users.destroy("1"), "DELETE", "https://api.example.com/v1/users/1"),
        ]
        for (promise, method, url) in cases {
            let request = try await sent(promise)
            #expect(request.httpMethod == method)
            #expect(request.url?.absoluteString == url)
        }
    }

    @Test func theRealmsCRUDMapDecidesTheVerb() async throws {
        realm.overrideCrudMethod(.update, withHTTPMethod: .patch)
        #expect(try await sent(users.update("1", Data())).httpMethod == "PATCH")
        #expect(
            try await sent(
                users.override { $0.overrideCrudMethod(.destroy, withHTTPMethod: "PURGE") }.destroy("1")
            )
            .httpMethod == "PURGE")
        #expect(try await sent(users.destroy("1")).httpMethod == "DELETE")
    }

    @Test func bodiesGetADefaultContentTypeUnlessOneIsSet() async throws {
        struct NewUser: Encodable { let name: String }
        let raw = try await sent(users.create(Data([1, 2, 3])))
        #expect(raw.value(forHTTPHeaderField: "Content-Type") == "application/octet-stream")
        #expect(raw.httpBody == Data([1, 2, 3]))
        let encoded = try await sent(users.create(NewUser(name: "Ann")))
        #expect(encoded.value(forHTTPHeaderField: "Content-Type") == "application/json")
        #expect(encoded.httpBody == Data(#"{"name":"Ann"}"#.utf8))
        let updated = try await sent(users.update("1", NewUser(name: "Bob")))
        #expect(updated.httpBody == Data(#"{"name":"Bob"}"#.utf8))

        realm.addHeader(
            "Content-Type", withValue: "application/vnd.users+json", specificForCRUDMethod: .create)
        #expect(
            try await sent(users.create(Data())).value(forHTTPHeaderField: "Content-Type")
                == "application/vnd.users+json")
        let overridden = users.override { $0.addHeader("Content-Type", withValue: "text/csv") }
        #expect(
            try await sent(overridden.update("1", Data())).value(forHTTPHeaderField: "Content-Type")
                == "text/csv")
    }

    @Test func realmHeadersApplyGloballyAndPerCRUDMethod() async throws {
        realm.addHeader("X-All", withValue: "1").addHeader(
            "X-Read", withValue: "1", specificForCRUDMethod: .retrieve)
        let read = try await sent(users.retrieve("1"))
        let write = try await sent(users.create(Data()))
        #expect(
            read.value(forHTTPHeaderField: "X-All") == "1" && read.value(forHTTPHeaderField: "X-Read") == "1")
        #expect(
            write.value(forHTTPHeaderField: "X-All") == "1"
                && write.value(forHTTPHeaderField: "X-Read") == nil)
    }

    @Test func anOverrideAppliesToTheCallMadeThroughItOnly() async throws {
        let withOverride = try await sent(
            users.override { $0.addHeader("X-Once", withValue: "1") }.retrieve("1"))
        let without = try await sent(users.retrieve("1"))
        #expect(withOverride.value(forHTTPHeaderField: "X-Once") == "1")
        #expect(without.value(forHTTPHeaderField: "X-Once") == nil)
    }

    @Test func identifiersAreAlwaysExactlyOnePathSegment() async throws {
        let cases = [
            "../admin": "..%2Fadmin", "a/b": "a%2Fb", "?x=1": "%3Fx=1", "#frag": "%23frag", "%2F": "%252F",
            "...": "...", ".x": ".x", "a b": "a%20b", "ü": "%C3%BC", "1": "1",
        ]
        for (id, segment) in cases {
            let url = try await sent(users.retrieve(id)).url!
            #expect(url.absoluteString == "https://api.example.com/v1/users/\(segment)", "id \(id)")
        }
    }

    @Test func anEmptyOrDotIdentifierIsRefusedAndNothingIsSent() async throws {
        // `%2E%2E` is no escape: servers (nginx among them) decode it to `..` before resolving dot segments.
        let promises = ["", ".", ".."].flatMap { id in
            [users.retrieve(id), users.update(id, Data()), users.destroy(id)]
        }
        for promise in promises {
            guard case let .invalidRequest(.invalidIdentifier, method, url)? = promise.result?.error else {
                Issue.record("expected invalidIdentifier, got \(String(describing: promise.result))");
                continue
            }
            #expect(url == "https://api.example.com/v1/users")
            #expect(method != .post)
            await #expect(throws: ServiceError.self) { try await promise.value }
        }
        #expect(spy.requests.isEmpty)
    }

    @Test func anUnregisteredServiceUsesTheDefaultRealm() {
        let lonely = Service(baseURL: URL(string: "https://api.example.com/things")!)
        #expect(lonely.realm === ServiceRealm.default)
        lonely.registerForRealm(realm)
        #expect(lonely.realm === realm)
        ServiceRealm.register(lonely, forRealmAtKey: realm.key)
        #expect(lonely.realm === realm)
    }
}

@Suite struct ServicePromiseTests {
    let realm = uniqueRealm()
    let users = Service(baseURL: URL(string: "https://api.example.com/v1/users")!)

    init() { realm.register(users) }

    @Test func thenRunsOnceForEachClosureBeforeAndAfterCompletion() async throws {
        realm.use(.stub(.delayed(0.05)))
        let promise = users.retrieve("1")
        let before = CallbackRecorder<Int?>()
        promise.then { before.record($0.response?.statusCode) }.then {
            before.record($0.response?.statusCode)
        }
        #expect(try await before.first() == 200)
        let after = CallbackRecorder<Int?>()
        promise.then { after.record($0.response?.statusCode) }
        #expect(after.calls == [200], "a closure added after completion runs at once")
        #expect(try await before.count(after: 0.05) == 2)
    }

    @Test func awaitingTheValueTwiceSendsOnce() async throws {
        let spy = SpyBackend(StubBackend(.delayed(0.02)))
        realm.use(spy)
        let promise = users.retrieve("1")
        async let first = promise.value
        async let second = promise.value
        let (a, b) = try await (first, second)
        let third = try await promise.value
        #expect(a.statusCode == 200 && b.statusCode == 200 && third.statusCode == 200)
        #expect(spy.requests.count == 1)
    }

    @Test func theRequestStartsWhenTheCallIsMade() async throws {
        let spy = SpyBackend(StubBackend(.delayed(0.01)))
        realm.use(spy)
        _ = users.destroy("7")
        #expect(spy.requests.count == 1)
    }

    @Test func theResultCarriesEachPartOrNil() async throws {
        realm.use(StubBackend.failing(statusCode: 500, data: Data("oops".utf8)))
        let result = try await withCheckedThrowingContinuation { continuation in
            users.retrieve("1").then { continuation.resume(returning: $0) }
        }
        #expect(result.request?.url?.path == "/v1/users/1")
        #expect(result.response?.statusCode == 500)
        #expect(result.data == Data("oops".utf8))
        guard case .unacceptableStatusCode? = result.error else {
            Issue.record("expected the status error"); return
        }
    }

    @Test func aTypedValueIsDecodedFromJSON() async throws {
        struct User: Decodable { let id: Int }
        realm.use(StubBackend { _ in .json(#"{"id": 3}"#) })
        #expect(try await users.retrieve("3").value(as: User.self).id == 3)
    }
}
