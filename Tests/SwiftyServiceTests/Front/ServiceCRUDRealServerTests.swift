import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A user, as the CRUD tests send it.
struct CRUDUser: Codable, Equatable, Sendable {
    let name: String
    let age: Int
    let admin: Bool

    static let ada = CRUDUser(name: "Ada Lovelace", age: 36, admin: true)
    static let adaJSON = JSONValue.object([
        "name": .string("Ada Lovelace"), "age": .number(36), "admin": .bool(true),
    ])
}

/// A `Service` on httpbin's `/anything/users` (which echoes every request), registered in a realm of its own.
func usersService(_ resource: String = "anything/users", backend: (any NetworkBackend)? = nil) throws
    -> (service: Service, realm: ServiceRealm)
{
    let realm = uniqueRealm("crud")
    if let backend { realm.use(backend) }
    let service = Service(baseURL: try HTTPBin.url().appendingPathComponent(resource))
    realm.register(service)
    return (service, realm)
}

/// One CRUD call and what httpbin must echo for it.
struct CRUDCall: Sendable, CustomTestStringConvertible {
    let testDescription: String
    let call: @Sendable (Service) -> ServicePromise
    let method: String
    /// The request target after `/anything/users`, query included, as sent on the wire.
    let target: String
    let args: [String: Echo.Arg]
    let contentType: String?
    let data: String
    let json: JSONValue?

    static let all: [CRUDCall] = [
        CRUDCall(
            testDescription: "create(Data)", call: { $0.create(Data("raw user".utf8)) }, method: "POST",
            target: "",
            args: [:], contentType: "application/octet-stream", data: "raw user", json: nil),
        CRUDCall(
            testDescription: "create(Encodable)", call: { $0.create(CRUDUser.ada) }, method: "POST",
            target: "",
            args: [:], contentType: "application/json",
            data: #"{"name":"Ada Lovelace","age":36,"admin":true}"#,
            json: CRUDUser.adaJSON),
        CRUDCall(
            testDescription: "retrieve()", call: { $0.retrieve() }, method: "GET", target: "", args: [:],
            contentType: nil, data: "", json: nil),
        CRUDCall(
            testDescription: "retrieve(\"1\")", call: { $0.retrieve("1") }, method: "GET", target: "/1",
            args: [:],
            contentType: nil, data: "", json: nil),
        CRUDCall(
            testDescription: "retrieve(query:)", call: { $0.retrieve(query: ["page": 2, "q": "a b"]) },
            method: "GET",
            target: "?page=2&q=a%20b", args: ["page": .one("2"), "q": .one("a b")], contentType: nil,
            data: "",
            json: nil),
        CRUDCall(
            testDescription: "retrieve(\"1\", query:)",
            call: { $0.retrieve("1", query: ["fields": ["id", "name"]]) },
            method: "GET", target: "/1?fields%5B%5D=id&fields%5B%5D=name",
            args: ["fields[]": .many(["id", "name"])],
            contentType: nil, data: "", json: nil),
        CRUDCall(
            testDescription: "update(\"1\", Data)", call: { $0.update("1", Data("new bytes".utf8)) },
            method: "PUT",
            target: "/1", args: [:], contentType: "application/octet-stream", data: "new bytes", json: nil),
        CRUDCall(
            testDescription: "update(\"1\", Encodable)", call: { $0.update("1", CRUDUser.ada) },
            method: "PUT",
            target: "/1", args: [:], contentType: "application/json",
            data: #"{"name":"Ada Lovelace","age":36,"admin":true}"#, json: CRUDUser.adaJSON),
        CRUDCall(
            testDescription: "destroy(\"1\")", call: { $0.destroy("1") }, method: "DELETE", target: "/1",
            args: [:],
            contentType: nil, data: "", json: nil),
    ]
}

/// CRUD services (contract section 3) against httpbin's `/anything/users`.
@Suite("CRUD services against a real server", .timeLimit(.minutes(5)), .tags(.realServer))
struct ServiceCRUDRealServerTests {

    // MARK: Verbs

