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
    let delegate: SessionDelegate?
    /// Tasks started from Swift concurrency while others are in flight are created here, off the caller's
    /// thread: on Linux, creating one can block for milliseconds while URLSession is busy with other
    /// transfers, which would stall the small cooperative thread pool that every task shares. Callers on their
    /// own threads, and requests with none other in flight, start directly: the hop would cost a thread
    /// wake-up for nothing (a tenth of the requests per second of a caller awaiting one after another).
    private let queue = DispatchQueue(label: "SwiftyService.URLSessionBackend")
    /// The transfers started and not yet finished.
    private let inFlight = Locked.make(0)
    /// The connections each host's transfers hold, and those waiting for one: the backend keeps the limit
    /// itself, so that it can tell a caller its request waits.
    private let connections = HostConnectionGate<Transfer>()
    /// The most connections to one host for a request whose realm sets none (the configuration's
    /// `httpMaximumConnectionsPerHost`), and the most a realm may set (what the session allows).
    let maxConnectionsPerHost: Int
    private let connectionCeiling: Int
    #if canImport(Security)
    /// A session per TLS policy (URLSessionTLS.swift): connections are never shared across policies.
    private let policySessions = PolicySessions()
    #endif

    /// One session for all who share it; realms that set no backend use it on Apple platforms (``DefaultBackend``).
    public static let shared = URLSessionBackend()

    /// A backend on a session of its own, made from `configuration`.
    ///
    /// The default configuration keeps at most 4 connections per host: above that, libcurl (under
    /// URLSession on Linux) opens and closes a new connection for most requests instead of reusing them.
    /// The backend keeps that limit itself (its session is made to allow up to 64, or the configuration's
    /// own if larger), so that a realm may set another (``RealmConfiguration/setMaxConnectionsPerHost(_:)``)
    /// and a request past it is seen to wait.
    /// - Parameters:
    ///   - configuration: the session's configuration.
    ///   - policy: which redirects to follow; by default at most 10.
    public init(
        configuration: URLSessionConfiguration = URLSessionBackend.defaultConfiguration(),
        redirects policy: RedirectPolicy = .default
    ) {
        let delegate = SessionDelegate(policy)
        maxConnectionsPerHost = max(configuration.httpMaximumConnectionsPerHost, 1)
        connectionCeiling = max(maxConnectionsPerHost, Self.connectionCeiling)
        let roomier = configuration.copy() as? URLSessionConfiguration ?? configuration
        roomier.httpMaximumConnectionsPerHost = connectionCeiling
        session = URLSession(configuration: roomier, delegate: delegate, delegateQueue: nil)
        self.delegate = delegate
        ownsSession = true
    }

    /// The most connections to one host a realm may set on a backend's own session.
    static let connectionCeiling = 64

    /// A backend on an existing session, which the caller keeps ownership of (and the redirect and
    /// challenge handling of its delegate).
    public init(session: URLSession) {
        self.session = session
        delegate = nil
        ownsSession = false
        maxConnectionsPerHost = max(session.configuration.httpMaximumConnectionsPerHost, 1)
        connectionCeiling = maxConnectionsPerHost
    }

    deinit {
        if ownsSession { session.finishTasksAndInvalidate() }
        #if canImport(Security)
        policySessions.finishAll()
        #endif
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

    /// Starts a data task for the request, once a connection to its host is free.
    public func send(
        _ request: BackendRequest, completion: @escaping @Sendable (Result<Response, any Error>) -> Void
    ) -> BackendTask {
        #if canImport(Darwin)
        if let upgrade = request.webSocketUpgrade {
            return openWebSocket(request, upgrade: upgrade, completion: completion)
        }
        #endif
        return send(request, into: nil, completion: completion)
    }

    /// Starts the request; with a `sink` (and a delegate), its response goes there as it arrives.
    func send(
        _ request: BackendRequest, into sink: StreamSink?,
        completion: @escaping @Sendable (Result<Response, any Error>) -> Void
    ) -> BackendTask {
        let others = inFlight.withLock { count in
            defer { count += 1 }
            return count
        }
        let transfer = Transfer(request: request, sink: delegate == nil ? nil : sink) { [inFlight] result in
            inFlight.withLock { $0 -= 1 }
            completion(result)
        }
        let timeout = request.urlRequest.timeoutInterval.usableTimeout
        let host = BackendRequest.hostKey(ofURL: request.urlRequest.url?.absoluteString ?? "")
        let limit = min(
            request.maxConnectionsPerHost.map { max($0, 1) } ?? maxConnectionsPerHost, connectionCeiling)
        guard connections.enter(transfer, host: host, limit: limit) else {
            // The request's timeout runs while it waits, as it would in URLSession's own queue.
            transfer.waitForConnection(timeout: timeout) { [connections] in
                connections.withdraw(transfer, host: host)
            }
            request.reportWaitingForConnection(ConnectionWait(host: host, limit: limit))
            return BackendTask { [connections] in
                if connections.withdraw(transfer, host: host) {
                    transfer.finish(.failure(URLError(.cancelled)))
                }
                transfer.cancel()
            }
        }
        guard transfer.holdConnection({ [self] in leave(host) }) else {
            leave(host)
            return .uncancellable
        }
        if delegate != nil, Self.needsOwnSilenceWatch(timeout) { transfer.watchSilence(limit: timeout) }
        if others > 0, withUnsafeCurrentTask(body: { $0 != nil }) {
            queue.async { [self] in start(request.urlRequest, for: transfer, redirects: 0) }
        } else {
            start(request.urlRequest, for: transfer, redirects: 0)
        }
        return BackendTask { transfer.cancel() }
    }

    /// A transfer gave its connection to `host` back: the transfers the gate lets through now start, each
    /// holding one (one that ended while it waited gives it back at once).
    private func leave(_ host: String) {
        var next = connections.leave(host)
        while !next.isEmpty {
            let transfer = next.removeFirst()
            guard transfer.holdConnection({ [self] in leave(host) }) else {
                // Cancelled (or timed out) after the gate let it through and before it took the connection: its
                // handle could no longer withdraw it from the line, so its caller hears of it here (once; a
                // transfer that finished already is not told twice).
                transfer.finish(.failure(URLError(.cancelled)))
                next += connections.leave(host)
                continue
            }
            let timeout = transfer.request.urlRequest.timeoutInterval.usableTimeout
            if delegate != nil, Self.needsOwnSilenceWatch(timeout) { transfer.watchSilence(limit: timeout) }
            queue.async { [self] in start(transfer.request.urlRequest, for: transfer, redirects: 0) }
        }
    }

    /// Whether a transfer must time its silences itself: FoundationNetworking rounds a timeout down to whole
    /// seconds (0.5 would fail at once) and ends a 1 s one after 1 s even while bytes keep coming.
    private static func needsOwnSilenceWatch(_ timeout: TimeInterval) -> Bool {
        #if canImport(FoundationNetworking)
        timeout < 2 || timeout.rounded(.down) != timeout
        #else
        false
        #endif
    }

    /// Whether this backend streams file bodies and downloads: on a session of its own, yes.
    public var supportsStreaming: Bool { delegate != nil }

    /// On Linux none: FoundationNetworking offers no hook for roots, pins or client certificates, so a realm
    /// with a TLS policy is refused there (use `CurlBackend`). On Apple platforms, on a session of its own,
    /// everything but a PEM client identity (which would need the keychain; give PKCS#12), each policy on a
    /// session of its own so that no connection is shared across policies.
    public var supportedTLSFeatures: TLSFeatures {
        #if canImport(Security)
        delegate != nil ? Self.appleTLSFeatures : []
        #else
        []
        #endif
    }

    /// The session and delegate for a request: the backend's own, or its TLS policy's.
    private func route(for request: BackendRequest) -> (URLSession, SessionDelegate?) {
        #if canImport(Security)
        if let policy = request.tlsPolicy, let delegate {
            let (session, policyDelegate) = policySessions.route(
                for: policy, like: session, redirects: delegate.policy)
            return (session, policyDelegate)
        }
        #endif
        return (session, delegate)
    }

    /// Starts one task of the transfer: the first, or the one that re-sends a 307/308 with its body.
    ///
    /// Plain requests use a data task with a completion handler. File bodies, downloads and progress
    /// reports need the delegate: an upload task streamed from the file, or a download task writing to disk.
    /// So does a policy that may answer with a 3xx: on Linux, a completion handler gets a redirect's body
    /// only to lose it again (FoundationNetworking loads it, then loads the empty rest over it), while the
    /// delegate receives both pieces.
    private func start(_ urlRequest: URLRequest, for transfer: Transfer, redirects: Int) {
        // Shadows the backend's own: a request under a TLS policy goes through that policy's session.
        let (session, delegate) = route(for: transfer.request)
        var sent = urlRequest
        // FoundationNetworking traps on a timeout it cannot make an integer of (NaN, infinity, 1e300).
        let timeout = sent.timeoutInterval.usableTimeout
        sent.timeoutInterval = timeout
        let watched = delegate != nil && Self.needsOwnSilenceWatch(timeout)
        // Where the transfer watches its silences itself, URLSession's own timer only backs it up.
        if watched { sent.timeoutInterval = timeout.rounded(.up) + 1 }
        let request = transfer.request
        let task: URLSessionTask
        if let delegate,
            watched || request.bodyFile != nil || request.downloadFile != nil || request.wantsProgress
                || request.maxResponseSize != nil || request.collectsMetrics || transfer.sink != nil
                || delegate.policy.mayAnswerWithARedirect
        {
            // A download is a data task too: the delegate writes its body to a file (SessionDelegate.swift).
            if let file = request.bodyFile {
                task = session.uploadTask(with: sent, fromFile: file)
            } else {
                task = session.dataTask(with: sent)
            }
            delegate.stream(task, for: request, into: transfer.sink, activity: { transfer.heardFrom() }) {
                [self] task, error, body in
                let timing = delegate.timing(of: task)
                conclude(
                    transfer, delegate.finish(task), error: error, head: task.response, body: body,
                    timing: timing)
            }
        } else {
            task = session.dataTask(with: sent) { [self, delegate] data, response, error in
                let ending = transfer.task.flatMap { delegate?.finish($0) } ?? .finished
                conclude(transfer, ending, error: error, head: response, body: .data(data ?? Data()))
            }
        }
        delegate?.track(task, sent: sent, for: request, redirects: redirects)
        // A task that will not run is cancelled all the same: the session keeps every task it made, with
        // its completion handler (this backend included), until the task completes.
        if transfer.begin(task) { task.resume() } else { task.cancel() }
    }

    /// `error` with the code it has on Apple platforms where FoundationNetworking reports only its libcurl's
    /// text (code -1): a TLS failure's, and a body cut short's (curl 18), which is a lost connection, retried
    /// and resumed as on every other backend.
    private static func classified(_ error: any Error) -> any Error {
        let nsError = error as NSError
        guard nsError.domain == NSURLErrorDomain, nsError.code == URLError.Code.unknown.rawValue,
            let reason = nsError.userInfo[NSLocalizedDescriptionKey] as? String,
            reason.hasPrefix("transfer closed with")
        else { return TLSFailure.classified(error) }
        var info = nsError.userInfo
        info[NSUnderlyingErrorKey] = nsError
        return URLError(.networkConnectionLost, userInfo: info)
    }

    /// Finishes the transfer from how its task ended, or starts the next task of a 307/308.
    private func conclude(
        _ transfer: Transfer, _ ending: SessionDelegate.Ending, error: (any Error)?, head: URLResponse?,
        body: SessionDelegate.Body, timing: SessionDelegate.Timing? = nil
    ) {
        let request = transfer.request.urlRequest
        switch ending {
        case let .resend(next, count) where !transfer.isOver:
            body.discard()
            start(next, for: transfer, redirects: count)
        case .tooManyRedirects:
            drop(body, of: transfer, head: head)
            transfer.finish(.failure(URLError(.httpTooManyRedirects)))
        case let .refused(refusal):
            drop(body, of: transfer, head: head)
            transfer.finish(.failure(refusal))
        case let .challenged(challenge):
            drop(body, of: transfer, head: challenge)
            transfer.finish(.success(Response(request: request, response: challenge, data: Data())))
        case let .tooLarge(limit):
            drop(body, of: transfer, head: head)
            transfer.finish(.failure(ResponseTooLarge(limit: limit)))
        case let .headTooLarge(problem):
            drop(body, of: transfer, head: head)
            transfer.finish(.failure(problem))
        case let .tlsRefused(failure):
            drop(body, of: transfer, head: head)
            transfer.finish(.failure(failure))
        case let .cannotWrite(file):
            drop(body, of: transfer, head: head)
            transfer.finish(
                .failure(CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: file.path])))
        default:
            if let error {
                drop(body, of: transfer, head: head)
                transfer.finish(.failure(Self.classified(error)))
            } else if let head = head as? HTTPURLResponse,
                let problem = ResponseHeadTooLarge.problem(with: head)
            {
                // URLSession parses a whole head before showing it: the limits can only refuse it now.
                drop(body, of: transfer, head: head)
                transfer.finish(.failure(problem))
            } else if let head = head as? HTTPURLResponse {
                transfer.finish(
                    Result {
                        var response = try body.response(
                            for: request, head: head, into: transfer.request.downloadFile)
                        if let timing { response.metrics = [transfer.metrics(timing, received: response)] }
                        return response
                    })
            } else {
                drop(body, of: transfer, head: head)
                transfer.finish(.failure(URLError(.badServerResponse)))
            }
        }
    }

    /// Lets go of what a task that does not answer received: what a download wrote goes to the resumable
    /// download it belongs to (DownloadResumption.swift), which keeps what continues its partial file; the rest
    /// is removed.
    private func drop(_ body: SessionDelegate.Body, of transfer: Transfer, head: URLResponse?) {
        let request = transfer.request
        guard case let .file(file) = body, let download = request.downloadFile, request.resumption != nil,
            (try? SessionDelegate.Body.move(file, to: download)) != nil
        else { return body.discard() }
        request.abandonDownload(head: head as? HTTPURLResponse)
    }
}

