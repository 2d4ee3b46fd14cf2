import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A backend that answers without a network: from each endpoint's ``SwiftyServiceProtocol/sampleData``,
/// or from a closure; at once or after a delay.
///
/// ```swift
/// ServiceRealm.get("users").use(.stub)                              // 200 with sampleData
/// ServiceRealm.get("users").use(.stub(.delayed(0.2)))
/// ServiceRealm.get("users").use(StubBackend { request in .init(statusCode: 503) })
/// ServiceRealm.get("users").use(StubBackend.failing(URLError(.notConnectedToInternet)))
/// ```
/// A delay longer than the request's timeout ends in ``ServiceError/timedOut(_:)`` at the timeout,
/// as a slow server would.
public struct StubBackend: NetworkBackend {
    /// When a stub answers.
    public enum Timing: Sendable, Hashable {
        /// Before `send` returns, on the caller's thread.
        case immediate
        /// After this many seconds, on a background queue.
        case delayed(TimeInterval)
    }

    /// What a stub answers: a status, headers and a body, or a failure.
    public struct Answer: Sendable {
        /// The status code.
        public var statusCode: Int
        /// The response headers.
        public var headers: HTTPHeaderDictionary
        /// The body; `nil` answers with the endpoint's sample data.
        public var data: Data?

        /// An answer with these parts; without `data`, the endpoint's sample data.
        public init(statusCode: Int = 200, headers: HTTPHeaderDictionary = [:], data: Data? = nil) {
            self.statusCode = statusCode
            self.headers = headers
            self.data = data
        }

        /// `200` with the endpoint's sample data.
        public static let sampleData = Answer()

        /// An answer with a JSON body.
        public static func json(_ json: String, statusCode: Int = 200) -> Answer {
            Answer(
                statusCode: statusCode, headers: ["Content-Type": "application/json"], data: Data(json.utf8))
        }
    }

    /// When this stub answers.
    public let timing: Timing
    private let answer: @Sendable (BackendRequest) throws -> Answer

    /// A stub that answers 200 with each endpoint's sample data.
    public init(_ timing: Timing = .immediate) {
        self.init(timing) { _ in .sampleData }
    }

    /// A stub that answers what `answer` returns for each request, or fails with what it throws.
    public init(_ timing: Timing = .immediate, answer: @escaping @Sendable (BackendRequest) throws -> Answer)
    {
        self.timing = timing
        self.answer = answer
    }

    /// A stub that answers every request with `statusCode` (and `data`).
    public static func failing(statusCode: Int, data: Data = Data(), timing: Timing = .immediate)
        -> StubBackend
    {
        StubBackend(timing) { _ in Answer(statusCode: statusCode, data: data) }
    }

    /// A stub that fails every request with `error`, e.g. `URLError(.cannotConnectToHost)`.
    public static func failing(_ error: any Error, timing: Timing = .immediate) -> StubBackend {
        StubBackend(timing) { _ in throw error }
    }

    /// Answers the request, now or later.
    public func send(
        _ request: BackendRequest, completion: @escaping @Sendable (Result<Response, any Error>) -> Void
    ) -> BackendTask {
        switch timing {
        case .immediate:
            completion(respond(to: request))
            return .uncancellable
        case let .delayed(delay):
            let timeout = request.urlRequest.timeoutInterval
            let cancelled = Locked.make(false)
            DispatchQueue.global().asyncAfter(deadline: .now() + min(delay, timeout)) {
                guard !cancelled.value else { return }
                completion(delay > timeout ? .failure(URLError(.timedOut)) : respond(to: request))
            }
            return BackendTask { cancelled.withLock { $0 = true } }
        }
    }

    private func respond(to request: BackendRequest) -> Result<Response, any Error> {
        Result {
            let answer = try answer(request)
            return Response(
                request: request.urlRequest, statusCode: answer.statusCode, headers: answer.headers,
                data: answer.data ?? request.sampleData)
        }
    }
}

extension NetworkBackend where Self == StubBackend {
    /// A stub that answers at once with each endpoint's sample data: `.use(.stub)`.
    public static var stub: StubBackend { StubBackend() }

    /// A stub that answers with each endpoint's sample data, at once or later: `.use(.stub(.delayed(0.2)))`.
    public static func stub(_ timing: StubBackend.Timing) -> StubBackend { StubBackend(timing) }
}
