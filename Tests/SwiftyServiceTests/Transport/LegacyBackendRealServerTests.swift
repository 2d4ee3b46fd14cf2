import Foundation
import LegacyNetworking
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A module's endpoints kept on the legacy success/failure blocks, sending through `LegacyBackend`.
/// Each case carries its realm so that every test has one of its own.
enum LegacyUserService: LegacyServiceProtocol {
    case info(ServiceRealm, uid: Int64)
    case follow(ServiceRealm, uid: Int64)
    case missing(ServiceRealm)
    case slow(ServiceRealm)

    var realm: ServiceRealm {
        switch self {
        case let .info(realm, _), let .follow(realm, _), let .missing(realm), let .slow(realm): realm
        }
    }
    var path: String {
        switch self {
        case .info: "anything/user/info"
        case .follow: "anything/user/follow"
        case .missing: "status/404"
        // /slow/60 (Tests/Servers/httpbin_app.py), for cancellation: answers only after 60 s.
        case .slow: "slow/60"
        }
    }
    var method: HTTPMethod {
        switch self {
        case .follow: .post
        default: .get
        }
    }
    var parameters: [String: Any]? {
        switch self {
        case let .info(_, uid): ["uid": uid]
        case let .follow(_, uid): ["id": uid]
        case .missing, .slow: nil
        }
    }
}

/// What a pair of legacy blocks was called with, reduced to Sendable values.
enum LegacyOutcome: Sendable {
    /// The success block, with the parsed JSON's `method`, `url`, `args` and `json` (from httpbin's echo).
    case success(method: String?, url: String?, args: [String: String], json: [String: Int], header: String?)
    /// The failure block, with the NSError's parts.
    case failure(domain: String, code: Int, description: String)

    static func record(into recorder: CallbackRecorder<LegacyOutcome>) -> LegacyCallbacks {
        LegacyCallbacks(
            success: { object in
                let echo = object as? [String: Any]
                recorder.record(
                    .success(
                        method: echo?["method"] as? String, url: echo?["url"] as? String,
                        args: echo?["args"] as? [String: String] ?? [:],
                        json: echo?["json"] as? [String: Int] ?? [:],
                        header: (echo?["headers"] as? [String: String])?["X-Client"]))
            },
            failure: { error in
                recorder.record(
                    .failure(domain: error.domain, code: error.code, description: error.localizedDescription))
            })
    }
}

/// The example adapters of Examples/LegacyBackend against a real httpbin.
@Suite("Legacy and async client backends against a real server", .timeLimit(.minutes(5)), .tags(.realServer))
struct LegacyBackendRealServerTests {

    @Test("LegacyBackend sends a GET with the realm's headers and the endpoint's query")
    func legacyBackendGET() async throws {
        // httpbin /anything: echoes method, args and headers.
        let realm = try HTTPBin.realm(backend: LegacyBackend(client: LegacyHTTPClient()))
            .addHeader("X-Client", withValue: "legacy")
        let endpoint = TestEndpoint(
            realm, "anything/legacy", parameters: ["uid": 42, "name": "a b"], headers: ["X-Endpoint": "e"])

        let response = try await endpoint.request()
        let echo = try response.echo()

        #expect(echo.method == "GET")
        #expect(echo.args == ["uid": .one("42"), "name": .one("a b")])
        #expect(echo.header("X-Client") == "legacy")
        #expect(echo.header("X-Endpoint") == "e")
        #expect(response.rawRequestURI == "/anything/legacy?name=a%20b&uid=42")
    }

    @Test("LegacyBackend sends a POST whose JSON body and headers the server echoes")
    func legacyBackendPOST() async throws {
        // httpbin /anything: echoes the parsed JSON body and the headers.
        let realm = try HTTPBin.realm(backend: LegacyBackend(client: LegacyHTTPClient()))
            .addHeader("X-Client", withValue: "legacy")
        let endpoint = TestEndpoint(
            realm, "anything/legacy", method: .post, parameters: ["id": 7, "tags": ["x"], "on": true])

        let echo = try await endpoint.request().echo()

        #expect(echo.method == "POST")
        #expect(echo.header("Content-Type") == "application/json")
        #expect(echo.header("X-Client") == "legacy")
        #expect(echo.json == .object(["id": .number(7), "tags": .array([.string("x")]), "on": .bool(true)]))
    }

