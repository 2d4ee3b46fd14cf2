import Foundation
import ProcessProbes
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// httpbin's `/json` document, used here as an "error body".
struct SlideshowDocument: Decodable, Sendable, Equatable {
    struct Slideshow: Decodable, Sendable, Equatable {
        let author: String
        let title: String
    }
    let slideshow: Slideshow
}

/// A smaller reading of httpbin's `/anything` echo, as an "error body".
struct EchoProblem: Decodable, Sendable, Equatable {
    let method: String
    let url: String
}

/// The middleware chain against a real httpbin: its order, hooks, errors thrown inside it, in-flight
/// coalescing and decoded error bodies.
@Suite("Middleware against a real server", .timeLimit(.minutes(5)), .tags(.realServer))
struct MiddlewareRealServerTests {

    // MARK: Order of the chain

    @Test(
        "Requests pass the realm's middleware in the order added, then the endpoint's, then the override's; responses come back the other way"
    )
    func chainOrder() async throws {
        // httpbin /anything: echoes the X-Order header as it arrived.
        let trail = Trail()
        let realm = try HTTPBin.realm(backend: URLSessionBackend())
            .addMiddleware(tagging("A", trail))
            .addMiddleware(tagging("B", trail))
        let endpoint = ChainEndpoint(realm, "anything/order", middleware: [tagging("C", trail)])

        let echo = try await endpoint.request().echo()
        #expect(echo.header("X-Order") == "A,B,C")
        #expect(trail.all == ["A in", "B in", "C in", "C out", "B out", "A out"])

        let overridden = Trail()
        let withOverride = try await endpoint.override { $0.addMiddleware(tagging("D", overridden)) }
            .request().echo()
        #expect(withOverride.header("X-Order") == "A,B,C,D")
        #expect(overridden.all == ["D in", "D out"])
    }

    @Test(
        "Hooks see every request and see a 503 as a response; the caller still gets .unacceptableStatusCode")
    func hooksSeeStatusesAsResponses() async throws {
        // httpbin /status/503: an empty 503.
        let sent = CallbackRecorder<String>()
        let received = CallbackRecorder<Result<Int, ServiceError>>()
        let realm = try HTTPBin.realm(backend: URLSessionBackend())
            .addMiddleware(
                Hooks(
                    willSend: { request, _ in sent.record(request.url?.path ?? "") },
                    didReceive: { result, _ in received.record(result.map(\.statusCode)) }))

        let error = try await #require(throws: ServiceError.self) {
            try await TestEndpoint(realm, "status/503").request()
        }

