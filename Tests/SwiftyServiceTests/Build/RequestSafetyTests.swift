import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a request may never become, whatever its path, parameters or middleware hold: a request out of its
/// base path, a stack overflow, a megabyte URL, a header that smuggles a line. Each is refused before
/// anything is sent, on every backend, with an error that names the cause and never a header's value.
@Suite("Request safety", .timeLimit(.minutes(5)), .tags(.realServer))
struct RequestSafetyTests {
    /// A realm on httpbin's `/anything/api/v1` behind a spy that records what reaches the backend.
    func realm(_ kind: ConformingBackend) throws -> (ServiceRealm, SpyBackend) {
        let spy = SpyBackend(try kind.make())
        return (try HTTPBin.realm("anything/api/v1", backend: spy), spy)
    }

    func invalidReason(_ endpoint: TestEndpoint) async -> ServiceError.InvalidRequestReason? {
        do {
            _ = try await endpoint.request()
            return nil
        } catch let ServiceError.invalidRequest(reason, _, _) {
            return reason
        } catch {
            return nil
        }
    }

    // MARK: Paths

    @Test(arguments: ConformingBackend.allCases)
    func dotSegmentsInAPathAreRefusedAndNothingIsSent(_ kind: ConformingBackend) async throws {
        // httpbin would receive /admin for ../../admin: dot segments are removed on the way.
        let (realm, spy) = try realm(kind)
        for path in ["../../admin", "users/../../admin", "a/./b", "..", ".", "x/.."] {
            let reason = await invalidReason(TestEndpoint(realm, path))
            #expect(reason == .dotSegment(path: path), "\(kind) \(path)")
        }
        #expect(spy.requests.isEmpty)
        // Dots that are not a whole segment, and a literal `%2E%2E` (sent as `%252E%252E`), are plain text.
        let echo = try await TestEndpoint(realm, "v..1/.well-known/...").request()
        #expect(echo.rawRequestURI == "/anything/api/v1/v..1/.well-known/...")
        let literal = try await TestEndpoint(realm, "files/%2E%2E").request()
        #expect(literal.rawRequestURI == "/anything/api/v1/files/%252E%252E")
    }

    @Test(arguments: ConformingBackend.allCases)
    func aPathSegmentValueStaysOneSegmentOnTheWire(_ kind: ConformingBackend) async throws {
        // httpbin's X-Raw-Request-URI shows the request target exactly as it arrived.
        let (realm, spy) = try realm(kind)
        let hostile = [
            "../../admin", "a/b", "?x=1#f", "%2e%2e", "ü b", "...",
            Self.marker(0xFDD0) + "x" + Self.marker(0xFDD1),
        ]
        for value in hostile {
            let response = try await TestEndpoint(realm, "users/\(pathSegment: value)/posts").request()
            let raw = try #require(response.rawRequestURI)
            let segment = raw.dropFirst("/anything/api/v1/users/".count).dropLast("/posts".count)
            #expect(raw.hasPrefix("/anything/api/v1/users/") && raw.hasSuffix("/posts"), "\(kind) \(raw)")
            #expect(!segment.contains("/") && !segment.contains("?") && !segment.contains("#"), "\(raw)")
            #expect(String(segment).removingPercentEncoding == value, "\(kind) \(value.debugDescription)")
        }
        let sent = spy.requests.count
        for value in ["", ".", ".."] {
            let reason = await invalidReason(TestEndpoint(realm, "users/\(pathSegment: value)"))
            #expect(reason != nil, "\(kind) \(value.debugDescription)")
        }
        #expect(spy.requests.count == sent, "nothing more was sent")
    }

    @Test func aForgedSegmentMarkerInThePathIsRefused() async {
        // Markers that \(pathSegment:) did not write cannot smuggle a `..` or a raw `/` past the checks: only
        // what it would write for some value passes.
        let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com/v1")!).use(.stub)
        for forged in ["%2E%2E", "a/b", "%2e.", "", "x?y"] {
            let path = "users/" + Self.marker(0xFDD0) + forged + Self.marker(0xFDD1)
            #expect(await invalidReason(TestEndpoint(realm, path)) != nil, "\(forged)")
        }
    }

