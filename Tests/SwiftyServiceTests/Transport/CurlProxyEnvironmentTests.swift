import Foundation
import Testing

@testable import SwiftyService

/// CurlBackend's handles leave proxies to libcurl's reading of the environment only when the environment has
/// something to say about them; otherwise they say "no proxy" themselves, which spares libcurl five lookups of
/// the environment per request.
@Suite struct CurlProxyEnvironmentTests {
    @Test func anEnvironmentWithoutProxyVariablesIsNotReadAgain() {
        #expect(!CurlLoop.mentionsProxies([:]))
        let unrelated = ["PATH": "/usr/bin", "HOME": "/root", "PROXY_HOST": "example.com"]
        #expect(!CurlLoop.mentionsProxies(unrelated))
    }

    @Test(arguments: [
        "http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY",
        "ws_proxy", "Http_Proxy",
    ])
    func anyProxyVariableLeavesProxiesToLibcurl(_ name: String) {
        #expect(CurlLoop.mentionsProxies(["PATH": "/usr/bin", name: "http://127.0.0.1:3128"]))
    }

    /// The variables that can make a hop speak TLS whatever its URL says (a proxy), and those that cannot.
    @Test func onlyAProxyNamedForUseCountsAsOne() {
        #expect(CurlLoop.namesProxy(["https_proxy": "https://proxy.example:443"]))
        #expect(!CurlLoop.namesProxy(["no_proxy": "*"]))
        #expect(!CurlLoop.namesProxy(["http_proxy": ""]))
    }
}