/// One request's way through one or more `URLSessionTask`s, finished exactly once.
private final class Transfer: Sendable {
    private struct State {
        var task: URLSessionTask?
        var cancelled = false
        var timedOut = false
        /// When the transfer last heard from the server (or sent it a byte), for its own silence watch.
        var heardAt = ProcessInfo.processInfo.systemUptime
        /// The task's byte counts when the watch last looked: bytes can come before their delegate call.
        var bytesSeen: Int64 = 0
        var watch: Deadline?
        /// Set as the transfer finishes: from then on it takes no connection.
        var finished = false
        /// Gives the connection the transfer holds back to its host's line, once.
        var releaseConnection: (@Sendable () -> Void)?
        /// While the transfer waits for a connection: since when, and its timeout; then how long it waited.
        var waitingSince: TimeInterval?
        var waitDeadline: Deadline?
        var waited: TimeInterval = 0
    }

    let request: BackendRequest
    /// Where the response goes as it arrives, for a streamed request.
    let sink: StreamSink?
    private let completion: OnceCompletion<Result<Response, any Error>>
    private let state = Locked.make(State())
    /// When the attempt began, for its metrics.
    let startedAt = Date()

    init(
        request: BackendRequest, sink: StreamSink?,
        completion: @escaping @Sendable (Result<Response, any Error>) -> Void
    ) {
        self.request = request
        self.sink = sink
        self.completion = OnceCompletion(completion)
    }