    /// A Unicode noncharacter, which Swift literals cannot spell.
    static func marker(_ scalar: UInt32) -> String { String(Character(Unicode.Scalar(scalar)!)) }

    // MARK: Parameters

    static func nested(depth: Int, leaf: any Sendable = 1) -> [String: any Sendable] {
        var value: any Sendable = leaf
        for _ in 1..<depth { value = ["n": value] as [String: any Sendable] }
        return ["n": value]
    }

    @Test(arguments: [HTTPMethod.get, .post])
    func parametersNestedDeeperThanTheLimitAreRefusedNotACrash(_ method: HTTPMethod) async throws {
        // Depth 10,000 overflowed the stack on the way to the query string and to the JSON body alike.
        let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com/v1")!).use(.stub)
        let endpoint = TestEndpoint(
            realm, "x", method: method, parameters: ["deep": Self.nested(depth: 10_000)])
        let reason = await invalidReason(endpoint)
        guard case let .unencodableParameter(key, why)? = reason else {
            Issue.record("expected unencodableParameter, got \(String(describing: reason))")
            return
        }
        #expect(why.contains("deeper than 100 levels"))
        #expect(key.hasPrefix("deep[n][n]") && key.count < 1_000)
    }

    @Test(arguments: ConformingBackend.allCases)
    func parametersAtTheDepthLimitArriveWhole(_ kind: ConformingBackend) async throws {
        // httpbin /anything echoes the JSON body it parsed.
        let (realm, _) = try realm(kind)
        let deep = Self.nested(depth: 99, leaf: "bottom")
        let echo = try await TestEndpoint(realm, "deep", method: .post, parameters: deep).request().echo()
        var level = echo.json
        var depth = 0
        while case let .object(object)? = level, let inner = object["n"] {
            level = inner
            depth += 1
        }
        #expect(depth == 99 && level == .string("bottom"), "\(kind)")
    }

    @Test func manyNestedValuesBuildPromptly() async throws {
        // 20,000 keys each a chain 50 deep took 5.2 s, and depth 3,000 took 23 s: writing was quadratic.
        // Ten times the chains must take about ten times as long, not a hundred: the bound is measured against
        // a tenth of the input in the same run, so it holds on a slow machine or under a sanitizer too. Run
        // off the two threads that every suite's tasks share, and timed in the CPU time of that thread: in wall
        // time, on a machine loaded by other work, the larger build once took 41 times the smaller one's time.
        // The figures are in the Security and TLS article.
        let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com/v1")!).use(.stub)
        func chains(_ count: Int) -> [String: any Sendable] {
            var wide: [String: any Sendable] = [:]
            for key in 0..<count { wide["k\(key)"] = Self.nested(depth: 50) }
            return wide
        }
        let (small, large) = (chains(200), chains(2_000))
        let (tenth, whole) = try await onThreadOfItsOwn {
            func threadCPUSeconds() -> Double {
                var time = timespec()
                clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
                return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
            }
            func build(_ parameters: [String: any Sendable]) throws -> Double {
                let start = threadCPUSeconds()
                _ = try TestEndpoint(realm, "x", method: .post, parameters: parameters).urlRequest()
                _ = try TestEndpoint(realm, "x", method: .post, parameters: parameters, encoding: .form)
                    .urlRequest()
                return threadCPUSeconds() - start
            }
            return (try build(small), try build(large))
        }
        #expect(whole < 30 * tenth + 1, "2,000 chains took \(whole) s, 200 took \(tenth) s")
    }

    // MARK: URLs

