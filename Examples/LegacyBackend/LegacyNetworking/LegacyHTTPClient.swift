import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The company's network library, AFNetworking-style: callbacks, `NSError`s, parsed JSON objects.
///
/// It stands for the library an app cannot drop — other teams, analytics and certificate pinning live in
/// it. It is written here only so the example runs; SwiftyService knows nothing about it.
public final class LegacyHTTPClient: @unchecked Sendable {
    /// Called with the task and the parsed JSON (or the raw bytes when the body is not JSON).
    public typealias Success = @Sendable (_ task: LegacyDataTask, _ responseObject: Any?) -> Void
    /// Called with the task (if one started) and the failure.
    public typealias Failure = @Sendable (_ task: LegacyDataTask?, _ error: NSError) -> Void

    /// The app-wide client.
    public static let shared = LegacyHTTPClient()

    /// Decides whether and where a redirect goes, like AFNetworking's
    /// `setTaskWillPerformHTTPRedirectionBlock:`; `nil` from the block stops at the redirect.
    public typealias RedirectionBlock = @Sendable (URLSessionTask, HTTPURLResponse, URLRequest) -> URLRequest?
    /// Decides whether a task goes on once its response head is in, like `setDataTaskDidReceiveResponseBlock:`.
    public typealias ResponseBlock =
        @Sendable (URLSessionDataTask, URLResponse) -> URLSession.ResponseDisposition
    /// Sees each piece of a body as it arrives, like `setDataTaskDidReceiveDataBlock:`.
    public typealias DataBlock = @Sendable (URLSessionDataTask, Data) -> Void
    /// Answers an authentication challenge, like `setTaskDidReceiveAuthenticationChallengeBlock:`.
    public typealias ChallengeBlock =
        @Sendable (URLSessionTask, URLAuthenticationChallenge) -> (
            URLSession.AuthChallengeDisposition, URLCredential?
        )

    private let session: URLSession
    private let hooks = SessionHooks()

    /// A client on its own session; by default one that keeps no cookies, which are the realm's business
    /// under SwiftyService (a session with cookie storage would send one realm's cookies with another's
    /// requests).
    public init(configuration: URLSessionConfiguration = LegacyHTTPClient.defaultConfiguration()) {
        session = URLSession(configuration: configuration, delegate: hooks, delegateQueue: nil)
    }

    /// `URLSessionConfiguration.default` without cookie storage.
    public static func defaultConfiguration() -> URLSessionConfiguration {
        let configuration = URLSessionConfiguration.default
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.httpCookieAcceptPolicy = .never
        return configuration
    }

    /// Sets (or clears) the block that decides redirects for every task of the client.
    public func setTaskWillPerformHTTPRedirectionBlock(_ block: RedirectionBlock?) {
        hooks.set(redirection: block)
    }

    /// Sets (or clears) the block that sees every response head, for every task of the client.
    public func setDataTaskDidReceiveResponseBlock(_ block: ResponseBlock?) {
        hooks.set(response: block)
    }

    /// Sets (or clears) the block that sees every piece of body received by every task of the client.
    public func setDataTaskDidReceiveDataBlock(_ block: DataBlock?) {
        hooks.set(data: block)
    }

    /// Sets (or clears) the block that answers authentication challenges for every task of the client.
    public func setTaskDidReceiveAuthenticationChallengeBlock(_ block: ChallengeBlock?) {
        hooks.set(challenge: block)
    }

    /// `GET url?parameters`, the way the app's old code calls it.
    @discardableResult
    public func GET(
        _ urlString: String, parameters: [String: String]?, success: @escaping Success,
        failure: @escaping Failure
    ) -> LegacyDataTask? {
        guard var components = URLComponents(string: urlString) else {
            failure(
                nil,
                NSError(
                    domain: "LegacyHTTPClient", code: -1, userInfo: [NSLocalizedDescriptionKey: "bad URL"]))
            return nil
        }
        if let parameters {
            components.queryItems = parameters.sorted { $0.key < $1.key }.map {
                URLQueryItem(name: $0.key, value: $0.value)
            }
        }
        guard let url = components.url else {
            failure(
                nil,
                NSError(
                    domain: "LegacyHTTPClient", code: -1, userInfo: [NSLocalizedDescriptionKey: "bad URL"]))
            return nil
        }
        let task = dataTask(
            with: URLRequest(url: url),
            completion: { task, _, data, error in
                if let error { failure(task, error) } else { success(task, Self.parse(data)) }
            })
        task.resume()
        return task
    }

