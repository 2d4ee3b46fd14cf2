import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Bad input is a typed `.invalidRequest` naming the URL and the cause, and nothing is sent.
@Suite struct InvalidRequestTests {
    let spy = SpyBackend()
    let realm: ServiceRealm

    init() {
        realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com/v1")!).use(spy)
    }

    /// Sends `endpoint` both ways and returns the reason, checking the callback ran once and nothing was sent.
    func reason(_ endpoint: TestEndpoint, sourceLocation: SourceLocation = #_sourceLocation) async throws
        -> ServiceError.InvalidRequestReason?
    {
        let recorder = CallbackRecorder<Result<Response, ServiceError>>()
        endpoint.request { recorder.record($0) }
        let viaCallback = try await recorder.first()
        #expect(recorder.calls.count == 1, sourceLocation: sourceLocation)
        var viaAsync: ServiceError?
        do { _ = try await endpoint.request() } catch let error as ServiceError { viaAsync = error }
        #expect(spy.requests.isEmpty, "nothing may be sent", sourceLocation: sourceLocation)
        guard case let .failure(.invalidRequest(reason, method, url)) = viaCallback,
            case let .invalidRequest(asyncReason, _, _)? = viaAsync
        else {
            Issue.record(
                "expected .invalidRequest, got \(viaCallback) / \(String(describing: viaAsync))",
                sourceLocation: sourceLocation)
            return nil
        }
        #expect(reason == asyncReason, sourceLocation: sourceLocation)
        #expect(method == endpoint.method, sourceLocation: sourceLocation)
        #expect(url.hasSuffix(endpoint.path), "the error names the URL", sourceLocation: sourceLocation)
        return reason
    }

    @Test(
        "A timeout that is not more than 0 seconds fails the request, naming it; a huge one is kept, bounded")
    func timeoutsMustBeMoreThanZeroSeconds() async throws {
        for value in [TimeInterval.nan, 0, -1, -TimeInterval.infinity] {
            realm.setTimeout(value).setResourceTimeout(nil)
            let timeout = try await reason(TestEndpoint(realm, "slow"))
            #expect(timeout == .invalidTimeout("the timeout is \(value) s; it must be more than 0 seconds"))
            realm.setTimeout(30).setResourceTimeout(value)
            let resource = try await reason(TestEndpoint(realm, "slow"))
            #expect(
                resource
                    == .invalidTimeout("the resource timeout is \(value) s; it must be more than 0 seconds"))
        }
        // URLSession on Linux and libcurl make integers of timeouts and trap on these: the longest passed on
        // is about 116 days.
        for value in [TimeInterval.infinity, 1e300] {
            realm.setTimeout(value).setResourceTimeout(value)
            let request = try TestEndpoint(realm, "slow").urlRequest()
            #expect(request.timeoutInterval == 10_000_000)
        }
    }

    @Test func headerNamesMustBeTokens() async throws {
        for name in ["X Bad", "X-Bad:", "", "X-\u{00E9}", "X(1)"] {
            let reason = try await reason(TestEndpoint(realm, "x", headers: [name: "v"]))
            #expect(reason == .invalidHeaderName(name))
        }
    }

    @Test func headerValuesMayNotHoldLineBreaksOrControlCharacters() async throws {
        for value in ["a\r\nX-Injected: 1", "a\nb", "a\rb", "nul\u{0}", "bell\u{7}", "del\u{7F}"] {
            let reason = try await reason(TestEndpoint(realm, "x", headers: ["X-Value": value]))
            #expect(reason == .invalidHeaderValue(name: "X-Value"))
        }
        let fine = try TestEndpoint(realm, "x", headers: ["X-Ok": "tab\tand ünïcode"]).urlRequest()
        #expect(fine.value(forHTTPHeaderField: "X-Ok") == "tab\tand ünïcode")
    }

