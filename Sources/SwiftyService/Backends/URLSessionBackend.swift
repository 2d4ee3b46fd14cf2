import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The default backend: sends requests with a `URLSession`.
///
/// Cancelling a request (its handle, or the awaiting task) cancels the `URLSessionTask`. On a session of
/// its own (every initializer but ``init(session:)``) it also smooths over what URLSession does
/// differently on Linux:
/// - redirects follow a ``RedirectPolicy``: a redirect to another origin (scheme, host or port) drops
///   `Authorization`, `Proxy-Authorization`, `Cookie` and the realm's declared secret headers, while a
///   same-origin one keeps them; a 307 or 308 is sent again with its method and body (Linux drops the body);
/// - a 401 that challenges for credentials (`WWW-Authenticate: Basic`) comes back as the 401 response
///   (Linux would never finish the task), without its body;
/// - a timeout with a fraction of a second is kept to the fraction (Linux rounds it down, so `0.5` would
///   time out at once).
public final class URLSessionBackend: NetworkBackend {
    /// The session that sends the requests.
    public let session: URLSession
    private let ownsSession: Bool
    private let delegate: SessionDelegate?
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
    /// - Parameters:
    ///   - configuration: the session's configuration.
    ///   - policy: which redirects to follow; by default at most 10.
    public init(
        configuration: URLSessionConfiguration = URLSessionBackend.defaultConfiguration(),
        redirects policy: RedirectPolicy = .default
    ) {
        let delegate = SessionDelegate(policy)
        session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
        self.delegate = delegate
        ownsSession = true
    }

    /// A backend on an existing session, which the caller keeps ownership of (and the redirect and
    /// challenge handling of its delegate).
    public init(session: URLSession) {
        self.session = session
        delegate = nil
        ownsSession = false
    }

    deinit {
        if ownsSession { session.finishTasksAndInvalidate() }
    }

    /// `URLSessionConfiguration.default` with at most 4 connections per host, no cookie storage and, on
    /// Linux, no `URLCache`.
    ///
    /// Cookies are a realm's business (``ServiceRealm/useCookies(_:)``): the process-wide cookie storage
    /// would carry one realm's cookies to another host's requests and replace an explicit `Cookie` header.
    /// URLSession on Linux caches nothing (a realm's ``HTTPCache`` does), and with a `URLCache` set a task
    /// cancelled while it completes can crash FoundationNetworking. A configuration or session of your own
    /// keeps whatever cookie storage and cache you give it.
    public static func defaultConfiguration() -> URLSessionConfiguration {
        let configuration = URLSessionConfiguration.default
        configuration.httpMaximumConnectionsPerHost = 4
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.httpCookieAcceptPolicy = .never
        #if canImport(FoundationNetworking)
        configuration.urlCache = nil
        #endif
        return configuration
    }

    /// Starts a data task for the request.
    public func send(
        _ request: BackendRequest, completion: @escaping @Sendable (Result<Response, any Error>) -> Void
    ) -> BackendTask {
        let transfer = Transfer(request: request, completion: completion)
        let timeout = request.urlRequest.timeoutInterval.usableTimeout
        if delegate != nil, timeout > 0, timeout.rounded(.down) != timeout {
            transfer.expire(after: timeout)
        }
        if withUnsafeCurrentTask(body: { $0 != nil }) {
            queue.async { [self] in start(request.urlRequest, for: transfer, redirects: 0) }
        } else {
            start(request.urlRequest, for: transfer, redirects: 0)
        }
        return BackendTask { transfer.cancel() }
    }

    /// Whether this backend streams file bodies and downloads: on a session of its own, yes.
    public var supportsStreaming: Bool { delegate != nil }

    /// Starts one task of the transfer: the first, or the one that re-sends a 307/308 with its body.
    ///
    /// Plain requests use a data task with a completion handler. File bodies, downloads and progress
    /// reports need the delegate: an upload task streamed from the file, or a download task writing to disk.
    private func start(_ urlRequest: URLRequest, for transfer: Transfer, redirects: Int) {
        var sent = urlRequest
        // FoundationNetworking traps on a timeout it cannot make an integer of (NaN, infinity, 1e300).
        if sent.timeoutInterval.usableTimeout != sent.timeoutInterval {
            sent.timeoutInterval = sent.timeoutInterval.usableTimeout
        }
        if delegate != nil, sent.timeoutInterval > 0, sent.timeoutInterval < 1 { sent.timeoutInterval = 1 }
        let request = transfer.request
        let task: URLSessionTask
        if let delegate,
            request.bodyFile != nil || request.downloadFile != nil || request.wantsProgress
                || request.maxResponseSize != nil
        {
            if let file = request.bodyFile {
                task = session.uploadTask(with: sent, fromFile: file)
            } else if request.downloadFile != nil {
                task = session.downloadTask(with: sent)
            } else {
                task = session.dataTask(with: sent)
            }
            delegate.stream(task, for: request) { [self] task, error, body in
                conclude(transfer, delegate.finish(task), error: error, head: task.response, body: body)
            }
        } else {
            task = session.dataTask(with: sent) { [self, delegate] data, response, error in
                let ending = transfer.task.flatMap { delegate?.finish($0) } ?? .finished
                conclude(transfer, ending, error: error, head: response, body: .data(data ?? Data()))
            }
        }
        delegate?.track(task, request: sent, secrets: request.redaction, redirects: redirects)
        // A task that will not run is cancelled all the same: the session keeps every task it made, with
        // its completion handler (this backend included), until the task completes.
        if transfer.begin(task) { task.resume() } else { task.cancel() }
    }

