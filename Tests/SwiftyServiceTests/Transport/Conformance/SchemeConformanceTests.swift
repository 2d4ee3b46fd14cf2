import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A file of random content in the temporary directory, to tell whether anything read it.
struct MarkerFile {
    let url: URL
    let content: String

    init() throws {
        content = "marker-\(UUID().uuidString)"
        url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "swiftyservice-\(UUID().uuidString)")
        try Data(content.utf8).write(to: url)
    }

    /// Whether `text` shows any of the marker's content.
    func leaks(into text: String) -> Bool { text.contains(content) }

    func remove() { try? FileManager.default.removeItem(at: url) }
}

/// Only http and https ever leave the process, on every backend: a redirect elsewhere is refused before
/// anything is sent, and a realm on another scheme sends nothing at all.
@Suite("Schemes", .timeLimit(.minutes(5)), .tags(.realServer))
struct SchemeConformanceTests {
    func realm(_ kind: ConformingBackend) throws -> ServiceRealm {
        uniqueRealm().setBaseURL(try MisbehavingServer.url()).use(try kind.make()).setTimeout(120)
    }

    /// Asks the misbehaving server's /redirect for a 302 to exactly `location`; the result and its time.
    func redirect(to location: String, _ realm: ServiceRealm) async -> (
        Result<Response, ServiceError>, Double
    ) {
        let start = ContinuousClock.now
        do {
            let response = try await TestEndpoint(
                realm, "redirect", parameters: ["to": location, "status": 302], validStatusCodes: .all
            ).request()
            return (.success(response), seconds(since: start))
        } catch {
            return (.failure(error as! ServiceError), seconds(since: start))
        }
    }

    @Test(arguments: ConformingBackend.allCases)
    func aRedirectToAFileIsRefusedPromptlyAndReadsNothing(_ kind: ConformingBackend) async throws {
        // /redirect?to=file:///… answers 302 with that Location. URLSession on Linux would turn it into a
        // request for the same path on the server; libcurl would read the file.
        let marker = try MarkerFile()
        defer { marker.remove() }
        let realm = try realm(kind)
        let (result, elapsed) = try await measuringPromptness {
            await redirect(to: marker.url.absoluteString, realm)
        }
        guard case let .failure(.transport(_, underlying, _)) = result else {
            Issue.record("\(kind): expected the redirect to be refused, got \(result)")
            if case let .success(response) = result {
                #expect(!marker.leaks(into: String(decoding: response.data, as: UTF8.self)), "\(kind)")
            }
            return
        }
        let refused = underlying as? RedirectRefused
        #expect(refused?.scheme == "file", "\(kind): \(underlying)")
        #expect(refused?.description.contains("'file:") == true, "\(kind): the refusal names the scheme")
        #expect(!marker.leaks(into: "\(result)") && !marker.leaks(into: "\(underlying)"), "\(kind)")
        #expect(elapsed < 90, "\(kind): refused at once, not at the 120 s timeout")
    }

    @Test(arguments: ConformingBackend.allCases)
    func redirectsToGopherDictAndFTPAreRefusedAndTheTargetGetsNoByte(_ kind: ConformingBackend) async throws {
        try await measuringPromptness {
            // /redirect points at the sink, which counts what reaches it; a gopher URL would carry a whole
            // request of the attacker's choosing to any port.
            let sink = try MisbehavingServer.sinkPort()
            let before = try await MisbehavingServer.sinkBytes()
            let realm = try realm(kind)
            for (scheme, location) in [
                ("gopher", "gopher://127.0.0.1:\(sink)/_GET%20/x%20HTTP/1.0%0D%0A%0D%0A"),
                ("dict", "dict://127.0.0.1:\(sink)/info"),
                ("ftp", "ftp://127.0.0.1:\(sink)/x"),
            ] {
                let (result, elapsed) = await redirect(to: location, realm)
                guard case let .failure(.transport(_, underlying, _)) = result else {
                    Issue.record("\(kind) \(scheme): expected the redirect to be refused, got \(result)")
                    continue
                }
                #expect((underlying as? RedirectRefused)?.scheme == scheme, "\(kind): \(underlying)")
                #expect(elapsed < 90, "\(kind) \(scheme): refused at once, not at the 120 s timeout")
            }
            // A connection the backend opened anyway would have delivered its bytes by now.
            try await Task.sleep(nanoseconds: 300_000_000)
            #expect(try await MisbehavingServer.sinkBytes() == before, "\(kind): the sink received bytes")
        }
    }

    @Test(arguments: ConformingBackend.allCases)
    func anUpperCaseHTTPRedirectIsFollowed(_ kind: ConformingBackend) async throws {
        // /redirect?to=HTTP://127.0.0.1:PORT/anything/upper: httpbin echoes the request it got.
        let port = try HTTPBin.url().port!
        let (result, _) = await redirect(to: "HTTP://127.0.0.1:\(port)/anything/upper", try realm(kind))
        let echo = try result.get().echo()
        #expect(echo.url.hasSuffix("/anything/upper"), "\(kind)")
    }

    @Test(arguments: ConformingBackend.allCases)
    func aRealmOnAnotherSchemeFailsAtOnceAndSendsNothing(_ kind: ConformingBackend) async throws {
        // The sink counts what reaches it: nothing may, not even a connection's first bytes.
        let sink = try MisbehavingServer.sinkPort()
        let marker = try MarkerFile()
        defer { marker.remove() }
        let before = try await MisbehavingServer.sinkBytes()
        for base in ["ftp://127.0.0.1:\(sink)/x", marker.url.absoluteString, "gopher://127.0.0.1:\(sink)/_x"]
        {
            let spy = SpyBackend(try kind.make())
            let realm = uniqueRealm().setBaseURL(URL(string: base)!).use(spy).setTimeout(120)
            let start = ContinuousClock.now
            do {
                _ = try await TestEndpoint(realm, "y").request()
                Issue.record("\(kind) \(base): expected .invalidRequest")
            } catch let ServiceError.invalidRequest(reason, _, _) {
                let scheme = String(base.prefix { $0 != ":" })
                #expect(reason == .unsupportedScheme(scheme), "\(kind) \(base)")
            }
            // The spy's empty list below already shows nothing was sent; the bound only tells the failure
            // from the 120 s timeout, with room for a loaded machine.
            #expect(seconds(since: start) < 90, "\(kind) \(base): at once, not at the 120 s timeout")
            #expect(spy.requests.isEmpty, "\(kind) \(base): reached the backend")
        }
        try await Task.sleep(nanoseconds: 300_000_000)
        #expect(try await MisbehavingServer.sinkBytes() == before, "\(kind): the sink received bytes")
    }
}

@Suite(.tags(.realServer)) struct UpperCaseSchemeTests {
    @Test func anUpperCaseHTTPBaseURLWorksOnURLSession() async throws {
        // httpbin /get on a base URL written HTTP://127.0.0.1:PORT; FoundationNetworking would not send it.
        let port = try HTTPBin.url().port!
        let realm = uniqueRealm().setBaseURL(URL(string: "HTTP://127.0.0.1:\(port)")!).use(
            URLSessionBackend())
        let echo = try await TestEndpoint(realm, "get").request().echo()
        #expect(echo.url == "http://127.0.0.1:\(port)/get")
    }
}