    @Test func badHeadersAreCaughtAtEveryLayer() async throws {
        let endpoint = TestEndpoint(realm, "x")
        await #expect(throws: ServiceError.self) {
            try await endpoint.override { $0.addHeader("X-Bad", withValue: "1\n2") }.request()
        }
        realm.addHeader("X-Realm", withValue: "a\r\nb", specificForCRUDMethod: .retrieve)
        #expect(try await reason(endpoint) == .invalidHeaderValue(name: "X-Realm"))
        #expect(try TestEndpoint(realm, "x", method: .post).urlRequest().httpMethod == "POST")
    }

    @Test func theDescriptionNamesTheWholeURLQueryIncluded() throws {
        let endpoint = TestEndpoint(realm, "q", parameters: ["a": 1], headers: ["X-Bad": "1\n2"])
        #expect {
            try endpoint.urlRequest()
        } throws: { error in
            (error as? ServiceError)?.url == "https://api.example.com/v1/q?a=1"
        }
    }

    @Test func theDescriptionNamesTheHeaderButNeverRepeatsItsValue() throws {
        let endpoint = TestEndpoint(realm, "user/info", headers: ["Authorization": "Bearer secret\r\n"])
        do {
            _ = try endpoint.urlRequest()
            Issue.record("expected an error")
        } catch let error as ServiceError {
            #expect(error.description.contains("GET https://api.example.com/v1/user/info"))
            #expect(error.description.contains("Authorization"))
            #expect(!error.description.contains("secret"))
        }
    }

    @Test func methodsMustBeTokens() async throws {
        for method in ["GET POST", "", "GET\r\n", "PRÜF"] {
            #expect(
                try await reason(TestEndpoint(realm, "x", method: HTTPMethod(rawValue: method)))
                    == .invalidMethod(method))
        }
        #expect(try TestEndpoint(realm, "x", method: "PROPFIND").urlRequest().httpMethod == "PROPFIND")
    }

    @Test func parametersJSONCannotHoldAreRefusedWithTheirKey() async throws {
        struct Custom: Sendable {}
        let cases: [([String: any Sendable], String)] = [
            (["ratio": Double.nan], "ratio"),
            (["ratio": Double.infinity], "ratio"),
            (["when": Date()], "when"),
            (["who": Custom()], "who"),
            (["filter": ["since": Date()]], "filter[since]"),
            (["list": [1, Float.nan]], "list[1]"),
        ]
        for (parameters, key) in cases {
            let viaJSON = try await reason(TestEndpoint(realm, "x", method: .post, parameters: parameters))
            guard case let .unencodableParameter(badKey, _) = viaJSON else {
                Issue.record("expected unencodableParameter for \(key), got \(String(describing: viaJSON))")
                continue
            }
            #expect(badKey == key)
            let viaQuery = try await reason(TestEndpoint(realm, "x", parameters: parameters))
            guard case .unencodableParameter = viaQuery else {
                Issue.record("expected unencodableParameter in the query for \(key)")
                continue
            }
        }
    }

    @Test func anEncodableBodyThatFailsToEncodeIsRefused() async throws {
        struct Refuses: Encodable {
            func encode(to encoder: any Encoder) throws {
                throw EncodingError.invalidValue(0, .init(codingPath: [], debugDescription: "no"))
            }
        }
        guard
            case .unencodableBody = try await reason(
                TestEndpoint(realm, "x", method: .post, body: .json(Refuses())))
        else { Issue.record("expected unencodableBody"); return }
    }

    @Test func aMissingBaseURLIsRefused() async throws {
        let bare = uniqueRealm().use(spy)
        #expect(try await reason(TestEndpoint(bare, "user/info")) == .missingBaseURL)
    }

    @Test func aBaseURLWithoutSchemeOrHostIsRefused() async throws {
        realm.setBaseURL(URL(string: "jsonplaceholder.typicode.com/users")!)
        guard case .malformedURL = try await reason(TestEndpoint(realm, "1")) else {
            Issue.record("expected malformedURL"); return
        }
        realm.setBaseURL(URL(string: "http:///nohost")!)
        guard case .malformedURL = try await reason(TestEndpoint(realm, "1")) else {
            Issue.record("expected malformedURL"); return
        }
    }
}
