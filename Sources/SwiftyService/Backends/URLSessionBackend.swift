import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The default backend: sends requests with a `URLSession`.
///
/// Cancelling a request (its handle, or the awaiting task) cancels the `URLSessionTask`. On a session of
/// its own (every initializer but ``init(session:)``) redirects follow a ``RedirectPolicy``: a redirect to
/// another origin (scheme, host or port) drops `Authorization`, `Proxy-Authorization`, `Cookie` and the
/// realm's declared secret headers, on every platform, while a same-origin one keeps them; a 307 or 308
/// keeps the method and the body (Linux would drop the body).
public final class URLSessionBackend: NetworkBackend {
    /// The session that sends the requests.
    public let session: URLSession
    private let ownsSession: Bool
    private let redirects: RedirectGuard?
    /// Tasks started from Swift concurrency are created here, off the caller's thread: on Linux, creating
    /// one can block for milliseconds while URLSession is busy, which would stall the small cooperative
    /// thread pool that every task shares. Callers on their own threads start directly.
    private let queue = DispatchQueue(label: "SwiftyService.URLSessionBackend")

    /// The backend realms use when none is set; one session shared by all of them.
    public static let shared = URLSessionBackend()

    /// A backend on a session of its own, made from `configuration`.
    ///
    /// The default configuration keeps at most 4 connections per host: above that, libcurl (under
    /// URLSession on Linux) opens and closes a new connection for most requests instead of reusing them.
    /// - Parameter redirects: which redirects to follow; by default at most 10.
    public init(
        configuration: URLSessionConfiguration = URLSessionBackend.defaultConfiguration(),
        redirects policy: RedirectPolicy = .default
    ) {
        let redirects = RedirectGuard(policy)
        session = URLSession(configuration: configuration, delegate: redirects, delegateQueue: nil)
        self.redirects = redirects
        ownsSession = true
    }

    /// A backend on an existing session, which the caller keeps ownership of (and the redirect handling
    /// of its delegate).
    public init(session: URLSession) {
        self.session = session
        redirects = nil
        ownsSession = false
    }

    deinit {
        if ownsSession { session.finishTasksAndInvalidate() }
    }

    /// `URLSessionConfiguration.default` with at most 4 connections per host.
    public static func defaultConfiguration() -> URLSessionConfiguration {
        let configuration = URLSessionConfiguration.default
        configuration.httpMaximumConnectionsPerHost = 4
        return configuration
    }

    /// Starts a data task for the request.
    public func send(
        _ request: BackendRequest, completion: @escaping @Sendable (Result<Response, any Error>) -> Void
    ) -> BackendTask {
        let urlRequest = request.urlRequest
        let started = Locked<StartedTask>.make(StartedTask())
        let start: @Sendable () -> Void = { [session, redirects] in
            let task = session.dataTask(with: urlRequest) { data, response, error in
                let redirected = started.withLock({ $0.task }).flatMap { redirects?.finish($0) }
                if redirected == .tooMany {
                    completion(.failure(URLError(.httpTooManyRedirects)))
                } else if let error {
                    completion(.failure(error))
                } else if let response = response as? HTTPURLResponse {
                    completion(
                        .success(Response(request: urlRequest, response: response, data: data ?? Data())))
                } else {
                    completion(.failure(URLError(.badServerResponse)))
                }
            }
            redirects?.track(task, request: urlRequest, secrets: request.redaction)
            let cancelled = started.withLock { state -> Bool in
                state.task = task
                return state.isCancelled
            }
            if cancelled {
                task.cancel()
            } else {
                task.resume()
            }
        }
        if withUnsafeCurrentTask(body: { $0 != nil }) {
            queue.async(execute: start)
        } else {
            start()
        }
        return BackendTask {
            let task = started.withLock { state -> URLSessionDataTask? in
                state.isCancelled = true
                return state.task
            }
            task?.cancel()
        }
    }

    private struct StartedTask {
        var task: URLSessionDataTask?
        var isCancelled = false
    }
}

extension NetworkBackend where Self == URLSessionBackend {
    /// The shared URLSession backend: `.use(.urlSession)`.
    public static var urlSession: URLSessionBackend { .shared }
}
