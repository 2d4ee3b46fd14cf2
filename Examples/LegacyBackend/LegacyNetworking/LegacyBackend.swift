import Foundation
import SwiftyService

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The whole adapter: SwiftyService builds the request, the company's library sends it.
public struct LegacyBackend: NetworkBackend {
    private let client: LegacyHTTPClient

    /// A backend that sends through `client`.
    public init(client: LegacyHTTPClient = .shared) {
        self.client = client
    }

    /// Hands the built request to the legacy client and its answer back to SwiftyService.
    public func send(
        _ request: BackendRequest, completion: @escaping @Sendable (Result<Response, any Error>) -> Void
    ) -> BackendTask {
        let task = client.dataTask(with: request.urlRequest) { _, head, data, error in
            if let error {
                completion(.failure(error))
            } else if let head {
                completion(.success(Response(request: request.urlRequest, response: head, data: data)))
            } else {
                completion(.failure(URLError(.badServerResponse)))
            }
        }
        return BackendTask { task.cancel() }
    }
}

/// The callback shape the app's old call sites already use: a success and a failure block.
public struct LegacyCallbacks: Sendable {
    /// Gets the parsed JSON body.
    public let success: @Sendable (Any?) -> Void
    /// Gets the failure as the `NSError` the old code expects.
    public let failure: @Sendable (NSError) -> Void

    /// Both blocks.
    public init(success: @escaping @Sendable (Any?) -> Void, failure: @escaping @Sendable (NSError) -> Void) {
        self.success = success
        self.failure = failure
    }
}

/// What a module's endpoint enum adopts to keep the old success/failure call sites.
public protocol LegacyServiceProtocol: SwiftyServiceProtocol
where SwiftyServiceCallBackType == LegacyCallbacks {}

extension LegacyServiceProtocol {
    /// Turns SwiftyService's result into the old blocks: parsed JSON, or an NSError that names the request.
    public static func deliver(_ result: Result<Response, ServiceError>, to callback: LegacyCallbacks) {
        switch result {
        case let .success(response):
            callback.success((try? response.mapJSON()) ?? response.data)
        case let .failure(error):
            callback.failure(
                NSError(
                    domain: "LegacyService", code: error.response?.statusCode ?? -1,
                    userInfo: [NSLocalizedDescriptionKey: error.description]))
        }
    }
}
