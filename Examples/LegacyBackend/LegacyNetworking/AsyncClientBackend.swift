import Foundation
import SwiftyService

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A newer in-house client with an `async` API, standing for any such library (Get, a gRPC gateway…).
public actor ModernHTTPClient {
    private let session: URLSession
    /// How many requests it has sent, which its owners like to watch.
    public private(set) var requestCount = 0

    /// A client on its own session.
    public init(configuration: URLSessionConfiguration = .default) {
        session = URLSession(configuration: configuration)
    }

    /// Sends a request and returns the body and the HTTP response.
    public func perform(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        requestCount += 1
        let (data, response) = try await session.data(for: request)
        guard let head = response as? HTTPURLResponse else { throw URLError(.badServerResponse) }
        return (data, head)
    }
}

/// The whole adapter for an `async` library: one method.
public struct ModernClientBackend: AsyncNetworkBackend {
    private let client: ModernHTTPClient

    /// A backend that sends through `client`.
    public init(client: ModernHTTPClient) {
        self.client = client
    }

    /// Sends through the async client; task cancellation reaches it.
    public func send(_ request: BackendRequest) async throws -> Response {
        let (data, head) = try await client.perform(request.urlRequest)
        return Response(request: request.urlRequest, response: head, data: data)
    }
}