    deinit {
        // Its deadlines hold it weakly and end with it: none stays in the sweeper, or ticks, after it.
        let (watch, waitDeadline) = state.withLock { ($0.watch, $0.waitDeadline) }
        watch?.cancel()
        waitDeadline?.cancel()
    }

    var task: URLSessionTask? { state.withLock { $0.task } }

    /// The attempt's metrics: the platform's where it measures (Apple), else what the delegate saw — the
    /// start, the head, the end (Linux: FoundationNetworking reports no task metrics).
    func metrics(_ timing: SessionDelegate.Timing, received response: Response) -> TransferMetrics {
        if var measured = timing.measured {
            measured.start = startedAt
            measured.queued = state.withLock { $0.waited }
            return measured
        }
        // The phases count from when the task began, after any wait for a connection.
        let waited = state.withLock { $0.waited }
        let began = startedAt + waited
        var metrics = TransferMetrics(start: startedAt)
        metrics.queued = waited
        metrics.firstByte = timing.headAt.map { $0.timeIntervalSince(began) }
        metrics.total = Date().timeIntervalSince(began)
        metrics.redirects = timing.redirects
        return metrics
    }

    /// The transfer waits for a connection to its host; past its timeout, `withdraw` takes it out of the line
    /// (`true` if it was still in it) and it ends as timed out.
    func waitForConnection(timeout: TimeInterval, withdraw: @escaping @Sendable () -> Bool) {
        let deadline = Deadline(after: timeout) { [weak self] in
            guard let self, withdraw() else { return }
            finish(.failure(URLError(.timedOut)))
        }
        let replaced = state.withLock { state in
            defer { state.waitDeadline = deadline }
            state.waitingSince = ProcessInfo.processInfo.systemUptime
            return state.waitDeadline
        }
        replaced?.cancel()
    }

