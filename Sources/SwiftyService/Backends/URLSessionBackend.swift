import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The default backend: sends requests with a `URLSession`.
///
/// Cancelling a request (its handle, or the awaiting task) cancels the `URLSessionTask`. On a session of
/// its own (every initializer but ``init(session:)``), a redirect to another origin (scheme, host or
/// port) drops `Authorization`, `Proxy-Authorization`, `Cookie` and the realm's declared secret headers,
/// on every platform; a same-origin redirect keeps them.
public final class URLSessionBackend: NetworkBackend {
    /// The session that sends the requests.
    public let session: URLSession
    private let ownsSession: Bool
    private let redirects: RedirectGuard?
    /// Tasks are created here, off the caller's thread: on Linux, creating one can block for
    /// milliseconds under load, which would stall Swift's cooperative thread pool.
    private let queue = DispatchQueue(label: "SwiftyService.URLSessionBackend")

    /// The backend realms use when none is set; one session shared by all of them.
    public static let shared = URLSessionBackend()

    /// A backend on a session of its own, made from `configuration`.
    ///
    /// The default configuration keeps at most 4 connections per host: above that, libcurl (under
    /// URLSession on Linux) opens and closes a new connection for most requests instead of reusing them.
    public init(configuration: URLSessionConfiguration = URLSessionBackend.defaultConfiguration()) {
        let redirects = RedirectGuard()
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
        queue.async { [session, redirects] in
            let task = session.dataTask(with: urlRequest) { data, response, error in
                if let redirects, let task = started.withLock({ $0.task }) { redirects.forget(task) }
                if let error {
                    completion(.failure(error))
                } else if let response = response as? HTTPURLResponse {
                    completion(
                        .success(Response(request: urlRequest, response: response, data: data ?? Data())))
                } else {
                    completion(.failure(URLError(.badServerResponse)))
                }
            }
            redirects?.track(task, secrets: request.redaction)
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

/// Drops credentials when a redirect leaves the origin the request was sent to.
final class RedirectGuard: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    private let secrets = Locked<[Int: Redaction]>.make([:])

    func track(_ task: URLSessionTask, secrets redaction: Redaction) {
        secrets.withLock { $0[task.taskIdentifier] = redaction }
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        let redaction = secrets.withLock { $0[task.taskIdentifier] } ?? .default
        completionHandler(
            Self.redirect(request, from: task.currentRequest?.url ?? response.url, secrets: redaction))
    }

    func forget(_ task: URLSessionTask) {
        secrets.withLock { $0[task.taskIdentifier] = nil }
    }

    static func redirect(_ request: URLRequest, from previous: URL?, secrets: Redaction) -> URLRequest {
        guard let previous, let next = request.url, !sameOrigin(previous, next) else { return request }
        var stripped = request
        for name in (request.allHTTPHeaderFields ?? [:]).keys where secrets.isSecret(header: name) {
            stripped.setValue(nil, forHTTPHeaderField: name)
        }
        return stripped
    }

    static func sameOrigin(_ a: URL, _ b: URL) -> Bool {
        a.scheme?.lowercased() == b.scheme?.lowercased() && a.host?.lowercased() == b.host?.lowercased()
            && effectivePort(a) == effectivePort(b)
    }

    private static func effectivePort(_ url: URL) -> Int? {
        url.port
            ?? (url.scheme?.lowercased() == "https" ? 443 : url.scheme?.lowercased() == "http" ? 80 : nil)
    }
}

extension NetworkBackend where Self == URLSessionBackend {
    /// The shared URLSession backend: `.use(.urlSession)`.
    public static var urlSession: URLSessionBackend { .shared }
}