    @Test("A LegacyServiceProtocol endpoint's success block gets the parsed JSON, exactly once")
    func legacyEndpointSuccessBlock() async throws {
        // httpbin /anything/user/info and /anything/user/follow: echo the request as JSON.
        let realm = try HTTPBin.realm(backend: LegacyBackend(client: LegacyHTTPClient()))
            .addHeader("X-Client", withValue: "legacy")
        let base = try HTTPBin.url().absoluteString

        let info = CallbackRecorder<LegacyOutcome>()
        LegacyUserService.info(realm, uid: 42).request(completion: LegacyOutcome.record(into: info))
        guard case let .success(method, url, args, _, header) = try await info.first() else {
            Issue.record("the failure block was called: \(info.calls)")
            return
        }
        #expect(method == "GET")
        #expect(url == "\(base)/anything/user/info?uid=42")
        #expect(args == ["uid": "42"])
        #expect(header == "legacy")

        let follow = CallbackRecorder<LegacyOutcome>()
        LegacyUserService.follow(realm, uid: 7).request(completion: LegacyOutcome.record(into: follow))
        guard case let .success(method, _, _, json, _) = try await follow.first() else {
            Issue.record("the failure block was called: \(follow.calls)")
            return
        }
        #expect(method == "POST")
        #expect(json == ["id": 7])

        #expect(try await info.count(after: 0.3) == 1)
        #expect(follow.calls.count == 1)
    }

    @Test(
        "A LegacyServiceProtocol endpoint's failure block gets a 404 as an NSError naming the request, exactly once"
    )
    func legacyEndpointFailureBlock() async throws {
        // httpbin /status/404: answers 404.
        let realm = try HTTPBin.realm(backend: LegacyBackend(client: LegacyHTTPClient()))
        let recorder = CallbackRecorder<LegacyOutcome>()
        LegacyUserService.missing(realm).request(completion: LegacyOutcome.record(into: recorder))

        guard case let .failure(domain, code, description) = try await recorder.first() else {
            Issue.record("the success block was called: \(recorder.calls)")
            return
        }
        #expect(domain == "LegacyService")
        #expect(code == 404)
        #expect(description.contains(try httpbinURL("status/404")))
        #expect(description.contains("GET"))
        #expect(try await recorder.count(after: 0.3) == 1)
    }

    @Test("Cancelling a handle through LegacyBackend delivers .cancelled once, promptly")
    func legacyBackendCancellation() async throws {
        try await measuringPromptness {
            // /slow/60 (Tests/Servers/httpbin_app.py): only the cancellation can end the request within 60 s.
            let realm = try HTTPBin.realm(backend: LegacyBackend(client: LegacyHTTPClient()))
            let recorder = CallbackRecorder<Result<Response, ServiceError>>()
            let handle = TestEndpoint(realm, "slow/60").request { recorder.record($0) }
            try await Task.sleep(for: .milliseconds(100))

            let start = ContinuousClock.now
            handle.cancel()
            let result = try await recorder.first(within: 45)

            // Far sooner than the server's answer at 60 s; the bound allows for a loaded machine.
            #expect(seconds(since: start) < 45)
            #expect(result.serviceError?.kind == .cancelled)
            #expect(try await recorder.count(after: 0.5) == 1)
        }
    }

    @Test("Cancelling a LegacyServiceProtocol request calls the failure block once, naming the cancellation")
    func legacyEndpointCancellation() async throws {
        try await measuringPromptness {
            // /slow/60 (Tests/Servers/httpbin_app.py): only the cancellation can end the request within 60 s.
            let realm = try HTTPBin.realm(backend: LegacyBackend(client: LegacyHTTPClient()))
            let recorder = CallbackRecorder<LegacyOutcome>()
            let handle = LegacyUserService.slow(realm).request(
                completion: LegacyOutcome.record(into: recorder))
            try await Task.sleep(for: .milliseconds(100))

            let start = ContinuousClock.now
            handle.cancel()
            guard case let .failure(_, _, description) = try await recorder.first(within: 45) else {
                Issue.record("the success block was called: \(recorder.calls)")
                return
            }
            // Far sooner than the server's answer at 60 s; the bound allows for a loaded machine.
            #expect(seconds(since: start) < 45)
            #expect(description.contains("cancelled"))
            #expect(description.contains(try httpbinURL("slow/60")))
            #expect(try await recorder.count(after: 0.5) == 1)
        }
    }