    @Test("Each CRUD call sends its verb, path, query and body", arguments: CRUDCall.all)
    func verb(_ call: CRUDCall) async throws {
        // httpbin /anything/users[/id]: echoes method, args, headers and body; X-Raw-Request-URI the target.
        let (service, _) = try usersService()
        let response = try await call.call(service).value
        let echo = try response.echo()

        #expect(echo.method == call.method)
        #expect(response.rawRequestURI == "/anything/users" + call.target)
        #expect(echo.args == call.args)
        #expect(echo.header("Content-Type") == call.contentType)
        if let json = call.json {
            #expect(echo.json == json)
        } else {
            #expect(echo.data == call.data)
        }
        #expect(response.statusCode == 200)
    }

    @Test("then hands over the iService-shaped result: request, response and data, no error")
    func thenResultShape() async throws {
        // httpbin /anything/users/7: echoes the request.
        let (service, _) = try usersService()
        let recorder = CallbackRecorder<ServiceResult>()
        service.retrieve("7").then { recorder.record($0) }
        let result = try await recorder.first()

        #expect(result.error == nil)
        #expect(result.request?.httpMethod == "GET")
        #expect(result.request?.url?.absoluteString == (try httpbinURL("anything/users/7")))
        #expect(result.response?.statusCode == 200)
        let data = try #require(result.data)
        #expect(try JSONDecoder().decode(Echo.self, from: data).url == (try httpbinURL("anything/users/7")))
    }

    @Test("A realm that maps .update to PATCH makes update send PATCH")
    func updateMappedToPatch() async throws {
        // httpbin /anything/users/1: echoes the method.
        let (service, realm) = try usersService()
        realm.overrideCrudMethod(.update, withHTTPMethod: .patch)

        let echo = try await service.update("1", CRUDUser.ada).value.echo()

        #expect(echo.method == "PATCH")
        #expect(echo.json == CRUDUser.adaJSON)
        #expect(try await service.retrieve("1").value.echo().method == "GET")
    }

