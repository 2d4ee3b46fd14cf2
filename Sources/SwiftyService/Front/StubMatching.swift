import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension StubBackend.Match {
    /// Requests with the method and URL `endpoint` builds (its realm as it is when a request arrives).
    public static func endpoint<Endpoint: SwiftyServiceProtocol>(_ endpoint: Endpoint) -> Self {
        Self(
            matches: { request in
                guard let expected = try? endpoint.urlRequest() else { return false }
                return expected.httpMethod == request.urlRequest.httpMethod
                    && expected.url == request.urlRequest.url
            }, description: "the endpoint \(endpoint)")
    }
}
