import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A middleware for tests: does what its closure says around `next`.
struct Around: Middleware {
    let body: @Sendable (URLRequest, MiddlewareNext) async throws -> Response

    init(_ body: @escaping @Sendable (URLRequest, MiddlewareNext) async throws -> Response) {
        self.body = body
    }

    func intercept(_ request: URLRequest, context: RequestContext, next: MiddlewareNext) async throws
        -> Response
    {
        try await body(request, next)
    }
}

/// An endpoint with middleware of its own.
struct EndpointWithMiddleware: SwiftyServiceProtocol {
    let realm: ServiceRealm
    let middleware: [any Middleware]
    var path: String { "x" }
    var method: HTTPMethod { .get }
}

func tagging(_ name: String, _ trail: Trail) -> Around {
    Around { request, next in
        trail.add("\(name) in")
        var request = request
        let previous = request.value(forHTTPHeaderField: "X-Order").map { $0 + "," } ?? ""
        request.setValue(previous + name, forHTTPHeaderField: "X-Order")
        let response = try await next(request)
        trail.add("\(name) out")
        return response
    }
}

@Suite struct MiddlewareChainTests {
    let stub = StubBackend()
    let realm: ServiceRealm

    init() {
        realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!).use(stub)
    }

    @Test func realmThenEndpointThenOverrideWrapTheBackendInThatOrder() async throws {
        let trail = Trail()
        realm.addMiddleware(tagging("A", trail)).addMiddleware(tagging("B", trail))
        let endpoint = EndpointWithMiddleware(realm: realm, middleware: [tagging("C", trail)])
        let response = try await endpoint.override { $0.addMiddleware(tagging("D", trail)) }.request()
        #expect(response.request.value(forHTTPHeaderField: "X-Order") == "A,B,C,D")
        #expect(stub.received.first?.urlRequest.value(forHTTPHeaderField: "X-Order") == "A,B,C,D")
        #expect(trail.all == ["A in", "B in", "C in", "D in", "D out", "C out", "B out", "A out"])
    }

    @Test func aMiddlewareCanAnswerWithoutSending() async throws {
        realm.addMiddleware(
            Around { request, _ in Response(request: request, statusCode: 203, data: Data("cached".utf8)) })
        let response = try await TestEndpoint(realm, "x").request()
        #expect(response.statusCode == 203)
        #expect(try response.mapString() == "cached")
        #expect(stub.received.isEmpty)
    }

    @Test func statusesAreJudgedAfterTheWholeChain() async throws {
        stub.on(.any, answer: .status(500))
        let seen = Trail()
        realm.addMiddleware(
            Around { request, next in
                let response = try await next(request)
                seen.add("\(response.statusCode)")
                return response
            })
        await #expect {
            try await TestEndpoint(realm, "x").request()
        } throws: { ($0 as? ServiceError)?.kind == .unacceptableStatusCode }
        #expect(seen.all == ["500"])
    }

    @Test func aMiddlewareSeesFailuresAsServiceErrors() async throws {
        stub.on(.any, answer: .connectionRefused)
        let seen = Trail()
        realm.addMiddleware(
            Around { request, next in
                do {
                    return try await next(request)
                } catch let error as ServiceError {
                    seen.add("\(error.kind)")
                    throw error
                }
            })
        await #expect(throws: ServiceError.self) { try await TestEndpoint(realm, "x").request() }
        #expect(seen.all == ["transport"])
    }

    @Test func whatAMiddlewareThrowsArrivesAsATransportErrorNamingTheRequest() async throws {
        struct Refused: Error {}
        realm.addMiddleware(Around { _, _ in throw Refused() })
        do {
            _ = try await TestEndpoint(realm, "x").request()
            Issue.record("expected a failure")
        } catch let ServiceError.transport(request, underlying, attempts) {
            #expect(underlying is Refused)
            #expect(request.url?.absoluteString == "https://api.example.com/x")
            #expect(attempts == 0)
        }
    }

    @Test func callingNextAgainSendsAgainAndCountsAttempts() async throws {
        stub.on(.any, answer: .status(503), .status(200))
        realm.addMiddleware(
            Around { request, next in
                let first = try await next(request)
                return first.statusCode == 503 ? try await next(request) : first
            })
        let response = try await TestEndpoint(realm, "x").request()
        #expect(response.statusCode == 200)
        #expect(response.attempts == 2)
        #expect(stub.received.count == 2)
    }

    @Test func theCallbackFormRunsTheChainAndCallsBackOnce() async throws {
        realm.addMiddleware(Around { request, next in try await next(request) })
        let recorder = CallbackRecorder<Result<Response, ServiceError>>()
        TestEndpoint(realm, "x").request { recorder.record($0) }
        #expect(try await recorder.first().get().statusCode == 200)
        #expect(try await recorder.count(after: 0.05) == 1)
    }

    @Test func cancellingTheHandleStopsTheChain() async throws {
        // The answer an hour away, and a timeout past it: only the cancel can end the request, however
        // long a loaded machine stalls between sending and cancelling.
        let reachedBackend = Trail()
        realm.setTimeout(7200)
        realm.use(
            StubBackend(.delayed(3600)) { _ in
                reachedBackend.add("answer"); return .sampleData
            })
        realm.addMiddleware(Around { request, next in try await next(request) })
        let recorder = CallbackRecorder<Result<Response, ServiceError>>()
        let handle = TestEndpoint(realm, "x").request { recorder.record($0) }
        try await Task.sleep(nanoseconds: 20_000_000)
        handle.cancel()
        guard case .failure(.cancelled) = try await recorder.first(within: 30) else {
            Issue.record("expected .cancelled"); return
        }
        #expect(try await recorder.count(after: 0.1) == 1)
    }

    @Test func cancellingTheTaskStopsTheChain() async throws {
        // The answer an hour away, and a timeout past it: only the cancel can end the request.
        realm.setTimeout(7200)
        realm.use(StubBackend(.delayed(3600)))
        realm.addMiddleware(Around { request, next in try await next(request) })
        let task = Task { try await TestEndpoint(realm, "x").request() }
        try await Task.sleep(nanoseconds: 20_000_000)
        let start = Date()
        task.cancel()
        await #expect { try await task.value } throws: { ($0 as? ServiceError)?.kind == .cancelled }
        // The bound allows for a loaded machine.
        #expect(Date().timeIntervalSince(start) < 60, "at the cancel, not after the answer an hour later")
    }

    @Test func hooksSeeEachRequestAndEachResult() async throws {
        let trail = Trail()
        stub.on(.path("/fail"), answer: .timeout)
        realm.addMiddleware(
            Hooks(
                willSend: { request, _ in trail.add("send \(request.url!.path)") },
                didReceive: { result, _ in
                    switch result {
                    case let .success(response): trail.add("got \(response.statusCode)")
                    case let .failure(error): trail.add("failed \(error.kind)")
                    }
                }))
        _ = try await TestEndpoint(realm, "ok").request()
        _ = try? await TestEndpoint(realm, "fail").request()
        #expect(trail.all == ["send /ok", "got 200", "send /fail", "failed timedOut"])
    }

    @Test func theContextNamesTheEndpointAndTheCRUDMethod() async throws {
        let trail = Trail()
        realm.addMiddleware(Around { request, next in try await next(request) })
        realm.addMiddleware(HookContext(trail: trail))
        _ = try await TestEndpoint(realm, "e").request()
        let users = Service(baseURL: URL(string: "https://api.example.com/users")!)
        realm.register(users)
        _ = try await users.destroy("1").value
        #expect(trail.all == ["endpoint e", "crud destroy"])
    }

    struct HookContext: Middleware {
        let trail: Trail
        func intercept(_ request: URLRequest, context: RequestContext, next: MiddlewareNext) async throws
            -> Response
        {
            if let endpoint = context.endpoint as? TestEndpoint { trail.add("endpoint \(endpoint.path)") }
            if let crud = context.crudMethod { trail.add("crud \(crud)") }
            return try await next(request)
        }
    }
}