    /// The transfer takes a connection to its host, which `release` gives back when it finishes; `false`
    /// (and `release` is not kept) when it has finished already.
    func holdConnection(_ release: @escaping @Sendable () -> Void) -> Bool {
        let (held, deadline) = state.withLock { state -> (Bool, Deadline?) in
            defer { state.waitDeadline = nil }
            guard !state.finished, !state.cancelled, !state.timedOut else {
                return (false, state.waitDeadline)
            }
            state.releaseConnection = release
            if let since = state.waitingSince {
                state.waited = ProcessInfo.processInfo.systemUptime - since
                state.waitingSince = nil
            }
            return (true, state.waitDeadline)
        }
        deadline?.cancel()
        return held
    }
    var isOver: Bool { completion.isSpent || state.withLock { $0.cancelled || $0.timedOut } }

    /// Makes `task` the current one; `false` when the transfer was cancelled before it could start, which
    /// is then reported as `URLError(.cancelled)`.
    func begin(_ task: URLSessionTask) -> Bool {
        let stopped = state.withLock { state -> Bool in
            state.task = task
            return state.cancelled || state.timedOut
        }
        if stopped { finish(.failure(URLError(.cancelled))) }
        return !stopped
    }

    func finish(_ result: Result<Response, any Error>) {
        let (timedOut, watch, waitDeadline, release) = state.withLock {
            state -> (Bool, Deadline?, Deadline?, (@Sendable () -> Void)?) in
            defer {
                state.watch = nil
                state.waitDeadline = nil
                state.finished = true
                state.releaseConnection = nil
            }
            return (state.timedOut, state.watch, state.waitDeadline, state.releaseConnection)
        }
        watch?.cancel()
        // A request that ends while it waits for a connection (cancelled) leaves no timer behind it.
        waitDeadline?.cancel()
        release?()
        let outcome: Result<Response, any Error> = timedOut ? .failure(URLError(.timedOut)) : result
        guard request.collectsMetrics, case let .failure(error) = outcome else { return completion(outcome) }
        // A failed attempt says how long it went on, and how long it waited for a connection.
        let waited = state.withLock { $0.waited }
        var metrics = TransferMetrics(start: startedAt)
        metrics.queued = waited
        metrics.total = Date().timeIntervalSince(startedAt + waited)
        completion(.failure(MeasuredFailure(underlying: error, metrics: metrics)))
    }

