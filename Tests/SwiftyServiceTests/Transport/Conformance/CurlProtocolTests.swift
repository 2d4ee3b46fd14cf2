import Foundation
import SwiftyService
import SwiftyServiceCurl
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// libcurl itself only speaks http and https, even when a request reaches it that SwiftyService's own
/// checks (made before the backend, and at each redirect) should have stopped.
@Suite("libcurl's protocols", .timeLimit(.minutes(5)), .tags(.realServer))
struct CurlProtocolTests {
    /// Sends `url` through `CurlBackend.send` directly, past every check of the request builder and the
    /// dispatch: what libcurl does with it is all that stands between the URL and the network.
    func sendDirectly(_ url: URL) async throws -> Result<Response, any Error> {
        let backend = try CurlBackend()
        let recorder = CallbackRecorder<Result<Response, any Error>>()
        var request = URLRequest(url: url)
        request.timeoutInterval = 5
        _ = backend.send(BackendRequest(urlRequest: request)) { recorder.record($0) }
        return try await recorder.first(within: 15)
    }

    @Test func aFileURLGivenToTheBackendIsNotRead() async throws {
        let marker = try MarkerFile()
        defer { marker.remove() }
        let result = try await sendDirectly(marker.url)
        switch result {
        case let .success(response):
            Issue.record("libcurl answered a file URL (\(response.data.count) bytes)")
            #expect(!marker.leaks(into: String(decoding: response.data, as: UTF8.self)))
        case let .failure(error):
            #expect((error as? URLError)?.code == .unsupportedURL, "\(error)")
            #expect(!marker.leaks(into: "\(error)"))
        }
    }

    @Test func gopherAndDictURLsGivenToTheBackendSendNothing() async throws {
        // The misbehaving server's sink counts every byte that reaches its port.
        let sink = try MisbehavingServer.sinkPort()
        let before = try await MisbehavingServer.sinkBytes()
        for url in [
            "gopher://127.0.0.1:\(sink)/_GET%20/x%20HTTP/1.0%0D%0A%0D%0A", "dict://127.0.0.1:\(sink)/info",
        ] {
            let result = try await sendDirectly(URL(string: url)!)
            #expect((result.failure as? URLError)?.code == .unsupportedURL, "\(url): \(result)")
        }
        try await Task.sleep(nanoseconds: 300_000_000)
        #expect(try await MisbehavingServer.sinkBytes() == before, "the sink received bytes")
    }

    @Test func anOlderLibcurlIsRestrictedWithTheBitmaskOptions() {
        // libcurl before 7.85 answers CURLE_UNKNOWN_OPTION (48) to the _STR options.
        let set = Collected<String>()
        let refusal = CurlProtocols.restrict(
            setString: { option, value in
                set.add("\(option)=\(value)")
                return 48
            },
            setNumber: { option, value in
                set.add("\(option)=\(value)")
                return 0
            })
        #expect(refusal == nil)
        #expect(set.all == ["10318=http,https", "181=3", "10319=http,https", "182=3"])
    }

    @Test func aLibcurlThatCannotBeRestrictedSendsNothing() {
        let refusal = CurlProtocols.restrict(setString: { _, _ in 48 }, setNumber: { _, _ in 48 })
        #expect(refusal?.description.contains("could not be restricted to http and https") == true)
        // A missing redirect restriction alone is as bad: libcurl must not be left to follow anywhere.
        let redirectsOnly = CurlProtocols.restrict(
            setString: { option, _ in option == 10_319 ? 48 : 0 },
            setNumber: { option, _ in option == 182 ? 48 : 0 })
        #expect(redirectsOnly?.description.contains("CURLOPT_REDIR_PROTOCOLS") == true)
    }
}