    /// A task that sends a prepared request once resumed; the completion gets the HTTP response and raw
    /// bytes, or the error. Like AFNetworking's `dataTaskWithRequest:completionHandler:`, statuses are not
    /// judged here, and the task waits for `resume()`.
    @discardableResult
    public func dataTask(
        with request: URLRequest,
        completion: @escaping @Sendable (LegacyDataTask, HTTPURLResponse?, Data, NSError?) -> Void
    ) -> LegacyDataTask {
        let task = LegacyDataTask()
        // A delegate task, as AFNetworking's are: the data block sees the body while it arrives.
        let sessionTask = session.dataTask(with: request)
        task.attach(sessionTask)
        hooks.track(sessionTask.taskIdentifier) { response, data, error in
            completion(task, response as? HTTPURLResponse, data, error.map { $0 as NSError })
        }
        return task
    }

    private static func parse(_ data: Data) -> Any? {
        (try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])) ?? data
    }
}

/// A request the legacy client started; `cancel()` stops it (its failure block gets NSURLErrorCancelled).
public final class LegacyDataTask: @unchecked Sendable {
    private let lock = NSLock()
    private var sessionTask: URLSessionDataTask?

    fileprivate func attach(_ task: URLSessionDataTask) {
        lock.lock()
        sessionTask = task
        lock.unlock()
    }

    /// The identifier of the session task underneath, as the client's blocks see it.
    public var taskIdentifier: Int {
        lock.lock()
        defer { lock.unlock() }
        return sessionTask?.taskIdentifier ?? -1
    }

    /// Starts the request.
    public func resume() {
        lock.withLock { sessionTask }?.resume()
    }

    /// Stops the request.
    public func cancel() {
        lock.lock()
        let task = sessionTask
        lock.unlock()
        task?.cancel()
    }
}

/// The session delegate behind the client's blocks; it gathers each task's body until the task completes.
private final class SessionHooks: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    typealias Completion = @Sendable (URLResponse?, Data, (any Error)?) -> Void

    private let lock = NSLock()
    private var redirection: LegacyHTTPClient.RedirectionBlock?
    private var challenge: LegacyHTTPClient.ChallengeBlock?
    private var received: LegacyHTTPClient.DataBlock?
    private var responded: LegacyHTTPClient.ResponseBlock?
    private var tasks: [Int: (completion: Completion, body: Data)] = [:]

    func track(_ task: Int, completion: @escaping Completion) {
        lock.withLock { tasks[task] = (completion, Data()) }
    }

    func set(data block: LegacyHTTPClient.DataBlock?) {
        lock.withLock { received = block }
    }

    func set(response block: LegacyHTTPClient.ResponseBlock?) {
        lock.withLock { responded = block }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        let block = lock.withLock { responded }
        let disposition = block?(dataTask, response) ?? .allow
        // FoundationNetworking may not act on `.cancel`; cancelling the task is what every platform honours.
        if disposition == .cancel { dataTask.cancel() }
        completionHandler(disposition)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let block = lock.withLock { () -> LegacyHTTPClient.DataBlock? in
            tasks[dataTask.taskIdentifier]?.body.append(data)
            return received
        }
        block?(dataTask, data)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let tracked = lock.withLock({ tasks.removeValue(forKey: task.taskIdentifier) }) else { return }
        tracked.completion(task.response, tracked.body, error)
    }

    func set(redirection block: LegacyHTTPClient.RedirectionBlock?) {
        lock.withLock { redirection = block }
    }

    func set(challenge block: LegacyHTTPClient.ChallengeBlock?) {
        lock.withLock { challenge = block }
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        let block = lock.withLock { redirection }
        completionHandler(block.map { $0(task, response, request) } ?? request)
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        let block = lock.withLock { self.challenge }
        guard let block else { return completionHandler(.performDefaultHandling, nil) }
        let (disposition, credential) = block(task, challenge)
        completionHandler(disposition, credential)
    }
}
