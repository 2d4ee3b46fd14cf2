import Foundation
import LegacyNetworking
import ProcessProbes
import SwiftyService
import SwiftyServiceCurl
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The backends every conformance test runs against.
enum ConformingBackend: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case urlSession
    case curl
    case legacy

    var testDescription: String { rawValue }

    func make() throws -> any NetworkBackend {
        switch self {
        case .urlSession: URLSessionBackend()
        case .curl: try CurlBackend()
        case .legacy: LegacyBackend(client: LegacyHTTPClient())
        }
    }
}

/// What every backend must do the same, against httpbin: a difference is a failing test.
@Suite("Backend conformance", .timeLimit(.minutes(5)), .tags(.realServer))
struct BackendConformanceTests {
    let temporaryFiles = TemporaryFiles()

    func realm(_ kind: ConformingBackend) throws -> ServiceRealm {
        try HTTPBin.realm(backend: try kind.make())
    }

    @Test(arguments: ConformingBackend.allCases)
    func methodsArriveAsSent(_ kind: ConformingBackend) async throws {
        // httpbin /anything echoes the method; HEAD has no body to echo, so its status stands for it.
        let realm = try realm(kind)
        for method in [HTTPMethod.get, .post, .put, .patch, .delete] {
            let echo = try await TestEndpoint(realm, "anything/m", method: method).request().echo()
            #expect(echo.method == method.rawValue, "\(kind) \(method)")
        }
        let head = try await TestEndpoint(realm, "anything/m", method: .head).request()
        #expect(head.statusCode == 200 && head.data.isEmpty)
    }

    @Test(arguments: ConformingBackend.allCases)
    func headersQueryAndBodiesArriveIntact(_ kind: ConformingBackend) async throws {
        // httpbin /anything echoes args, headers, JSON and form bodies.
        let realm = try realm(kind).addHeader("X-Realm", withValue: "r1")
        let echo = try await TestEndpoint(
            realm, "anything/h", parameters: ["q": "a b+c", "ids": [1, 2]], headers: ["X-Endpoint": "e 2"]
        ).request().echo()
        #expect(echo.args["q"] == .one("a b+c") && echo.args["ids[]"] == .many(["1", "2"]))
        #expect(echo.header("X-Realm") == "r1" && echo.header("X-Endpoint") == "e 2")

        let json = try await TestEndpoint(
            realm, "anything/j", method: .post, parameters: ["s": "ü", "n": 2, "b": true]
        )
        .request().echo()
        #expect(json.json == .object(["s": .string("ü"), "n": .number(2), "b": .bool(true)]))
        #expect(json.header("Content-Type") == "application/json")

        let form = try await TestEndpoint(
            realm, "anything/f", method: .post, parameters: ["a": "1 2"], encoding: .form
        ).request().echo()
        #expect(form.form?["a"] == .one("1 2"))

        let bytes = patternData(count: 50_000, step: 7)
        let raw = try await TestEndpoint(realm, "echo-raw", method: .put, body: .data(bytes)).request()
        #expect(raw.data == bytes)
    }