        #expect(error.kind == .unacceptableStatusCode)
        #expect(error.response?.statusCode == 503)
        #expect(sent.calls == ["/status/503"])
        #expect(received.calls.count == 1)
        #expect(try received.calls.first?.get() == 503)
    }

    @Test("Hooks see a refused connection as a .transport failure")
    func hooksSeeTransportFailures() async throws {
        // No server: a closed port on 127.0.0.1.
        let received = CallbackRecorder<ServiceError.Kind?>()
        let port = try closedPort()
        let realm = uniqueRealm()
            .setBaseURL(try #require(URL(string: "http://127.0.0.1:\(port)")))
            .use(URLSessionBackend())
            .addMiddleware(
                Hooks(didReceive: { result, _ in received.record(result.failure?.kind) }))

        let error = try await #require(throws: ServiceError.self) {
            try await TestEndpoint(realm, "anything/refused").request()
        }

        #expect(error.kind == .transport)
        #expect(received.calls == [.transport])
    }

    @Test("A middleware that throws an error of its own fails the call with .transport and nothing is sent")
    func middlewareErrorBecomesTransport() async throws {
        // httpbin /anything would answer, but the middleware stops the request before it.
        struct Refused: Error {}
        let spy = SpyBackend(URLSessionBackend())
        let realm = try HTTPBin.realm(backend: spy)
            .addMiddleware(Around { _, _ in throw Refused() })

        let error = try await #require(throws: ServiceError.self) {
            try await TestEndpoint(realm, "anything/never").request()
        }

        #expect(error.kind == .transport)
        #expect(error.underlyingError is Refused)
        #expect(spy.requests.isEmpty)
    }

    // MARK: Coalescing

    @Test("20 identical GETs in flight at once reach the server once and all get the 200")
    func coalescesIdenticalGETs() async throws {
        // /slow/20 (Tests/Servers/httpbin_app.py): answers after 20 s, long enough for all 20 to join the
        // first even on a loaded machine, which can stall a test for 10 to 30 s.
        let spy = SpyBackend(URLSessionBackend())
        let passes = CallbackRecorder<String>()
        // Added after coalescing was switched on, and still outside it: the coalescer is innermost.
        let realm = try HTTPBin.realm(backend: spy).coalesceIdenticalRequests()
            .addMiddleware(Hooks(willSend: { _, _ in passes.record("sent") }))
        let endpoint = TestEndpoint(realm, "slow/20")

        let tasks: [Task<Int, any Error>] = try await measuringPromptness {
            let callers = (0..<20).map { _ in Task { try await endpoint.request().statusCode } }
            // Every caller has come through the hooks, just outside the coalescer, before the gate opens.
            try await waitUntil(for: 15) { passes.calls.count == 20 }
            return callers
        }
        // The shared answer comes at 20 s: waited for after measuringPromptness, which would otherwise keep
        // the load test (see LoadGate) waiting all that time.
        var statuses: [Int] = []
        for task in tasks { statuses.append(try await task.value) }

        #expect(statuses == Array(repeating: 200, count: 20))
        #expect(spy.requests.count == 1)
        #expect(passes.calls.count == 20)
    }

    @Test("Cancelling one of the coalesced callers leaves the others succeeding from the one shared request")
    func cancellingOneCallerLeavesTheOthers() async throws {
        // /slow/20 (Tests/Servers/httpbin_app.py): still in flight when one caller cancels, with room for a
        // loaded machine's stalls of 10 to 30 s before the cancel.
        let spy = SpyBackend(URLSessionBackend())
        let realm = try HTTPBin.realm(backend: spy).coalesceIdenticalRequests()
        let endpoint = TestEndpoint(realm, "slow/20")

        let tasks: [Task<Int, any Error>] = try await measuringPromptness {
            let callers = (0..<20).map { _ in Task { try await endpoint.request().statusCode } }
            try await spy.waitForRequests(1)
            try await Task.sleep(for: .milliseconds(300))
            callers[0].cancel()
            return callers
        }
        // The shared answer comes at 20 s: waited for after measuringPromptness, which would otherwise keep
        // the load test (see LoadGate) waiting all that time.
        #expect(await tasks[0].result.serviceError?.kind == .cancelled)
        for task in tasks.dropFirst() {
            #expect(try await task.value == 200)
        }
        #expect(spy.requests.count == 1)
    }

    @Test("A coalesced caller that cancels stops waiting at once, while the shared request goes on")
    func cancelledCallerStopsWaitingAtOnce() async throws {
        // /slow/50 (Tests/Servers/httpbin_app.py; the realm's timeout is 60 s): the shared request outlives
        // the cancelled caller by more than a loaded machine's stalls.
        let spy = SpyBackend(URLSessionBackend())
        let realm = try HTTPBin.realm(backend: spy).coalesceIdenticalRequests()
        let endpoint = TestEndpoint(realm, "slow/50")

        let staying: Task<Int, any Error> = try await measuringPromptness {
            let stayingTask = Task { try await endpoint.request().statusCode }
            let leaving = Task { try await endpoint.request().statusCode }
            try await Task.sleep(for: .milliseconds(300))
            let cancelledAt = ContinuousClock.now
            leaving.cancel()
            let result = await leaving.result

            // Waiting for the shared request would take about 50 s; 35 leaves room for a loaded machine.
            #expect(seconds(since: cancelledAt) < 35, "the cancelled caller waited for the shared request")
            #expect(result.serviceError?.kind == .cancelled)
            return stayingTask
        }
        // The shared request's answer comes at 50 s: waited for after measuringPromptness, which would
        // otherwise keep the load test (see LoadGate) waiting all that time.
        #expect(try await staying.value == 200)
        #expect(spy.requests.count == 1)
    }

    @Test("GETs with different headers, POSTs, and GETs one after another are not coalesced")
    func whatIsNotCoalesced() async throws {
        // /slow/20 (Tests/Servers/httpbin_app.py; GET and POST): all in flight together even on a loaded
        // machine, which can stall a test for 10 to 30 s; then httpbin /anything.
        // Room for the 5 requests at once (2 GETs, 3 POSTs): the default of 4 connections per host would
        // hold the fifth back until one of the others is answered, 20 s later.
        let configuration = URLSessionBackend.defaultConfiguration()
        configuration.httpMaximumConnectionsPerHost = 6
        let spy = SpyBackend(URLSessionBackend(configuration: configuration))
        let realm = try HTTPBin.realm(backend: spy).coalesceIdenticalRequests()

        let tasks: [Task<Void, any Error>] = try await measuringPromptness {
            let gets = (0..<6).map { index in
                Task<Void, any Error> {
                    let variant = ["X-Variant": index.isMultiple(of: 2) ? "even" : "odd"]
                    _ = try await TestEndpoint(realm, "slow/20", headers: variant).request()
                }
            }
            let posts = (0..<3).map { _ in
                Task<Void, any Error> {
                    _ = try await TestEndpoint(realm, "slow/20", method: .post).request()
                }
            }
            // The two GET variants and the three POSTs are on their way before the gate opens.
            try await waitUntil(for: 15) { spy.requests.count >= 5 }
            return gets + posts
        }
        // The answers come at 20 s: waited for after measuringPromptness, which would otherwise keep the
        // load test (see LoadGate) waiting all that time.
        for task in tasks { try await task.value }
        let concurrent = spy.requests
        #expect(concurrent.filter { $0.httpMethod == "POST" }.count == 3)
        #expect(
            concurrent.filter { $0.httpMethod != "POST" }.compactMap {
                $0.value(forHTTPHeaderField: "X-Variant")
            }.sorted() == ["even", "odd"])

        _ = try await TestEndpoint(realm, "anything/again").request()
        _ = try await TestEndpoint(realm, "anything/again").request()
        #expect(spy.requests.count == concurrent.count + 2)
    }

    // MARK: Error bodies

    @Test("A status the realm does not accept carries its JSON body decoded, and the raw bytes")
    func decodedErrorBody() async throws {
        // httpbin /json: a 200 with a JSON document, unacceptable here because the realm accepts only 201.
        let realm = try HTTPBin.realm(backend: URLSessionBackend())
            .setValidStatusCodes([201])
            .decodeErrorBodies(.json(SlideshowDocument.self))

        let error = try await #require(throws: ServiceError.self) {
            try await ChainEndpoint(realm, "json").request()
        }

        #expect(error.kind == .unacceptableStatusCode)
        #expect(error.response?.statusCode == 200)
        let body = try #require(error.errorBody(as: SlideshowDocument.self))
        #expect(body.slideshow.author == "Yours Truly")
        #expect(body.slideshow.title == "Sample Slide Show")
        let raw = try #require(error.response?.data)
        #expect(try JSONDecoder().decode(SlideshowDocument.self, from: raw) == body)
        #expect(error.errorBody(as: EchoProblem.self) == nil)
    }

    @Test("A body that does not decode leaves errorBody empty but keeps the raw bytes")
    func undecodableErrorBody() async throws {
        // httpbin /status/418: a teapot drawn in ASCII, not JSON.
        let realm = try HTTPBin.realm(backend: URLSessionBackend())
            .decodeErrorBodies(.json(SlideshowDocument.self))

        let error = try await #require(throws: ServiceError.self) {
            try await ChainEndpoint(realm, "status/418").request()
        }

        #expect(error.response?.statusCode == 418)
        #expect(error.errorBody(as: SlideshowDocument.self) == nil)
        let teapot = String(decoding: error.response?.data ?? Data(), as: UTF8.self)
        #expect(teapot.contains("teapot"))
    }

    @Test("An endpoint's error body wins over its realm's, also through the middleware chain")
    func endpointErrorBodyWins() async throws {
        // httpbin /anything: a 200 echo, unacceptable here because the realm accepts only 201.
        let realm = try HTTPBin.realm(backend: URLSessionBackend())
            .setValidStatusCodes([201])
            .decodeErrorBodies(.json(SlideshowDocument.self))
            .addMiddleware(Hooks())
        let endpoint = ChainEndpoint(realm, "anything/problem", errorBody: .json(EchoProblem.self))

        let error = try await #require(throws: ServiceError.self) { try await endpoint.request() }

        #expect(
            error.errorBody(as: EchoProblem.self)
                == EchoProblem(method: "GET", url: try httpbinURL("anything/problem")))
        #expect(error.errorBody(as: SlideshowDocument.self) == nil)
        #expect(error.attempts == 1)
    }

    @Test("A realm's valid status codes apply to endpoints that do not declare their own")
    func realmValidStatusCodes() async throws {
        // httpbin /status/418: a 418 that this realm accepts.
        let realm = try HTTPBin.realm(backend: URLSessionBackend()).setValidStatusCodes([200, 418])

        let response = try await ChainEndpoint(realm, "status/418").request()
        #expect(response.statusCode == 418)

        let declared = try await #require(throws: ServiceError.self) {
            try await TestEndpoint(realm, "status/418", validStatusCodes: .successful).request()
        }
        #expect(declared.response?.statusCode == 418)
    }
}
