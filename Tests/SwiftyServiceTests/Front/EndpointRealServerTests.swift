import Foundation
import ProcessProbes
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The contract's endpoint shape: an enum whose cases carry payloads (and here their realm, so that every
/// test has one of its own).
enum EchoUserService: SwiftyServiceProtocol {
    case info(ServiceRealm, uid: Int64)
    case follow(ServiceRealm, uid: Int64)

    var realm: ServiceRealm {
        switch self {
        case let .info(realm, _), let .follow(realm, _): realm
        }
    }
    var path: String {
        switch self {
        case .info: "anything/user/info"
        case .follow: "anything/user/follow"
        }
    }
    var method: HTTPMethod {
        switch self {
        case .info: .get
        case .follow: .post
        }
    }
    var parameters: [String: Any]? {
        switch self {
        case let .info(_, uid): ["uid": uid]
        case let .follow(_, uid): ["id": uid]
        }
    }
}

/// The core toolkit (contract sections 1, 2 and 4) against a real httpbin: what the server receives is
/// what an endpoint and its realm describe, and every failure arrives as the right `ServiceError`.
@Suite("Endpoints against a real server", .timeLimit(.minutes(5)), .tags(.realServer))
struct EndpointRealServerTests {

    // MARK: Parameters and bodies

    @Test(
        "GET parameters arrive in the query string: escaped per RFC 3986, bools numeric, arrays bracketed, keys sorted"
    )
    func getQueryParameters() async throws {
        // httpbin /anything: echoes `args`; X-Raw-Request-URI shows the query exactly as sent.
        let realm = try HTTPBin.realm()
        let endpoint = TestEndpoint(
            realm, "anything/search",
            parameters: ["q": "a b+c", "flag": true, "ids": [1, 2, 3]])

        let response = try await endpoint.request()
        let echo = try response.echo()

        #expect(echo.method == "GET")
        #expect(echo.args["q"] == .one("a b+c"))
        #expect(echo.args["flag"] == .one("1"))
        #expect(echo.args["ids[]"] == .many(["1", "2", "3"]))
        #expect(echo.args.count == 3)
        #expect(
            response.rawRequestURI
                == "/anything/search?flag=1&ids%5B%5D=1&ids%5B%5D=2&ids%5B%5D=3&q=a%20b%2Bc")
        #expect(echo.data == "")
    }

    @Test("POST parameters are a JSON body that the server parses back to the same values")
    func postJSONParameters() async throws {
        // httpbin /anything: echoes the parsed body in `json` and the Content-Type header.
        let realm = try HTTPBin.realm()
        let endpoint = TestEndpoint(
            realm, "anything/users", method: .post,
            parameters: [
                "name": "Zoë \"quoted\" / slash",
                "count": 42,
                "active": true,
                "ratio": 0.5,
                "tags": ["a", "b"],
                "nested": ["key": "value", "numbers": [1, 2]] as [String: any Sendable],
            ])

        let echo = try await endpoint.request().echo()

        #expect(echo.method == "POST")
        #expect(echo.args.isEmpty)
        #expect(echo.header("Content-Type") == "application/json")
        #expect(
            echo.json
                == .object([
                    "name": .string("Zoë \"quoted\" / slash"),
                    "count": .number(42),
                    "active": .bool(true),
                    "ratio": .number(0.5),
                    "tags": .array([.string("a"), .string("b")]),
                    "nested": .object(["key": .string("value"), "numbers": .array([.number(1), .number(2)])]),
                ]))
    }

    @Test("Form encoding sends an application/x-www-form-urlencoded body that the server parses")
    func postFormParameters() async throws {
        // httpbin /anything: echoes a parsed form body in `form`.
        let realm = try HTTPBin.realm()
        let endpoint = TestEndpoint(
            realm, "anything/form", method: .post,
            parameters: ["name": "a b+c&d=e", "count": 2, "flag": false, "list": ["x", "y"]],
            encoding: .form)

        let echo = try await endpoint.request().echo()

        #expect(echo.method == "POST")
        #expect(echo.header("Content-Type")?.hasPrefix("application/x-www-form-urlencoded") == true)
        #expect(echo.args.isEmpty)
        #expect(
            echo.form
                == [
                    "name": .one("a b+c&d=e"), "count": .one("2"), "flag": .one("0"),
                    "list[]": .many(["x", "y"]),
                ])
    }

    struct Note: Encodable {
        let title: String
        let pages: Int
        let draft: Bool
        let authors: [String]
    }

    @Test("An Encodable body is sent as JSON; the endpoint's parameters then go into the query")
    func encodableBody() async throws {
        // httpbin /anything: echoes `json`, `args` and Content-Type.
        let realm = try HTTPBin.realm()
        let note = Note(title: "Zoë", pages: 3, draft: false, authors: ["ada", "grace"])
        let endpoint = TestEndpoint(
            realm, "anything/notes", method: .post, parameters: ["page": 2], body: .json(note))

        let echo = try await endpoint.request().echo()

        #expect(echo.method == "POST")
        #expect(echo.header("Content-Type") == "application/json")
        #expect(echo.args == ["page": .one("2")])
        #expect(
            echo.json
                == .object([
                    "title": .string("Zoë"), "pages": .number(3), "draft": .bool(false),
                    "authors": .array([.string("ada"), .string("grace")]),
                ]))
    }

    @Test("A raw data body is sent byte for byte with its Content-Type")
    func dataBody() async throws {
        // httpbin /anything: echoes a non-JSON, non-form body as text in `data`.
        let realm = try HTTPBin.realm()
        let text = "line one\nline two ✓"
        let endpoint = TestEndpoint(
            realm, "anything/upload", method: .put,
            body: .data(Data(text.utf8), contentType: "text/plain; charset=utf-8"))

        let echo = try await endpoint.request().echo()

        #expect(echo.method == "PUT")
        #expect(echo.header("Content-Type") == "text/plain; charset=utf-8")
        #expect(echo.data == text)
        #expect(echo.header("Content-Length") == String(Data(text.utf8).count))
    }

    @Test("A raw data body without a Content-Type is sent as application/octet-stream")
    func dataBodyDefaultContentType() async throws {
        // httpbin /anything: echoes the body in `data` and the Content-Type header.
        let realm = try HTTPBin.realm()
        let endpoint = TestEndpoint(
            realm, "anything/blob", method: .post, body: .data(Data("raw bytes".utf8)))

        let echo = try await endpoint.request().echo()

        #expect(echo.header("Content-Type") == "application/octet-stream")
        #expect(echo.data == "raw bytes")
    }

    @Test(
        "An endpoint enum's cases send their path, method and parameters; urlRequest() is what the server saw"
    )
    func endpointEnum() async throws {
        // httpbin /anything/user/info and /anything/user/follow: echo method, URL, args and JSON body.
        let realm = try HTTPBin.realm()
        let recorder = CallbackRecorder<Result<Response, ServiceError>>()
        EchoUserService.info(realm, uid: 42).request { recorder.record($0) }
        let info = try await recorder.first().get().echo()
        #expect(info.method == "GET")
        #expect(info.args == ["uid": .one("42")])
        #expect(info.url == (try EchoUserService.info(realm, uid: 42).urlRequest().url?.absoluteString))
        #expect(info.url == (try httpbinURL("anything/user/info?uid=42")))

        let follow = try await EchoUserService.follow(realm, uid: 7).request(as: Echo.self)
        #expect(follow.method == "POST")
        #expect(follow.json == .object(["id": .number(7)]))
        #expect(follow.url == (try httpbinURL("anything/user/follow")))
        #expect(try await recorder.count(after: 0.3) == 1)
    }

    // MARK: Headers

    @Test(
        "Header layers: realm global < realm per-CRUD < endpoint < one-off override, names case-insensitive")
    func headerPrecedence() async throws {
        // httpbin /anything: echoes the request headers (duplicates would show joined with commas).
        let realm = try HTTPBin.realm()
            .addHeader("X-Layer", withValue: "realm")
            .addHeader("X-Global", withValue: "g")
            .addHeader("x-LAYER", withValue: "per-crud", specificForCRUDMethod: .retrieve)
            .addHeader("X-Retrieve-Only", withValue: "r", specificForCRUDMethod: .retrieve)
            .addHeader("X-Update-Only", withValue: "u", specificForCRUDMethod: .update)

        // PUT is .update under the default map: realm global + .update headers.
        let put = try await TestEndpoint(realm, "anything/layers", method: .put).request().echo()
        #expect(put.method == "PUT")
        #expect(put.header("X-Layer") == "realm")
        #expect(put.header("X-Global") == "g")
        #expect(put.header("X-Update-Only") == "u")
        #expect(put.header("X-Retrieve-Only") == nil)

        // GET is .retrieve: the per-CRUD X-Layer replaces the global one.
        let get = try await TestEndpoint(realm, "anything/layers").request().echo()
        #expect(get.header("X-Layer") == "per-crud")
        #expect(get.header("X-Global") == "g")
        #expect(get.header("X-Retrieve-Only") == "r")
        #expect(get.header("X-Update-Only") == nil)

        // The endpoint's own header, spelt in lower case, replaces both realm layers.
        let withEndpointHeader = TestEndpoint(realm, "anything/layers", headers: ["x-layer": "endpoint"])
        let endpoint = try await withEndpointHeader.request().echo()
        #expect(endpoint.header("X-Layer") == "endpoint")
        #expect(endpoint.header("X-Retrieve-Only") == "r")

        // A one-off override wins over everything, for that request only.
        let overridden =
            try await withEndpointHeader
            .override { configuration in configuration.addHeader("X-LAYER", withValue: "override") }
            .request().echo()
        #expect(overridden.header("X-Layer") == "override")
        #expect(overridden.header("X-Global") == "g")

        let afterOverride = try await withEndpointHeader.request().echo()
        #expect(afterOverride.header("X-Layer") == "endpoint")
    }

    @Test(
        "With .update mapped to PATCH, a PATCH endpoint gets the .update headers and a PUT endpoint does not")
    func perCRUDHeadersFollowTheMap() async throws {
        // httpbin /anything: echoes method and headers.
        let realm = try HTTPBin.realm()
            .addHeader("X-Update-Only", withValue: "u", specificForCRUDMethod: .update)
            .overrideCrudMethod(.update, withHTTPMethod: .patch)

        let patch = try await TestEndpoint(realm, "anything/patched", method: .patch).request().echo()
        #expect(patch.method == "PATCH")
        #expect(patch.header("X-Update-Only") == "u")

        let put = try await TestEndpoint(realm, "anything/patched", method: .put).request().echo()
        #expect(put.method == "PUT")
        #expect(put.header("X-Update-Only") == nil)
    }

    // MARK: Statuses and decoding

    @Test(
        "404 and 500 fail with .unacceptableStatusCode carrying the server's response", arguments: [404, 500])
    func unacceptableStatus(_ status: Int) async throws {
        // httpbin /status/N: answers with status N.
        let realm = try HTTPBin.realm()
        let error = try await #require(throws: ServiceError.self) {
            try await TestEndpoint(realm, "status/\(status)").request()
        }
        #expect(error.kind == .unacceptableStatusCode)
        let response = try #require(error.response)
        #expect(response.statusCode == status)
        #expect(response.response.url?.path == "/status/\(status)")
        #expect(response.rawRequestURI == "/status/\(status)")
    }

    @Test("validStatusCodes can widen success to a 404 and narrow it to exclude a 200")
    func validStatusCodes() async throws {
        // httpbin /status/404 and /status/200.
        let realm = try HTTPBin.realm()
        let widened = TestEndpoint(realm, "status/404", validStatusCodes: StatusCodes.successful.union([404]))
        let response = try await widened.request()
        #expect(response.statusCode == 404)

        let narrowed = TestEndpoint(realm, "status/200", validStatusCodes: [201])
        let error = try await #require(throws: ServiceError.self) { try await narrowed.request() }
        #expect(error.kind == .unacceptableStatusCode)
        #expect(error.response?.statusCode == 200)
    }

    struct Slideshow: Decodable {
        let title: String
        let slides: [String]
    }

    @Test("An HTML body requested as a Decodable fails with .decoding carrying the 200 response")
    func decodingFailure() async throws {
        // httpbin /html: a 200 with an HTML page.
        let realm = try HTTPBin.realm()
        let error = try await #require(throws: ServiceError.self) {
            try await TestEndpoint(realm, "html").request(as: Slideshow.self)
        }
        #expect(error.kind == .decoding)
        let response = try #require(error.response)
        #expect(response.statusCode == 200)
        #expect(String(decoding: response.data, as: UTF8.self).contains("<html>"))
        // The decoder's error, inside the DecodingFailure that names the endpoint and the type.
        let failure = try #require(error.underlyingError as? DecodingFailure)
        #expect(failure.underlying is DecodingError && failure.type == "Slideshow")
    }

    // MARK: Timeouts, cancellation, transport failures

    @Test("A realm timeout of 1 s ends a 60 s request with .timedOut well before the server answers")
    func timeout() async throws {
        try await measuringPromptness {
            // /slow/60 (Tests/Servers/httpbin_app.py): answers after 60 s, far beyond any stall of a loaded
            // machine (the test allows for a busy thread pool, not for that).
            let realm = try HTTPBin.realm(backend: URLSessionBackend()).setTimeout(1)
            let start = ContinuousClock.now
            let error = try await #require(throws: ServiceError.self) {
                try await TestEndpoint(realm, "slow/60").request()
            }
            let elapsed = seconds(since: start)
            #expect(error.kind == .timedOut)
            // Before the server's answer at 60 s, with room for a loaded machine (a CI run under
            // ThreadSanitizer took 5 s to hear the timeout; a stalled process can take 10 to 30 s more).
            #expect(elapsed < 45)
            #expect(elapsed > 0.8)
            #expect(error.request?.timeoutInterval == 1)
        }
    }

    @Test("Cancelling a request's handle delivers .cancelled exactly once, promptly")
    func cancelByHandle() async throws {
        try await measuringPromptness {
            // /slow/60 (Tests/Servers/httpbin_app.py): only the cancellation can end the request within 60 s.
            let realm = try HTTPBin.realm(backend: URLSessionBackend())
            let recorder = CallbackRecorder<Result<Response, ServiceError>>()
            let handle = TestEndpoint(realm, "slow/60").request { recorder.record($0) }
            try await Task.sleep(for: .milliseconds(100))
            #expect(!handle.isFinished)

            let start = ContinuousClock.now
            handle.cancel()
            let result = try await recorder.first(within: 45)

            // Far sooner than the server's answer at 60 s; the bound allows for a loaded machine.
            #expect(seconds(since: start) < 45)
            #expect(result.serviceError?.kind == .cancelled)
            #expect(result.serviceError?.request?.url?.path == "/slow/60")
            #expect(handle.isCancelled)
            #expect(try await recorder.count(after: 0.5) == 1)
        }
    }

    @Test("Cancelling the awaiting task throws .cancelled promptly")
    func cancelByTask() async throws {
        try await measuringPromptness {
            // /slow/60 (Tests/Servers/httpbin_app.py): only the cancellation can end the request within 60 s.
            let realm = try HTTPBin.realm(backend: URLSessionBackend())
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

    @Test("A task cancelled before its request starts gets .cancelled and sends nothing")
    func alreadyCancelledTask() async throws {
        try await measuringPromptness {
            // /slow/60 (Tests/Servers/httpbin_app.py; never reached: nothing should be sent).
            // Nothing sent means nothing waited for the server's 60 s: no clock is needed to tell (one made
            // this test fail under ThreadSanitizer, where a busy pool started the task 8.9 s late).
            let spy = SpyBackend(URLSessionBackend())
            let realm = try HTTPBin.realm(backend: spy)
            let task = Task { () async throws -> Response in
                withUnsafeCurrentTask { $0?.cancel() }
                return try await TestEndpoint(realm, "slow/60").request()
            }
            let result = await task.result

            #expect(result.serviceError?.kind == .cancelled)
            #expect(spy.requests.isEmpty)
        }
    }

    @Test("A refused connection fails with .transport whose description names the URL")
    func connectionRefused() async throws {
        // No server: a closed port on 127.0.0.1.
        let port = try closedPort()
        let realm = uniqueRealm().setBaseURL(try #require(URL(string: "http://127.0.0.1:\(port)")))
        let error = try await #require(throws: ServiceError.self) {
            try await TestEndpoint(realm, "anything/refused").request()
        }
        #expect(error.kind == .transport)
        #expect(error.description.contains("http://127.0.0.1:\(port)/anything/refused"))
        #expect(error.underlyingError != nil)
    }

    // MARK: Redirects

    @Test("A redirect to another host does not carry the realm's Authorization header along")
    func redirectDropsAuthorizationAcrossHosts() async throws {
        // httpbin /redirect-to?url=…: a 302 from 127.0.0.1 to localhost (another origin), whose /anything
        // echoes the headers that followed the redirect. Browsers (Fetch) and curl drop Authorization here;
        // PLATFORM.md notes that URLSession on Linux forwards it unless willPerformHTTPRedirection strips it.
        let port = try #require(try HTTPBin.url().port)
        let realm = try HTTPBin.realm().addHeader("Authorization", withValue: "Bearer realm-secret")
        let endpoint = TestEndpoint(
            realm, "redirect-to", parameters: ["url": "http://localhost:\(port)/anything/elsewhere"])

        let echo = try await endpoint.request().echo()

        #expect(echo.url == "http://localhost:\(port)/anything/elsewhere")
        #expect(
            echo.header("Authorization") == nil,
            "forwarded to another host: \(echo.header("Authorization") ?? "")")
    }

    // MARK: Error descriptions

    enum Failure: String, CaseIterable, Sendable {
        case invalidRequest, transport, timedOut, cancelled, unacceptableStatusCode, decoding
    }

    @Test("Every failure's description names the method and the URL", arguments: Failure.allCases)
    func errorDescriptions(_ failure: Failure) async throws {
        // httpbin /anything, /slow/30, /slow/60, /status/500 or /html, or a closed port, by case.
        let realm = try HTTPBin.realm(backend: URLSessionBackend())
        let method: HTTPMethod
        let url: String
        let error: ServiceError
        switch failure {
        case .invalidRequest:
            method = .post
            url = try httpbinURL("anything/bad-header")
            let endpoint = TestEndpoint(
                realm, "anything/bad-header", method: .post, headers: ["X-Bad": "a\r\nb"])
            error = try await #require(throws: ServiceError.self) { try await endpoint.request() }
        case .transport:
            method = .get
            let port = try closedPort()
            url = "http://127.0.0.1:\(port)/anything/refused"
            let endpoint = TestEndpoint(
                realm, "anything/refused", baseURL: URL(string: "http://127.0.0.1:\(port)"))
            error = try await #require(throws: ServiceError.self) { try await endpoint.request() }
        case .timedOut:
            method = .patch
            // /slow/30: the 0.5 s timeout ends the request long before the answer, even on a loaded machine.
            url = try httpbinURL("slow/30")
            let endpoint = TestEndpoint(realm, "slow/30", method: .patch)
            error = try await #require(throws: ServiceError.self) {
                try await endpoint.override { $0.setTimeout(0.5) }.request()
            }
        case .cancelled:
            method = .delete
            // /slow/60: only the cancellation can end the request within 60 s, even on a loaded machine.
            url = try httpbinURL("slow/60")
            let task = Task { try await TestEndpoint(realm, "slow/60", method: .delete).request() }
            try await Task.sleep(for: .milliseconds(100))
            task.cancel()
            error = try #require(await task.result.serviceError)
        case .unacceptableStatusCode:
            method = .put
            url = try httpbinURL("status/500")
            error = try await #require(throws: ServiceError.self) {
                try await TestEndpoint(realm, "status/500", method: .put).request()
            }
        case .decoding:
            method = .get
            url = try httpbinURL("html")
            error = try await #require(throws: ServiceError.self) {
                try await TestEndpoint(realm, "html").request(as: Slideshow.self)
            }
        }
        #expect(error.kind.rawValue == failure.rawValue)
        #expect(error.description.contains(method.rawValue), "\(error.description)")
        #expect(error.description.contains(url), "\(error.description)")
        #expect(error.localizedDescription == error.description)
    }

    // MARK: Concurrency and callback queues

    @Test(
        "500 concurrent requests while the realm's headers keep changing all succeed and never see a torn pair"
    )
    func concurrentRequestsWhileTheRealmChanges() async throws {
        try await underLoad {
            // httpbin /anything: echoes the headers each request carried.
            let realm = try HTTPBin.realm(backend: URLSessionBackend())
            realm.configure { configuration in
                configuration.addHeader("X-Version", withValue: "0")
                configuration.addHeader("X-Version-Copy", withValue: "0")
            }
            // The mutator is a thread of its own: a busy cooperative pool (sanitizers, a loaded machine) must not
            // keep it from changing the realm while the requests are built.
            let stop = Collected<Bool>()
            let versions = Collected<Int>()
            Thread.detachNewThread {
                var version = 0
                while stop.all.isEmpty {
                    version += 1
                    let value = String(version)
                    realm.configure { configuration in
                        configuration.addHeader("X-Version", withValue: value)
                        configuration.addHeader("X-Version-Copy", withValue: value)
                    }
                    Thread.sleep(forTimeInterval: 0.001)
                }
                versions.add(version)
            }
            let endpoint = TestEndpoint(realm, "anything/concurrent", parameters: ["probe": true])

            let start = ContinuousClock.now
            let pairs = try await withThrowingTaskGroup(of: (String?, String?).self) { group in
                for _ in 0..<500 {
                    group.addTask {
                        // Spread the builds over a few hundred milliseconds, so they meet many versions.
                        try await Task.sleep(for: .milliseconds(Int.random(in: 0..<300)))
                        let echo = try await endpoint.request().echo()
                        return (echo.header("X-Version"), echo.header("X-Version-Copy"))
                    }
                }
                var pairs: [(String?, String?)] = []
                for try await pair in group { pairs.append(pair) }
                return pairs
            }
            stop.add(true)
            while versions.all.isEmpty { try await Task.sleep(for: .milliseconds(5)) }
            let changes = versions.all[0]

            #expect(pairs.count == 500)
            let torn = pairs.filter { $0.0 == nil || $0.0 != $0.1 }
            #expect(torn.isEmpty, "torn or missing pairs: \(torn.prefix(5))")
            // The test only means something if the realm really changed while requests were built.
            #expect(changes > 1)
            #expect(Set(pairs.compactMap(\.0)).count > 1)
            #expect(seconds(since: start) < 30)
        }
    }

    @Test("Callbacks run on the realm's callback queue: success, failure before sending, and cancellation")
    func callbackQueue() async throws {
        try await measuringPromptness {
            // httpbin /anything (success) and /slow/60 (cancelled); the invalid header fails before sending.
            let marker = QueueMarker(label: "swiftyservice.tests.callbacks")
            let realm = try HTTPBin.realm(backend: URLSessionBackend()).setCallbackQueue(marker.queue)

            let success = CallbackRecorder<(Bool, Result<Response, ServiceError>)>()
            TestEndpoint(realm, "anything/queued").request { success.record((marker.isCurrent, $0)) }
            let (successOnQueue, successResult) = try await success.first(within: 30)
            #expect(successOnQueue)
            #expect(successResult.serviceError == nil)

            let early = CallbackRecorder<(Bool, Result<Response, ServiceError>)>()
            TestEndpoint(realm, "anything/queued", headers: ["X-Bad": "a\nb"]).request {
                early.record((marker.isCurrent, $0))
            }
            let (earlyOnQueue, earlyResult) = try await early.first(within: 30)
            #expect(earlyOnQueue)
            #expect(earlyResult.serviceError?.kind == .invalidRequest)

            let cancelled = CallbackRecorder<(Bool, Result<Response, ServiceError>)>()
            let handle = TestEndpoint(realm, "slow/60").request { cancelled.record((marker.isCurrent, $0)) }
            try await Task.sleep(for: .milliseconds(100))
            handle.cancel()
            // Within 40 s, far before /slow/60 could answer: the wait polls on the shared pool, which runs
            // late under ThreadSanitizer; the bound allows for a loaded machine.
            let (cancelOnQueue, cancelResult) = try await cancelled.first(within: 40)
            #expect(cancelOnQueue)
            #expect(cancelResult.serviceError?.kind == .cancelled)

            #expect(try await success.count(after: 0.3) == 1)
            #expect(early.calls.count == 1)
            #expect(cancelled.calls.count == 1)
        }
    }
}
