import Foundation
import SwiftyService

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The whole adapter: SwiftyService builds the request, the company's library sends it.
///
/// It hands redirects back to the toolkit (the library's redirection block always stops) and follows them
/// itself with ``RedirectPolicy``'s rules, so secrets are dropped across origins and 307/308 keep their
/// body exactly as with the other backends; a credential challenge is answered with its 401. The library's
/// data block stops a body that goes past the realm's size limit while it arrives, and a head past
/// SwiftyService's limits is refused (``ResponseHeadTooLarge``). TLS failures need nothing here:
/// SwiftyService gives URLSession's the same codes as its own backends'.
public final class LegacyBackend: NetworkBackend {
    private let client: LegacyHTTPClient
    private let policy: RedirectPolicy
    private let challenged = ChallengedTasks()
    private let limits = SizeLimits()

    /// A backend that sends through `client`, taking over its redirection and challenge blocks.
    public init(client: LegacyHTTPClient = .shared, redirects policy: RedirectPolicy = .default) {
        self.client = client
        self.policy = policy
        client.setTaskWillPerformHTTPRedirectionBlock { _, _, _ in nil }
        client.setTaskDidReceiveAuthenticationChallengeBlock { [challenged] task, challenge in
            challenged.record(task.taskIdentifier, challenge.failureResponse as? HTTPURLResponse)
            return (.cancelAuthenticationChallenge, nil)
        }
        client.setDataTaskDidReceiveResponseBlock { [limits] task, response in
            limits.isExceeded(task.taskIdentifier, adding: 0, declared: response.expectedContentLength)
                ? .cancel : .allow
        }
        client.setDataTaskDidReceiveDataBlock { [limits] task, data in
            if limits.isExceeded(task.taskIdentifier, adding: data.count) { task.cancel() }
        }
    }

    /// Hands the built request to the legacy client, following redirects hop by hop.
    public func send(
        _ request: BackendRequest, completion: @escaping @Sendable (Result<Response, any Error>) -> Void
    ) -> BackendTask {
        let current = CurrentTask()
        hop(request.urlRequest, redirects: 0, of: request, current: current, completion: completion)
        return BackendTask { current.cancel() }
    }

    private func hop(
        _ urlRequest: URLRequest, redirects: Int, of request: BackendRequest, current: CurrentTask,
        completion: @escaping @Sendable (Result<Response, any Error>) -> Void
    ) {
        let task = client.dataTask(with: urlRequest) { [self] task, head, data, error in
            if let limit = limits.end(task.taskIdentifier) {
                return completion(.failure(ResponseTooLarge(limit: limit)))
            }
            let challengeAnswer = challenged.take(task.taskIdentifier)
            if let challengeAnswer {
                return completion(
                    .success(Response(request: request.urlRequest, response: challengeAnswer, data: Data())))
            }
            if let error { return completion(.failure(error)) }
            guard let head else { return completion(.failure(URLError(.badServerResponse))) }
            if let tooLarge = ResponseHeadTooLarge(checking: head) { return completion(.failure(tooLarge)) }
            if let proposed = RedirectPolicy.proposedRequest(after: head, sent: urlRequest) {
                switch policy.step(
                    after: head, sent: urlRequest, proposed: proposed, for: request, redirects: redirects + 1)
                {
                case let .follow(next) where !current.isCancelled:
                    return hop(
                        next, redirects: redirects + 1, of: request, current: current, completion: completion)
                case .tooMany:
                    return completion(.failure(URLError(.httpTooManyRedirects)))
                case let .refuse(refusal):
                    return completion(.failure(refusal))
                default:
                    break
                }
            }
            completion(.success(Response(request: request.urlRequest, response: head, data: data)))
        }
        if let limit = request.maxResponseSize { limits.watch(task.taskIdentifier, limit: limit) }
        current.set(task)
        task.resume()
    }
}

/// The size limits of the tasks under way, the bytes each has received, and which went past theirs.
private final class SizeLimits: @unchecked Sendable {
    private let lock = NSLock()
    private var limits: [Int: (limit: Int, received: Int64, exceeded: Bool)] = [:]

    func watch(_ task: Int, limit: Int) {
        lock.withLock { limits[task] = (limit, 0, false) }
    }

    /// Counts `bytes` more for the task; whether its body has gone, or is declared to go, past its limit.
    func isExceeded(_ task: Int, adding bytes: Int, declared: Int64 = -1) -> Bool {
        lock.withLock {
            guard var watched = limits[task] else { return false }
            watched.received += Int64(bytes)
            watched.exceeded = watched.exceeded || max(watched.received, declared) > Int64(watched.limit)
            limits[task] = watched
            return watched.exceeded
        }
    }

    /// Stops watching the task; returns its limit if the task went past it.
    func end(_ task: Int) -> Int? {
        lock.withLock { limits.removeValue(forKey: task).flatMap { $0.exceeded ? $0.limit : nil } }
    }
}

/// The legacy task of the current hop, and whether the request was cancelled.
private final class CurrentTask: @unchecked Sendable {
    private let lock = NSLock()
    private var task: LegacyDataTask?
    private var cancelled = false

    var isCancelled: Bool { lock.withLock { cancelled } }

    func set(_ task: LegacyDataTask) {
        let cancelNow = lock.withLock { () -> Bool in
            self.task = task
            return cancelled
        }
        if cancelNow { task.cancel() }
    }

    func cancel() {
        let task = lock.withLock { () -> LegacyDataTask? in
            cancelled = true
            return self.task
        }
        task?.cancel()
    }
}

/// The 401s of challenges the adapter declined, by task, until the task's completion picks them up.
private final class ChallengedTasks: @unchecked Sendable {
    private let lock = NSLock()
    private var responses: [Int: HTTPURLResponse] = [:]

    func record(_ task: Int, _ response: HTTPURLResponse?) {
        guard let response else { return }
        lock.withLock { responses[task] = response }
    }

    func take(_ task: Int) -> HTTPURLResponse? {
        lock.withLock { responses.removeValue(forKey: task) }
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