    @Test("A base URL's own query is kept in front of the call's query")
    func baseURLQueryIsKept() async throws {
        // httpbin /anything/users/1: echoes `args`; X-Raw-Request-URI the target as sent.
        let realm = uniqueRealm("crud")
        let service = Service(
            baseURL: try #require(URL(string: try httpbinURL("anything/users?api_key=k%201"))))
        realm.register(service)

        let response = try await service.retrieve("1", query: ["page": 2]).value
        #expect(response.rawRequestURI == "/anything/users/1?api_key=k%201&page=2")
        #expect(try response.echo().args == ["api_key": .one("k 1"), "page": .one("2")])
    }

    @Test("retrieve() and create() go to the base URL exactly as given, trailing slash included")
    func baseURLTrailingSlashIsKept() async throws {
        // httpbin /anything/users/: X-Raw-Request-URI shows whether the trailing slash was sent.
        // (Servers such as Django tell `/users/` and `/users` apart and redirect a POST to the other.)
        let realm = uniqueRealm("crud")
        let service = Service(baseURL: try #require(URL(string: try httpbinURL("anything/users/"))))
        realm.register(service)

        let retrieved = try await service.retrieve().value.rawRequestURI
        #expect(retrieved == "/anything/users/")
        let created = try await service.create(CRUDUser.ada).value.rawRequestURI
        #expect(created == "/anything/users/")
        let one = try await service.retrieve("1").value.rawRequestURI
        #expect(one == "/anything/users/1")
    }

    // MARK: Headers

    @Test("A realm's per-CRUD header goes on that CRUD method's requests only")
    func perCRUDHeaders() async throws {
        // httpbin /anything/users: echoes the headers.
        let (service, realm) = try usersService()
        realm
            .addHeader("X-Everywhere", withValue: "all")
            .addHeader("X-Retrieve-Only", withValue: "r", specificForCRUDMethod: .retrieve)
            .addHeader("X-Destroy-Only", withValue: "d", specificForCRUDMethod: .destroy)

        let retrieved = try await service.retrieve("1").value.echo()
        #expect(retrieved.header("X-Everywhere") == "all")
        #expect(retrieved.header("X-Retrieve-Only") == "r")
        #expect(retrieved.header("X-Destroy-Only") == nil)

        let created = try await service.create(CRUDUser.ada).value.echo()
        #expect(created.header("X-Everywhere") == "all")
        #expect(created.header("X-Retrieve-Only") == nil)
        #expect(created.header("X-Destroy-Only") == nil)

        let destroyed = try await service.destroy("1").value.echo()
        #expect(destroyed.header("X-Destroy-Only") == "d")
        #expect(destroyed.header("X-Retrieve-Only") == nil)
    }

    @Test(
        "A realm's Content-Type wins over the default for Data and Encodable bodies; an override wins over it"
    )
    func realmContentTypeWins() async throws {
        // httpbin /anything/users: echoes the Content-Type header and body.
        let (service, realm) = try usersService()
        realm.addHeader("content-type", withValue: "application/vnd.users+json")

        let data = try await service.create(Data(#"{"id":1}"#.utf8)).value.echo()
        #expect(data.header("Content-Type") == "application/vnd.users+json")
        #expect(data.data == #"{"id":1}"#)

        let encodable = try await service.create(CRUDUser.ada).value.echo()
        #expect(encodable.header("Content-Type") == "application/vnd.users+json")
        #expect(encodable.json == CRUDUser.adaJSON)

        let overridden =
            try await service
            .override { configuration in configuration.addHeader("Content-Type", withValue: "text/plain") }
            .update("1", Data("plain".utf8)).value.echo()
        #expect(overridden.header("Content-Type") == "text/plain")
    }

    @Test("override adds a header to that call only; the next plain call does not inherit it")
    func overrideIsOneOff() async throws {
        // httpbin /anything/users: echoes the headers.
        let (service, _) = try usersService()
        let overridden =
            try await service
            .override { configuration in configuration.addHeader("X-Once", withValue: "1") }
            .create(CRUDUser.ada).value.echo()
        #expect(overridden.header("X-Once") == "1")
        #expect(overridden.method == "POST")

        let plain = try await service.create(CRUDUser.ada).value.echo()
        #expect(plain.header("X-Once") == nil)
    }

    @Test("50 concurrent calls, half with an override, never bleed headers into each other")
    func concurrentOverridesDoNotBleed() async throws {
        // httpbin /anything/users/<i>: echoes each request's URL and headers.
        let (service, _) = try usersService()
        let echoes = try await withThrowingTaskGroup(of: (Int, Echo).self) { group in
            for index in 0..<50 {
                group.addTask {
                    let promise =
                        index.isMultiple(of: 2)
                        ? service.override { $0.addHeader("X-Override", withValue: "\(index)") }.retrieve(
                            "\(index)")
                        : service.retrieve("\(index)")
                    return (index, try await promise.value.echo())
                }
            }
            var echoes: [(Int, Echo)] = []
            for try await echo in group { echoes.append(echo) }
            return echoes
        }

        #expect(echoes.count == 50)
        let base = try httpbinURL("anything/users")
        for (index, echo) in echoes {
            #expect(echo.url == "\(base)/\(index)")
            #expect(
                echo.header("X-Override") == (index.isMultiple(of: 2) ? "\(index)" : nil), "call \(index)")
        }
    }

    // MARK: Identifiers

    @Test(
        "An identifier is one percent-encoded path segment that never leaves the resource",
        arguments: ["../admin", "a/b", "?x=1", "#frag", "%2F", "...", "a b", "ü/..", "..%2F..%2Fadmin"])
    func identifierStaysOneSegment(_ id: String) async throws {
        // httpbin /anything/users/<id>: X-Raw-Request-URI shows the segment as sent; `url` where it arrived.
        let (service, _) = try usersService()
        let response = try await service.retrieve(id).value
        let raw = try #require(response.rawRequestURI)
        let prefix = "/anything/users/"

        #expect(raw.hasPrefix(prefix), "sent as \(raw)")
        let segment = String(raw.dropFirst(prefix.count))
        #expect(!segment.isEmpty)
        #expect(
            !segment.contains("/") && !segment.contains("?") && !segment.contains("#"), "segment \(segment)")
        #expect(segment != "." && segment != "..", "segment \(segment)")
        #expect(segment.removingPercentEncoding == id, "segment \(segment)")

        let echo = try response.echo()
        #expect(echo.url.hasPrefix(try httpbinURL("anything/users/")), "the server saw \(echo.url)")
        #expect(echo.args.isEmpty)
        #expect(echo.method == "GET")
    }

    @Test("An empty identifier fails with .invalidRequest and sends nothing")
    func emptyIdentifier() async throws {
        // httpbin is never reached: the spy checks that nothing was sent.
        let spy = SpyBackend(URLSessionBackend())
        let (service, _) = try usersService(backend: spy)
        let promises = [service.retrieve(""), service.update("", Data("x".utf8)), service.destroy("")]

        for promise in promises {
            let error = try await #require(throws: ServiceError.self) { try await promise.value }
            #expect(error.kind == .invalidRequest)
            let recorder = CallbackRecorder<ServiceResult>()
            promise.then { recorder.record($0) }
            #expect(try await recorder.first(within: 30).error?.kind == .invalidRequest)
        }
        #expect(spy.requests.isEmpty)
    }

    // MARK: Promises

    @Test("then closures added before and after completion each run exactly once")
    func thenBeforeAndAfterCompletion() async throws {
        // /slow/20 (Tests/Servers/httpbin_app.py): answers after 20 s, so the first closures are surely added
        // before completion, even on a loaded machine that stalls a test for 10 to 30 s.
        let (service, _) = try usersService("slow/20")
        let promise = service.retrieve()
        let before = CallbackRecorder<ServiceResult>()
        let alsoBefore = CallbackRecorder<ServiceResult>()
        promise.then { before.record($0) }.then { alsoBefore.record($0) }
        #expect(promise.result == nil)

        let first = try await before.first(within: 40)
        #expect(first.error == nil)
        #expect(first.response?.statusCode == 200)
        _ = try await alsoBefore.first(within: 10)
        #expect(promise.result != nil)

        let after = CallbackRecorder<ServiceResult>()
        promise.then { after.record($0) }
        #expect(try await after.first(within: 10).response?.statusCode == 200)

        #expect(try await before.count(after: 0.3) == 1)
        #expect(alsoBefore.calls.count == 1)
        #expect(after.calls.count == 1)
    }

    @Test("Awaiting value twice, in turn or at once, sends the request once")
    func valueTwiceSendsOnce() async throws {
        // httpbin /anything/users/1: echoes the request.
        let spy = SpyBackend(URLSessionBackend())
        let (service, _) = try usersService(backend: spy)

        let promise = service.retrieve("1")
        let first = try await promise.value
        let second = try await promise.value
        #expect(first.data == second.data)
        #expect(spy.requests.count == 1)

        let together = service.retrieve("2")
        async let a = together.value
        async let b = together.value
        let (left, right) = try await (a, b)
        #expect(left.data == right.data)
        #expect(try left.echo().url == (try httpbinURL("anything/users/2")))
        #expect(spy.requests.count == 2)
    }

    @Test("cancel() ends a slow call with .cancelled for then closures and for value, promptly")
    func cancelPromise() async throws {
        try await measuringPromptness {
            // /slow/60 (Tests/Servers/httpbin_app.py): only the cancellation can end the call within 60 s.
            let (service, _) = try usersService("slow/60", backend: URLSessionBackend())
            let promise = service.retrieve()
            let recorder = CallbackRecorder<ServiceResult>()
            promise.then { recorder.record($0) }
            let waiting = Task { try await promise.value }
            try await Task.sleep(for: .milliseconds(100))

            let start = ContinuousClock.now
            promise.cancel()
            let result = try await recorder.first(within: 45)
            #expect(result.error?.kind == .cancelled)
            #expect(await waiting.result.serviceError?.kind == .cancelled)
            let error = try await #require(throws: ServiceError.self) { try await promise.value }
            #expect(error.kind == .cancelled)
            // Far sooner than the server's answer at 60 s; the bound allows for a loaded machine.
            #expect(seconds(since: start) < 45)

            let late = CallbackRecorder<ServiceResult>()
            promise.then { late.record($0) }
            #expect(try await late.first(within: 10).error?.kind == .cancelled)
            #expect(try await recorder.count(after: 0.5) == 1)
        }
    }

    @Test("Cancelling the only task awaiting value cancels the call itself")
    func cancellingTheOnlyWaiterCancelsTheCall() async throws {
        try await measuringPromptness {
            // /slow/60 (Tests/Servers/httpbin_app.py): only a cancellation can end the call within 60 s.
            let spy = AnswerSpyBackend(URLSessionBackend())
            let (service, _) = try usersService("slow/60", backend: spy)
            let promise = service.retrieve()
            let waiting = Task { try await promise.value }
            try await Task.sleep(for: .milliseconds(100))

            let start = ContinuousClock.now
            waiting.cancel()
            #expect(await waiting.result.serviceError?.kind == .cancelled)
            // Far sooner than the server's answer at 60 s; the bound allows for a loaded machine.
            #expect(seconds(since: start) < 45)
            // The transfer itself was stopped: the backend answers with a cancellation, not the 60 s
            // response.
            let answer = try await spy.answer(within: 20)
            #expect((answer.failure as? URLError)?.code == .cancelled, "the backend answered \(answer)")
            #expect(promise.result?.error?.kind == .cancelled)
        }
    }

    @Test("Cancelling a task awaiting value leaves the call running for a then closure that still waits")
    func cancellingOneWaiterKeepsTheCallForOthers() async throws {
        // /slow/30 (Tests/Servers/httpbin_app.py) answers after 30 s, time enough for the waiter to be
        // cancelled first on a busy machine: with httpbin's /delay/10, a CI run under AddressSanitizer once
        // let the answer arrive before the cancellation.
        let (service, _) = try usersService("slow/30", backend: URLSessionBackend())
        let promise = service.retrieve()
        let recorder = CallbackRecorder<ServiceResult>()
        promise.then { recorder.record($0) }
        let waiting = Task { try await promise.value }
        try await Task.sleep(for: .milliseconds(100))

        waiting.cancel()
        #expect(await waiting.result.serviceError?.kind == .cancelled)
        let result = try await recorder.first(within: 60)
        #expect(result.error == nil)
        #expect(result.response?.statusCode == 200)
        #expect(try await promise.value.statusCode == 200)
    }

    @Test("then closures run on the realm's callback queue")
    func thenOnCallbackQueue() async throws {
        // httpbin /anything/users/1: echoes the request.
        let marker = QueueMarker(label: "swiftyservice.tests.crud-callbacks")
        let (service, realm) = try usersService()
        realm.setCallbackQueue(marker.queue)
        let recorder = CallbackRecorder<Bool>()
        let promise = service.retrieve("1").then { _ in recorder.record(marker.isCurrent) }
        #expect(try await recorder.first())
        _ = try await promise.value
        let late = CallbackRecorder<Bool>()
        promise.then { _ in late.record(marker.isCurrent) }
        #expect(try await late.first())
    }
}

/// The one test that changes ``ServiceRealm/default``: it adds a header no other test looks at and restores
/// the realm's configuration afterwards.
@Suite("CRUD services in the default realm", .serialized, .timeLimit(.minutes(5)), .tags(.realServer))
struct DefaultRealmServiceRealServerTests {
    @Test("An unregistered service uses ServiceRealm.default")
    func unregisteredServiceUsesTheDefaultRealm() async throws {
        // httpbin /anything/users/1: echoes the headers the default realm added.
        let service = Service(baseURL: try HTTPBin.url().appendingPathComponent("anything/users"))
        #expect(service.realm === ServiceRealm.default)

        let saved = ServiceRealm.default.configuration
        defer { ServiceRealm.default.configure { $0 = saved } }
        let probe = UUID().uuidString
        ServiceRealm.default.addHeader("X-Default-Realm-Probe", withValue: probe)

        let echo = try await service.retrieve("1").value.echo()
        #expect(echo.header("X-Default-Realm-Probe") == probe)
        #expect(echo.url == (try httpbinURL("anything/users/1")))

        let registered = try usersService().service
        let other = try await registered.retrieve("1").value.echo()
        #expect(other.header("X-Default-Realm-Probe") == nil)
    }
}