    /// Stops the transfer; its completion still runs, once, with `URLError(.cancelled)`.
    func cancel() {
        let task = state.withLock { state -> URLSessionTask? in
            state.cancelled = true
            return state.task
        }
        task?.cancel()
    }

    /// Times the transfer out once it has heard nothing for `limit` seconds: the timeout's meaning on every
    /// backend, kept here to the millisecond where URLSession's own timer would not be.
    func watchSilence(limit: TimeInterval) {
        schedule(in: limit, limit: limit)
    }

    /// The server said something, or took a byte of the body.
    func heardFrom() {
        state.withLock { $0.heardAt = ProcessInfo.processInfo.systemUptime }
    }

    private func schedule(in seconds: TimeInterval, limit: TimeInterval) {
        guard !completion.isSpent else { return }
        // Weakly: a transfer in flight is held by its task, and one that ended has called its watch off.
        let watch = Deadline(after: seconds) { [weak self] in self?.check(limit: limit) }
        // The watch it takes the place of is called off (a value, it does not call itself off when replaced).
        let replaced = state.withLock { state in
            defer { state.watch = watch }
            return state.watch
        }
        replaced?.cancel()
    }

    private func check(limit: TimeInterval) {
        // URLSession counts bytes as they arrive; its delegate may hear of them later, on a busy queue. Read
        // outside the lock: the count may wait for URLSession's own queue, whose delegate calls take the lock.
        let bytes = task.map { $0.countOfBytesReceived + $0.countOfBytesSent }
        let now = ProcessInfo.processInfo.systemUptime
        let silence = state.withLock { state -> TimeInterval in
            if let bytes, bytes != state.bytesSeen {
                state.bytesSeen = bytes
                state.heardAt = now
            }
            return now - state.heardAt
        }
        guard silence >= limit else { return schedule(in: limit - silence, limit: limit) }
        let task = state.withLock { state -> URLSessionTask? in
            guard !state.cancelled else { return nil }
            state.timedOut = true
            return state.task
        }
        guard let task else { return }
        // The caller hears at the timeout: URLSession on Linux only stops a task at its next event.
        finish(.failure(URLError(.timedOut)))
        task.cancel()
    }
}

extension NetworkBackend where Self == URLSessionBackend {
    /// The shared URLSession backend: `.use(.urlSession)`.
    public static var urlSession: URLSessionBackend { .shared }
}
