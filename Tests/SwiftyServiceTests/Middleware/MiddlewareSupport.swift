import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// Helpers for the middleware tests against httpbin.

/// An endpoint that declares middleware and an error body of its own, on top of what its realm says.
struct ChainEndpoint: SwiftyServiceProtocol {
    var realm: ServiceRealm
    var path: String
    var method: HTTPMethod = .get
    var parameters: [String: Any]? { values }
    var values: [String: any Sendable]?
    var body: RequestBody?
    var headers: HTTPHeaderDictionary?
    var middleware: [any Middleware] = []
    var errorBody: ErrorBody?
    var validStatusCodes: StatusCodes = .realmDefault

    init(
        _ realm: ServiceRealm, _ path: String, method: HTTPMethod = .get,
        parameters: [String: any Sendable]? = nil, body: RequestBody? = nil,
        headers: HTTPHeaderDictionary? = nil, middleware: [any Middleware] = [], errorBody: ErrorBody? = nil
    ) {
        self.realm = realm
        self.path = path
        self.method = method
        self.values = parameters
        self.body = body
        self.headers = headers
        self.middleware = middleware
        self.errorBody = errorBody
    }
}

extension RetryPolicy {
    /// The default policy on a clock that never sleeps, records every wait it is asked for, and always
    /// picks the top of the jitter range (so the waits are predictable).
    static func instant(recordingWaitsIn waits: CallbackRecorder<TimeInterval>) -> RetryPolicy {
        var policy = RetryPolicy()
        policy.clock = RetryClock(
            sleep: { waits.record($0) }, now: { Date() }, random: { $0.upperBound })
        return policy
    }
}

/// The answer of `body`, or a failure naming `what` when there is none within `seconds`; `body` is then
/// cancelled. For requests that might never be answered, so that such a test fails fast instead of hanging.
func answer<T: Sendable>(
    within seconds: Double, _ what: String, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: .seconds(seconds))
            throw SetupError(description: "\(what): no answer within \(seconds) s")
        }
        defer { group.cancelAll() }
        return try await group.next()!
    }
}
