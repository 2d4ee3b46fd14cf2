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
    /// Answers an authentication challenge, like `setTaskDidReceiveAuthenticationChallengeBlock:`.
    public typealias ChallengeBlock =
        @Sendable (URLSessionTask, URLAuthenticationChallenge) -> (
            URLSession.AuthChallengeDisposition, URLCredential?
        )

    private let session: URLSession
    private let hooks = SessionHooks()

    /// A client on its own session.
    public init(configuration: URLSessionConfiguration = .default) {
        session = URLSession(configuration: configuration, delegate: hooks, delegateQueue: nil)
    }

    /// Sets (or clears) the block that decides redirects for every task of the client.
    public func setTaskWillPerformHTTPRedirectionBlock(_ block: RedirectionBlock?) {
        hooks.set(redirection: block)
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
        return dataTask(
            with: URLRequest(url: url),
            completion: { task, _, data, error in
                if let error { failure(task, error) } else { success(task, Self.parse(data)) }
            })
    }

    /// Sends a prepared request; the completion gets the HTTP response and raw bytes, or the error.
    /// Like AFNetworking's `dataTaskWithRequest:completionHandler:`, statuses are not judged here.
    @discardableResult
    public func dataTask(
        with request: URLRequest,
        completion: @escaping @Sendable (LegacyDataTask, HTTPURLResponse?, Data, NSError?) -> Void
    ) -> LegacyDataTask {
        let task = LegacyDataTask()
        let sessionTask = session.dataTask(with: request) { data, response, error in
            completion(task, response as? HTTPURLResponse, data ?? Data(), error.map { $0 as NSError })
        }
        task.attach(sessionTask)
        sessionTask.resume()
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

    /// Stops the request.
    public func cancel() {
        lock.lock()
        let task = sessionTask
        lock.unlock()
        task?.cancel()
    }
}

/// The session delegate behind the client's blocks.
private final class SessionHooks: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var redirection: LegacyHTTPClient.RedirectionBlock?
    private var challenge: LegacyHTTPClient.ChallengeBlock?

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