    @Test(arguments: ConformingBackend.allCases)
    func aResponseAndAnErrorNameTheRequestAsBuilt(_ kind: ConformingBackend) async throws {
        // The builder writes no URLRequest: the one a response or an error names is made when asked for, and
        // must be the request `urlRequest()` shows, whichever backend sent it.
        let realm = try realm(kind).addHeader("X-Realm", withValue: "r1").setTimeout(17)
            .overrideGlobalCachePolicy(.reloadIgnoringLocalCacheData)
        let endpoint = TestEndpoint(
            realm, "anything/built", method: .post, parameters: ["n": 1], headers: ["X-Endpoint": "e"])
        let built = try endpoint.urlRequest()
        func expectSame(_ request: URLRequest?, _ comment: Comment) {
            #expect(request?.url == built.url, comment)
            #expect(request?.httpMethod == "POST", comment)
            #expect(request?.allHTTPHeaderFields == built.allHTTPHeaderFields, comment)
            #expect(request?.httpBody == built.httpBody && built.httpBody == Data(#"{"n":1}"#.utf8), comment)
            #expect(request?.timeoutInterval == 17, comment)
            #expect(request?.cachePolicy == .reloadIgnoringLocalCacheData, comment)
        }
        let response = try await endpoint.request()
        // Asked for by many tasks at once, it is made once: every task sees the same request.
        let seen = await withTaskGroup(of: URLRequest.self) { group in
            for _ in 0..<8 { group.addTask { response.request } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        for request in seen { expectSame(request, "\(kind): the response's request") }
        let failing = TestEndpoint(realm, "status/404", method: .post, parameters: ["n": 1])
        let error = await #expect(throws: ServiceError.self) { try await failing.request() }
        #expect(error?.request?.url?.path == "/status/404", "\(kind)")
        #expect(error?.request?.timeoutInterval == 17, "\(kind)")
        #expect(error?.request?.httpBody == Data(#"{"n":1}"#.utf8), "\(kind)")
    }

    @Test(arguments: ConformingBackend.allCases)
    func aNameRepeatedInAnySpellingIsOneHeaderOfJoinedValues(_ kind: ConformingBackend) async throws {
        // httpbin /response-headers sends a field per query item: here "X-Dup: a", then "x-dup: b".
        let response = try await TestEndpoint(
            try realm(kind), "response-headers", parameters: ["X-Dup": "a", "x-dup": "b", "X-One": "c"]
        ).request()
        let joined = try #require(response.header("X-DUP"), "\(kind)")
        // FoundationNetworking keeps the two spellings as two entries and loses which came first.
        #expect(joined.components(separatedBy: ", ").sorted() == ["a", "b"], "\(kind): \(joined)")
        if kind == .curl { #expect(joined == "a, b", "in the order they came") }
        #expect(response.header("x-one") == "c", "\(kind)")
        #expect(response.header("X-Missing") == nil, "\(kind)")
    }

    @Test(arguments: ConformingBackend.allCases)
    func largeBodiesGoBothWays(_ kind: ConformingBackend) async throws {
        // httpbin /echo-raw returns the 1 MB body; /bytes/N sends N bytes.
        let realm = try realm(kind)
        let big = patternData(count: 1 << 20, step: 13)
        #expect(
            try await TestEndpoint(realm, "echo-raw", method: .post, body: .data(big)).request().data == big)
        #expect(try await TestEndpoint(realm, "bytes/102400").request().data.count == 102_400)
        let file = temporaryFiles.uniquePath("conformance").appendingPathExtension("bin")
        try big.write(to: file)
        #expect(
            try await TestEndpoint(realm, "echo-raw", method: .post, body: .file(file)).request().data == big)
    }

    @Test(arguments: ConformingBackend.allCases)
    func statusesComeBackAsAnswers(_ kind: ConformingBackend) async throws {
        // httpbin /status/N answers N; /basic-auth challenges with 401 and WWW-Authenticate: Basic.
        let realm = try realm(kind)
        for status in [201, 204, 404, 418, 500, 503] {
            let response = try await TestEndpoint(realm, "status/\(status)", validStatusCodes: .all).request()
            #expect(response.statusCode == status, "\(kind) \(status)")
        }
        let challenged = try await TestEndpoint(realm, "basic-auth/user/pass", validStatusCodes: .all)
            .request()
        #expect(challenged.statusCode == 401)
        let authorized = try await TestEndpoint(
            realm, "basic-auth/user/pass", headers: ["Authorization": "Basic dXNlcjpwYXNz"]
        ).request()
        #expect(authorized.statusCode == 200)
    }

    @Test(arguments: ConformingBackend.allCases)
    func compressedBodiesAreDecoded(_ kind: ConformingBackend) async throws {
        // httpbin /gzip and /deflate answer compressed JSON.
        let realm = try realm(kind)
        for path in ["gzip", "deflate"] {
            let body = try await TestEndpoint(realm, path).request().mapJSON() as? [String: Any]
            #expect(body?[path == "gzip" ? "gzipped" : "deflated"] as? Bool == true, "\(kind) \(path)")
        }
    }

    @Test(arguments: ConformingBackend.allCases)
    func theCodingsItDecodesAreOfferedUnlessTheRequestSetsItsOwn(_ kind: ConformingBackend) async throws {
        // httpbin /headers echoes the request's fields (a field sent twice, joined with a comma).
        let realm = try realm(kind)
        func acceptEncoding(_ headers: HTTPHeaderDictionary? = nil) async throws -> String? {
            let body = try await TestEndpoint(realm, "headers", headers: headers).request().mapJSON()
            return ((body as? [String: Any])?["headers"] as? [String: Any])?["Accept-Encoding"] as? String
        }
        let offered = Set((try await acceptEncoding() ?? "").split(separator: ",").map {
            $0.trimmingCharacters(in: .whitespaces)
        })
        #expect(offered.isSuperset(of: ["gzip", "deflate"]), "\(kind): \(offered)")
        // A request's own field goes as it set it, once, whatever the case of its name.
        #expect(try await acceptEncoding(["accept-encoding": "identity"]) == "identity", "\(kind)")
        #expect(try await acceptEncoding(["Accept-Encoding": "gzip"]) == "gzip", "\(kind)")
        // And what comes compressed under it is decoded all the same.
        let body = try await TestEndpoint(realm, "gzip", headers: ["Accept-Encoding": "gzip"]).request().mapJSON()
        #expect((body as? [String: Any])?["gzipped"] as? Bool == true, "\(kind)")
    }

    @Test(arguments: ConformingBackend.allCases)
    func aSilentServerTimesOutAtTheTimeout(_ kind: ConformingBackend) async throws {
        try await measuringPromptness {
            // /slow/60 (Tests/Servers/httpbin_app.py) says nothing for 60 s; the realm allows 1.
            let realm = try realm(kind).setTimeout(1)
            let start = Date()
            await #expect {
                try await TestEndpoint(realm, "slow/60").request()
            } throws: { ($0 as? ServiceError)?.kind == .timedOut }
            #expect(
                Date().timeIntervalSince(start) < 20,
                "before the server's answer at 60 s, with room for a loaded machine")
        }
    }

    @Test(arguments: ConformingBackend.allCases)
    func aTimeoutNoTransportCanCountIsNeverACrash(_ kind: ConformingBackend) async throws {
        // URLSession on Linux traps on a timeoutInterval it cannot make an integer of. A realm's timeout is
        // checked when the request is built; a middleware can still set any value on the URLRequest.
        struct SetTimeout: Middleware {
            let seconds: TimeInterval
            func intercept(_ request: URLRequest, context: RequestContext, next: MiddlewareNext) async throws
                -> Response
            {
                var request = request
                request.timeoutInterval = seconds
                return try await next(request)
            }
        }
        let realm = try realm(kind).setTimeout(.infinity)
        #expect(try await TestEndpoint(realm, "get").request().statusCode == 200, "\(kind) infinity")
        for seconds in [TimeInterval.nan, .infinity, 1e300, -.infinity, 0, -1] {
            realm.configure { $0.addMiddleware(SetTimeout(seconds: seconds)) }
            #expect(try await TestEndpoint(realm, "get").request().statusCode == 200, "\(kind) \(seconds)")
        }
    }

    @Test(arguments: ConformingBackend.allCases)
    func cancellingStopsTheTransferPromptly(_ kind: ConformingBackend) async throws {
        try await measuringPromptness {
            // /slow/60 (Tests/Servers/httpbin_app.py): only the cancellation can end it within 60 s.
            let realm = try realm(kind)
            let task = Task { try await TestEndpoint(realm, "slow/60").request() }
            try await Task.sleep(nanoseconds: 200_000_000)
            let start = Date()
            task.cancel()
            await #expect { try await task.value } throws: { ($0 as? ServiceError)?.kind == .cancelled }
            #expect(
                Date().timeIntervalSince(start) < 30,
                "before the server's answer at 60 s, with room for a loaded machine")
        }
    }

    @Test(arguments: ConformingBackend.allCases)
    func aRefusedConnectionIsATransportError(_ kind: ConformingBackend) async throws {
        let realm = uniqueRealm().setBaseURL(URL(string: "http://127.0.0.1:\(try closedPort())")!).use(
            try kind.make())
        await #expect {
            try await TestEndpoint(realm, "x").request()
        } throws: { ($0 as? ServiceError)?.kind == .transport }
    }

    @Test(arguments: ConformingBackend.allCases)
    func redirectsDropSecretsAcrossOriginsAndKeepThemWithin(_ kind: ConformingBackend) async throws {
        // httpbin /redirect-to: to localhost (another origin) and to 127.0.0.1 (the same one).
        let realm = try realm(kind).addHeaders([
            "Authorization": "Bearer s3cret", "X-Api-Key": "k3y", "X-Trace": "t",
        ])
        .declareSecrets(headers: ["X-Api-Key"])
        let port = try HTTPBin.url().port!
        let away = try await TestEndpoint(
            realm, "redirect-to", parameters: ["url": "http://localhost:\(port)/anything/away"]
        ).request().echo()
        #expect(away.header("Authorization") == nil && away.header("X-Api-Key") == nil, "\(kind)")
        #expect(away.header("X-Trace") == "t")
        let home = try await TestEndpoint(
            realm, "redirect-to", parameters: ["url": "http://127.0.0.1:\(port)/anything/home"]
        ).request().echo()
        #expect(
            home.header("Authorization") == "Bearer s3cret" && home.header("X-Api-Key") == "k3y", "\(kind)")
    }

    @Test(arguments: ConformingBackend.allCases)
    func aRedirectedPOSTKeepsItsBodyOn307AndBecomesAGETOn302(_ kind: ConformingBackend) async throws {
        // httpbin /redirect-to with status_code: 307 keeps method and body, 302 turns a POST into a GET.
        let realm = try realm(kind)
        let port = try HTTPBin.url().port!
        func post(_ status: Int) async throws -> Echo {
            try await TestEndpoint(
                realm, "redirect-to", method: .post,
                parameters: ["url": "http://127.0.0.1:\(port)/anything/after", "status_code": status],
                encoding: .query,
                body: .json(["kept": true])
            ).request().echo()
        }
        let kept = try await post(307)
        #expect(kept.method == "POST" && kept.json == .object(["kept": .bool(true)]), "\(kind)")
        let turned = try await post(302)
        #expect(turned.method == "GET" && (turned.data ?? "").isEmpty, "\(kind)")
    }

    @Test(arguments: ConformingBackend.allCases)
    func tooManyRedirectsFail(_ kind: ConformingBackend) async throws {
        // httpbin /redirect/N redirects N times; the default policy follows 10.
        let realm = try realm(kind)
        #expect(try await TestEndpoint(realm, "redirect/3").request().statusCode == 200)
        do {
            _ = try await TestEndpoint(realm, "redirect/12").request()
            Issue.record("\(kind): expected too many redirects")
        } catch let ServiceError.transport(_, underlying, _) {
            #expect((underlying as? URLError)?.code == .httpTooManyRedirects, "\(kind)")
        }
    }

    @Test(arguments: ConformingBackend.allCases)
    func manyConcurrentRequestsAllSucceed(_ kind: ConformingBackend) async throws {
        // httpbin /anything/n/{i}: each request its own path, echoed back.
        let realm = try realm(kind)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<40 {
                group.addTask {
                    let echo = try await TestEndpoint(realm, "anything/n/\(index)").request().echo()
                    #expect(echo.url.hasSuffix("/anything/n/\(index)"))
                }
            }
            try await group.waitForAll()
        }
    }

    @Test(arguments: ConformingBackend.allCases)
    func downloadsLandInFilesAndProgressEndsAt100Percent(_ kind: ConformingBackend) async throws {
        // httpbin /bytes/N to a file; /drip with progress.
        let realm = try realm(kind)
        let file = temporaryFiles.uniquePath("conformance").appendingPathComponent("d.bin")
        let saved = try await DownloadEndpoint(realm: realm, path: "bytes/65536", destination: .file(file))
            .request()
        let downloaded = try Data(contentsOf: file)
        #expect(saved.fileURL == file && downloaded.count == 65_536)
        let steps = ProgressLog()
        let dripped = try await TestEndpoint(
            realm, "drip", parameters: ["numbytes": 500, "duration": 0.5, "delay": 0]
        )
        .transfer(progress: { steps.add($0) })
        #expect(dripped.data.count == 500)
        #expect(steps.all.last == TransferProgress(direction: .download, completed: 500, expected: 500))
    }
}