/// Realm-wide statuses and decoded error bodies.
@Suite struct ValidationTests {
    struct APIError: Decodable, Sendable, Equatable {
        let code: String
        let message: String
    }

    let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!)

    @Test func aRealmSetsTheStatusesItsEndpointsAcceptAndAnEndpointCanStillSayOtherwise() async throws {
        realm.use(StubBackend.failing(statusCode: 404)).setValidStatusCodes(.successful.union([404]))
        #expect(try await TestEndpoint(realm, "x").request().statusCode == 404)
        await #expect(throws: ServiceError.self) {
            try await TestEndpoint(realm, "x", validStatusCodes: .successful).request()
        }
        await #expect(throws: ServiceError.self) {
            try await TestEndpoint(realm, "x").override { $0.setValidStatusCodes([200]) }.request()
        }
    }

    @Test func errorBodiesAreDecodedIntoTheErrorWithTheRawResponseKept() async throws {
        let body = #"{"code": "quota", "message": "slow down"}"#
        realm.use(StubBackend { _ in .json(body, statusCode: 429) }).decodeErrorBodies(.json(APIError.self))
        do {
            _ = try await TestEndpoint(realm, "x").request()
            Issue.record("expected a failure")
        } catch let error as ServiceError {
            #expect(error.errorBody(as: APIError.self) == APIError(code: "quota", message: "slow down"))
            #expect(error.response?.data == Data(body.utf8))
            #expect(error.response?.statusCode == 429)
        }
        realm.use(StubBackend { _ in .init(statusCode: 500, data: Data("<html>".utf8)) })
        do {
            _ = try await TestEndpoint(realm, "x").request()
        } catch let error as ServiceError {
            #expect(error.errorBody(as: APIError.self) == nil)
            #expect(error.kind == .unacceptableStatusCode)
        }
    }
}