    @Test("ModernClientBackend sends a GET through the async client")
    func modernClientGET() async throws {
        // httpbin /anything: echoes method, args and headers.
        let client = ModernHTTPClient()
        let realm = try HTTPBin.realm(backend: ModernClientBackend(client: client))
            .addHeader("X-Client", withValue: "modern")
        let endpoint = TestEndpoint(realm, "anything/feed", parameters: ["limit": 10])

        let echo = try await endpoint.request().echo()

        #expect(echo.method == "GET")
        #expect(echo.args == ["limit": .one("10")])
        #expect(echo.header("X-Client") == "modern")
        #expect(await client.requestCount == 1)
    }

    @Test("ModernClientBackend maps a 404 to .unacceptableStatusCode")
    func modernClientStatus() async throws {
        // httpbin /status/404: answers 404.
        let realm = try HTTPBin.realm(backend: ModernClientBackend(client: ModernHTTPClient()))
        let error = try await #require(throws: ServiceError.self) {
            try await TestEndpoint(realm, "status/404").request()
        }
        #expect(error.kind == .unacceptableStatusCode)
        #expect(error.response?.statusCode == 404)
    }

    @Test("Cancelling the awaiting task through ModernClientBackend throws .cancelled promptly")
    func modernClientTaskCancellation() async throws {
        try await measuringPromptness {
            // /slow/60 (Tests/Servers/httpbin_app.py): only the cancellation can end the request within 60 s.
            let realm = try HTTPBin.realm(backend: ModernClientBackend(client: ModernHTTPClient()))
            let task = Task { try await TestEndpoint(realm, "slow/60").request() }
            try await Task.sleep(for: .milliseconds(100))

            let start = ContinuousClock.now
            task.cancel()
            let result = await task.result

            // Far sooner than the server's answer at 60 s; the bound allows for a loaded machine.
            #expect(seconds(since: start) < 45)
            #expect(result.serviceError?.kind == .cancelled)
        }
    }
}

/// The shipped and example backends, to check each one the same way.
enum BackendKind: String, CaseIterable, Sendable {
    case urlSession, legacy, modern

    func make() -> any NetworkBackend {
        switch self {
        case .urlSession: URLSessionBackend()
        case .legacy: LegacyBackend(client: LegacyHTTPClient())
        case .modern: ModernClientBackend(client: ModernHTTPClient())
        }
    }
}

@Suite("Cancellation reaches the backend's transfer", .timeLimit(.minutes(5)), .tags(.realServer))
struct BackendCancellationRealServerTests {
    @Test(
        "Cancelling a handle stops the backend's transfer: it ends with URLError.cancelled, not the late answer",
        arguments: BackendKind.allCases)
    func cancellationReachesTheTransfer(_ kind: BackendKind) async throws {
        try await measuringPromptness {
            // /slow/60 (Tests/Servers/httpbin_app.py): the backend can only finish within 60 s if its
            // transfer was cancelled; the waits below allow for a loaded machine and still end far sooner.
            let spy = AnswerSpyBackend(kind.make())
            let realm = try HTTPBin.realm(backend: spy)
            let recorder = CallbackRecorder<Result<Response, ServiceError>>()
            let handle = TestEndpoint(realm, "slow/60").request { recorder.record($0) }
            try await Task.sleep(for: .milliseconds(100))
            handle.cancel()

            #expect(try await recorder.first(within: 45).serviceError?.kind == .cancelled)
            let answer = try await spy.answer(within: 20)
            let error = answer.failure.map { $0 as NSError }
            let cancelled = error?.domain == NSURLErrorDomain && error?.code == NSURLErrorCancelled
            #expect(cancelled || answer.failure is CancellationError, "the backend answered \(answer)")
        }
    }
}