    @Test func aURLOverTheLimitIsRefusedWithAShortDescription() async throws {
        // Nothing reaches a backend, so one is enough; before, a 1 MB query failed as "Out of memory" and a
        // 10 MB one made a 10-million-character description.
        let (realm, spy) = try realm(.curl)
        for size in [1 << 20, 10 << 20] {
            let query = String(repeating: "a", count: size)
            let error = try await onThreadOfItsOwn { () -> ServiceError? in
                do {
                    _ = try TestEndpoint(realm, "q", parameters: ["q": query]).urlRequest()
                    return nil
                } catch let error as ServiceError {
                    return error
                }
            }
            guard case let .invalidRequest(.urlTooLong(length), _, _)? = error, let error else {
                Issue.record("expected urlTooLong, got \(String(describing: error))")
                continue
            }
            #expect(length > size)
            #expect(error.description.count < 1_300, "\(error.description.count) characters")
            #expect(error.description.contains("\(length) characters"))
            #expect(error.url.count < 1_300)
        }
        await #expect(throws: ServiceError.self) {
            try await TestEndpoint(realm, "q", parameters: ["q": String(repeating: "a", count: 1 << 20)])
                .request()
        }
        #expect(spy.requests.isEmpty)
        let fits = TestEndpoint(realm, "q", parameters: ["q": String(repeating: "a", count: 60_000)])
        _ = try? await fits.request()
        #expect(spy.requests.count == 1, "a URL under the limit is sent")
    }

    // MARK: What middleware may not do

    /// Replaces the request's headers (URLRequest's `setValue` on Linux silently ignores a value with CR or
    /// LF; the whole dictionary keeps it) or its URL.
    struct Tamper: Middleware {
        var headers: HTTPHeaderDictionary?
        var url: URL?
        func intercept(_ request: URLRequest, context: RequestContext, next: MiddlewareNext) async throws
            -> Response
        {
            var request = request
            if let headers { request.allHTTPHeaderFields = headers }
            if let url { request.url = url }
            return try await next(request)
        }
    }

    @Test(arguments: ConformingBackend.allCases)
    func aMiddlewareCannotSendAControlCharacterInAHeader(_ kind: ConformingBackend) async throws {
        let (realm, spy) = try realm(kind)
        let secret = "s3cret-value"
        for value in ["\(secret)\r\nX-Injected: 1", "\(secret)\nX", "\(secret)\r", "\(secret)\u{0}"] {
            let endpoint = TestEndpoint(realm, "h").override {
                $0.addMiddleware(Tamper(headers: ["X-Trace": value]))
            }
            let error = await #expect(throws: ServiceError.self) { try await endpoint.request() }
            #expect(error.map { "\($0)" }?.contains(secret) == false, "\(kind): the value is never printed")
            guard case .invalidRequest(.invalidHeaderValue(name: "X-Trace"), _, _)? = error else {
                Issue.record(
                    "\(kind): expected invalidHeaderValue(X-Trace), got \(String(describing: error))")
                continue
            }
        }
        let badName = TestEndpoint(realm, "h").override {
            $0.addMiddleware(Tamper(headers: ["Bad Name": "v"]))
        }
        do {
            _ = try await badName.request()
            Issue.record("\(kind): a header name with a space was sent")
        } catch let ServiceError.invalidRequest(reason, _, _) {
            #expect(reason == .invalidHeaderName("Bad Name"))
        }
        #expect(spy.requests.isEmpty, "\(kind): nothing was sent")
    }

    @Test(arguments: ConformingBackend.allCases)
    func aMiddlewareCannotSendToAnotherScheme(_ kind: ConformingBackend) async throws {
        let (realm, spy) = try realm(kind)
        for target in ["file:///etc/hostname", "gopher://127.0.0.1:1/_x", "ftp://127.0.0.1/x"] {
            let endpoint = TestEndpoint(realm, "s").override {
                $0.addMiddleware(Tamper(url: URL(string: target)!))
            }
            do {
                _ = try await endpoint.request()
                Issue.record("\(kind): \(target) was sent")
            } catch let ServiceError.invalidRequest(reason, _, _) {
                guard case .unsupportedScheme = reason else {
                    Issue.record("\(kind): expected unsupportedScheme, got \(reason)")
                    continue
                }
            }
        }
        #expect(spy.requests.isEmpty)
    }
}

/// Runs CPU-heavy work on a thread of its own, so that it does not hold one of the two threads that every
/// suite's tasks share (and make unrelated timing tests late).
func onThreadOfItsOwn<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}