    /// Finishes the transfer from how its task ended, or starts the next task of a 307/308.
    private func conclude(
        _ transfer: Transfer, _ ending: SessionDelegate.Ending, error: (any Error)?, head: URLResponse?,
        body: SessionDelegate.Body
    ) {
        let request = transfer.request.urlRequest
        switch ending {
        case let .resend(next, count) where !transfer.isOver:
            body.discard()
            start(next, for: transfer, redirects: count)
        case .tooManyRedirects:
            body.discard()
            transfer.finish(.failure(URLError(.httpTooManyRedirects)))
        case let .refused(refusal):
            body.discard()
            transfer.finish(.failure(refusal))
        case let .challenged(head):
            body.discard()
            transfer.finish(.success(Response(request: request, response: head, data: Data())))
        case let .tooLarge(limit):
            body.discard()
            transfer.finish(.failure(ResponseTooLarge(limit: limit)))
        case let .headTooLarge(problem):
            body.discard()
            transfer.finish(.failure(problem))
        default:
            if let error {
                body.discard()
                transfer.finish(.failure(TLSFailure.classified(error)))
            } else if let head = head as? HTTPURLResponse,
                let problem = TransportRules.headProblem(with: head)
            {
                // URLSession parses a whole head before showing it: the limits can only refuse it now.
                body.discard()
                transfer.finish(.failure(problem))
            } else if let head = head as? HTTPURLResponse {
                transfer.finish(
                    Result {
                        try body.response(for: request, head: head, into: transfer.request.downloadFile)
                    })
            } else {
                body.discard()
                transfer.finish(.failure(URLError(.badServerResponse)))
            }
        }
    }
}

/// One request's way through one or more `URLSessionTask`s, finished exactly once.
private final class Transfer: Sendable {
    private struct State {
        var task: URLSessionTask?
        var over = false
        var cancelled = false
        var timedOut = false
        var deadline: Deadline?
    }

    let request: BackendRequest
    private let completion: @Sendable (Result<Response, any Error>) -> Void
    private let state = Locked.make(State())

    init(request: BackendRequest, completion: @escaping @Sendable (Result<Response, any Error>) -> Void) {
        self.request = request
        self.completion = completion
    }

    var task: URLSessionTask? { state.withLock { $0.task } }
    var isOver: Bool { state.withLock { $0.over || $0.cancelled || $0.timedOut } }

    /// Makes `task` the current one; `false` when the transfer was cancelled before it could start, which
    /// is then reported as `URLError(.cancelled)`.
    func begin(_ task: URLSessionTask) -> Bool {
        let (cancelled, timedOut) = state.withLock { state -> (Bool, Bool) in
            state.task = task
            return (state.cancelled, state.timedOut)
        }
        if cancelled || timedOut { finish(.failure(URLError(.cancelled))) }
        return !(cancelled || timedOut)
    }

    func finish(_ result: Result<Response, any Error>) {
        let (first, timedOut, deadline) = state.withLock { state -> (Bool, Bool, Deadline?) in
            defer {
                state.over = true
                state.deadline = nil
            }
            return (!state.over, state.timedOut, state.deadline)
        }
        deadline?.cancel()
        guard first else { return }
        completion(timedOut ? .failure(URLError(.timedOut)) : result)
    }

    /// Stops the transfer; its completion still runs, once, with `URLError(.cancelled)`.
    func cancel() {
        let task = state.withLock { state -> URLSessionTask? in
            state.cancelled = true
            return state.task
        }
        task?.cancel()
    }

    /// Times the transfer out at the precise deadline of a fractional timeout, which libcurl under
    /// URLSession would round. Weakly: a transfer in flight is held by its task, and one that ended has
    /// called its deadline off.
    func expire(after seconds: TimeInterval) {
        let deadline = Deadline(after: seconds) { [weak self] in self?.timeOut() }
        let over = state.withLock { state -> Bool in
            if !state.over { state.deadline = deadline }
            return state.over
        }
        if over { deadline.cancel() }
    }

    /// The precise deadline of a fractional timeout passed: the task is cancelled and reports a timeout.
    private func timeOut() {
        let task = state.withLock { state -> URLSessionTask? in
            guard !state.over, !state.cancelled else { return nil }
            state.timedOut = true
            return state.task
        }
        task?.cancel()
    }
}

extension NetworkBackend where Self == URLSessionBackend {
    /// The shared URLSession backend: `.use(.urlSession)`.
    public static var urlSession: URLSessionBackend { .shared }
}
