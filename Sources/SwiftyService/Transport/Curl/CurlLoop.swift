import CCurlShim
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// libcurl's multi interface, driven by one dedicated thread, or by a caller while that thread is idle.
///
/// Other threads queue work (a transfer to start, one to cancel) and wake the loop with `curl_multi_wakeup`.
/// One thread at a time drives the multi handle: every libcurl call and every transfer's state change
/// happens on it. That is the loop thread, except while the loop has nothing in flight: then an awaiting
/// caller may take the multi handle, carry out its own transfer on its own thread for up to
/// ``inlineBudget``, and hand it back (see ``startDriving(_:)``). The hand-over goes through `lock`.
final class CurlLoop: @unchecked Sendable {
    let curl: LibCurl
    private let multi: LibCurl.Handle
    /// Guards the queues and the hand-over of the multi handle; the parked loop thread waits on it.
    private let lock = NSCondition()
    /// Who drives the multi handle.
    private enum Driver {
        /// The loop thread: it runs its turns, or waits in `curl_multi_poll`.
        case loop
        /// Nobody: nothing is in flight and the loop thread waits on `lock` until work is queued.
        case parked
        /// A caller, on its own thread, for its own transfer alone.
        case caller
    }
    private var driver = Driver.loop
    /// Starts that go to the loop even when it is parked, after a transfer outlasted its caller's budget: a
    /// server that slow gains nothing from a caller's wait. Each miss in a row doubles them (4 to 256); a
    /// transfer that ends within the budget clears them, so that one late answer from a near server costs
    /// little and a far server holds a caller's thread for one budget per 256 requests at most.
    private var inlineSkips = 0
    private var inlineSkipsAfterMiss = 0
    // The queues and `active` are unchecked for exclusivity: each is touched under `lock` or by the driver
    // alone, never in overlapping accesses, and the runtime's check cost some ten calls a request.
    @exclusivity(unchecked) private var queuedStarts: [CurlTransfer] = []
    @exclusivity(unchecked) private var queuedCancels: [CurlTransfer] = []
    @exclusivity(unchecked) private var queuedResumes: [CurlTransfer] = []
    /// Jobs of tasks that prefer this loop as their executor (``CurlBackend/executor``), run between turns.
    @exclusivity(unchecked) private var queuedJobs: [UnownedJob] = []
    private var stopping = false
    /// Set as the loop thread ends: jobs enqueued after it run on the global executor instead.
    private var ended = false
    /// Whether the loop waits in `curl_multi_poll` (or is about to): only then does queued work need a
    /// `curl_multi_wakeup`, and one is enough until it wakes. A busy loop looks at the queues before it
    /// waits again, so work queued meanwhile costs no system call.
    private var polling = false
    private var wakeupSent = false
    /// Driver only: the transfers whose handles are in the multi handle, by handle address.
    @exclusivity(unchecked) private var active: [UnsafeMutableRawPointer: CurlTransfer] = [:]
    /// `active.count` for other threads (under `lock`), written by the driver as it changes `active`.
    private var activeTotal = 0
    /// The most transfers in flight at once since the multi handle was last idle, and over the time before
    /// (under `lock`). Callers drive only after a time of one transfer at a time: with more in flight, a
    /// driving caller would hand over at the next one's start anyway, having held its thread for nothing.
    private var mostActive = 0
    private var mostActiveLastTime = 0
    /// What the loop's libcurl does with TLS policies.
    let tlsSupport: CurlTLSSupport
    /// Driver only: the libcurl options of the TLS policies seen so far.
    private var tls: CurlTLSCache
    /// Driver only: easy handles between transfers.
    private let handles: CurlHandlePool
    /// The connections each host's transfers hold, and the transfers waiting for one (CurlLoop+Connections).
    let connections = HostConnectionGate<CurlTransfer>()
    /// The backend's limit of connections to one host, for requests whose realm sets none.
    let maxConnectionsPerHost: Int
    /// Driver only: whether a hop of this loop could have used TLS (an `https` URL, or a proxy from the
    /// environment, which may speak TLS whatever the URL says). Until then no thread the loop runs libcurl on
    /// can have been left an OpenSSL error by it, and ``forgetTLSErrors()`` does nothing.
    private var mayLeaveTLSErrors = CurlLoop.proxiesFromEnvironment
    /// Driver only: transfers waiting for a connection; hosts that answered over HTTP/2 in this turn; the most
    /// connections to one host libcurl allows now (the backend's limit, or a larger one a realm set).
    var waitingForConnection = 0
    var multiplexingHosts: [String] = []
    var hostConnectionCeiling: Int
    /// Whether an h2c connection carries more than one request: not before libcurl 8, which rewrote its HTTP/2
    /// layer (only 7.88.1 was seen here, failing).
    let reusesH2CConnections: Bool
    /// The codings this libcurl decodes, offered in `Accept-Encoding` (``LibCurl/offeredCodings``).
    let offeredCodings: String

    init(curl: LibCurl, maxConnectionsPerHost: Int, tlsSupport: CurlTLSSupport = .shared) throws {
        guard let multi = curl.multiInit() else { throw CurlUnavailable(reason: "curl_multi_init failed") }
        self.tlsSupport = tlsSupport
        tls = CurlTLSCache(support: tlsSupport)
        self.curl = curl
        self.multi = multi
        handles = CurlHandlePool(curl: curl)
        self.maxConnectionsPerHost = max(maxConnectionsPerHost, 1)
        hostConnectionCeiling = self.maxConnectionsPerHost
        reusesH2CConnections = curl.version.number >= 0x08_00_00
        offeredCodings = curl.offeredCodings
        curl.setMulti(multi, LibCurl.Option.multiMaxHostConnections, maxConnectionsPerHost)
        // libcurl's default cache holds 4 idle connections per handle in the multi handle; ours leave it as
        // they finish, so at N in flight the cache shrank below N and libcurl closed connections it would
        // have reused (hundreds of new TCP connections per second). Room for every host's full share:
        curl.setMulti(
            multi, LibCurl.Option.multiMaxConnects, Self.cachedConnections(perHost: maxConnectionsPerHost))
        threadName = Self.nextThreadName()
        let thread = Thread { [self] in run() }
        thread.name = threadName
        thread.start()
    }

    /// Idle connections the loop keeps: `perHost` for each of 8 hosts, 64 at least.
    static func cachedConnections(perHost: Int) -> Int { max(64, perHost * 8) }

    func start(_ transfer: CurlTransfer) {
        queue { $0.queuedStarts.append(transfer) }
    }

    func cancel(_ transfer: CurlTransfer) {
        queue { $0.queuedCancels.append(transfer) }
    }

    /// Resumes a streamed transfer that its reader's full buffer paused.
    func resume(_ transfer: CurlTransfer) {
        queue { $0.queuedResumes.append(transfer) }
    }

    /// Carries out `transfer` on the calling thread when the loop is idle, and hands it to the loop thread
    /// if it has not ended within ``inlineBudget``; queues it for the loop when the loop is busy.
    ///
    /// For callers that only wait for the answer (an awaiting task, whose continuation the completion then
    /// resumes before it has suspended): the completion may run before this returns. A request that
    /// completes this way costs no thread hop at all, where the loop thread costs two (a wake-up each way).
    func startDriving(_ transfer: CurlTransfer) {
        // One turn of the lock either way: the transfer is queued in the same turn that finds the loop busy.
        let (driving, wake) = lock.withLock { () -> (Bool, Bool) in
            if driver == .parked, mostActiveLastTime <= 1, !stopping {
                if inlineSkips == 0 {
                    driver = .caller
                    return (true, false)
                }
                inlineSkips -= 1
            }
            queuedStarts.append(transfer)
            return (false, wakesDriver())
        }
        if wake { _ = curl.multiWakeup(multi) }
        guard driving else { return }
        begin(transfer)
        // The precise clock: the coarse one of silences ticks in milliseconds.
        let deadline = DispatchTime.now().uptimeNanoseconds + Self.inlineBudget
        var running: Int32 = 0
        var outlasted = false
        while !transfer.isFinished {
            forgetTLSErrors()
            _ = curl.multiPerform(multi, &running)
            // Redirects included: complete(_:code:) begins the next hop of a transfer that follows one.
            completeFinishedTransfers()
            if !multiplexingHosts.isEmpty { startTransfersSharingConnections() }
            let now = DispatchTime.now().uptimeNanoseconds
            outlasted = now >= deadline
            if transfer.isFinished || outlasted || lock.withLock({ hasQueuedWork }) { break }
            let milliseconds = (deadline - now + 999_999) / 1_000_000
            _ = curl.multiPoll(multi, nil, 0, Int32(milliseconds), nil)
        }
        outlasted = outlasted && !transfer.isFinished
        // The caller's thread is not ours: what libcurl left in OpenSSL's queue there goes with the turn.
        forgetTLSErrors()
        lock.withLock {
            if outlasted {
                inlineSkipsAfterMiss = min(max(inlineSkipsAfterMiss * 2, 4), 256)
                inlineSkips = inlineSkipsAfterMiss
            } else if transfer.isFinished {
                inlineSkipsAfterMiss = 0
            }
            if active.isEmpty, !hasQueuedWork {
                driver = .parked
            } else {
                driver = .loop
                lock.signal()
            }
        }
    }

    /// How long (in nanoseconds) a caller drives its own transfer before the loop thread takes it over. A
    /// server on the same machine or network answers well within it; one that does not is waited for by
    /// the loop thread as before, the caller's thread having been held this long (and the next starts go
    /// straight to the loop for a while: `inlineSkips`).
    static let inlineBudget: UInt64 = 1_000_000

    /// Work other threads queued for the driver (under `lock`).
    private var hasQueuedWork: Bool {
        !queuedStarts.isEmpty || !queuedCancels.isEmpty || !queuedResumes.isEmpty || !queuedJobs.isEmpty
            || stopping
    }

    /// Queues a job of a task that prefers this loop as its executor; once the loop has ended, hands it to
    /// the global executor, so that no task is ever left waiting on a loop that is gone.
    func runOnLoop(_ job: UnownedJob) {
        queue { loop in
            if loop.ended {
                Self.runElsewhere(job)
            } else {
                loop.queuedJobs.append(job)
            }
        }
    }

    private static func runElsewhere(_ job: UnownedJob) {
        if #available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *) {
            let global = globalConcurrentExecutor.asUnownedTaskExecutor()
            DispatchQueue.global().async { job.runSynchronously(on: global) }
        }
    }

    /// Queues work for the loop and wakes whoever drives the multi handle: the loop thread if it is parked,
    /// or waits in `curl_multi_poll` with no wake-up on its way; a caller, which then hands over.
    private func queue(_ work: (CurlLoop) -> Void) {
        let wake = lock.withLock {
            work(self)
            return wakesDriver()
        }
        if wake { _ = curl.multiWakeup(multi) }
    }

    /// After work was queued (under `lock`): signals a parked loop thread, and says whether the driver needs
    /// a `curl_multi_wakeup` (sent after the lock).
    private func wakesDriver() -> Bool {
        switch driver {
        case .parked:
            driver = .loop
            lock.signal()
            return false
        case .caller:
            return true
        case .loop:
            guard polling, !wakeupSent else { return false }
            wakeupSent = true
            return true
        }
    }

    /// Ends the loop: unfinished transfers end as cancelled, then the multi handle goes.
    func shutdown() {
        queue { $0.stopping = true }
    }

    /// The number of transfers in flight (for tests and leak checks).
    var activeCount: Int { lock.withLock { activeTotal + queuedStarts.count } }

    /// The loop thread's name, unique to this loop, as the system shows it (Linux keeps 15 characters).
    let threadName: String

    private static let namingLock = NSLock()
    nonisolated(unsafe) private static var loopsStarted = 0

    private static func nextThreadName() -> String {
        let number = namingLock.withLock {
            loopsStarted += 1
            return loopsStarted
        }
        return "SwiftyCurl-\(number % 10_000)"
    }

    private func run() {
        _ = ccurl_name_this_thread(threadName)
        var running: Int32 = 0
        // The queues change places with these, emptied after each turn: no array is allocated per turn.
        var starts: [CurlTransfer] = []
        var cancels: [CurlTransfer] = []
        var resumes: [CurlTransfer] = []
        var jobs: [UnownedJob] = []
        while true {
            let stop = lock.withLock {
                swap(&jobs, &queuedJobs)
                swap(&starts, &queuedStarts)
                swap(&cancels, &queuedCancels)
                swap(&resumes, &queuedResumes)
                return stopping
            }
            if !jobs.isEmpty {
                // Tasks that prefer this loop: the requests they start are begun in this turn too.
                runJobs(jobs)
                jobs.removeAll(keepingCapacity: true)
                lock.withLock {
                    starts.append(contentsOf: queuedStarts)
                    queuedStarts.removeAll(keepingCapacity: true)
                }
            }
            for transfer in starts { begin(transfer) }
            for transfer in cancels { abort(transfer, with: URLError(.cancelled)) }
            for transfer in resumes { unpause(transfer) }
            starts.removeAll(keepingCapacity: true)
            cancels.removeAll(keepingCapacity: true)
            resumes.removeAll(keepingCapacity: true)
            if stop {
                // Those waiting first: an active transfer that ends would otherwise let them start.
                for transfer in connections.waiting { abort(transfer, with: URLError(.cancelled)) }
                for transfer in Array(active.values) { abort(transfer, with: URLError(.cancelled)) }
                // The jobs the aborts resumed, and any queued before: they run elsewhere from now on.
                let left = lock.withLock {
                    ended = true
                    defer { queuedJobs = [] }
                    return queuedJobs
                }
                for job in left { Self.runElsewhere(job) }
                break
            }
            forgetTLSErrors()
            _ = curl.multiPerform(multi, &running)
            let completed = completeFinishedTransfers()
            if !multiplexingHosts.isEmpty { startTransfersSharingConnections() }
            if active.isEmpty {
                park(lookingForWork: completed)
                continue
            }
            let wait = timeOutSilences()
            // Waits only when nothing was queued since the queues were taken; the queues are looked at again
            // after the wait either way.
            let idle = lock.withLock {
                polling = !hasQueuedWork
                return polling
            }
            guard idle else { continue }
            _ = curl.multiPoll(multi, nil, 0, wait, nil)
            lock.withLock {
                polling = false
                wakeupSent = false
            }
        }
        handles.drain()
        _ = curl.multiCleanup(multi)
    }

    private func runJobs(_ jobs: [UnownedJob]) {
        if #available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *) {
            let executor = asUnownedTaskExecutor()
            for job in jobs { job.runSynchronously(on: executor) }
        }
    }

    /// How long the loop looks for new work after its last transfer ended, before it sleeps.
    ///
    /// A caller awaiting requests one after another starts the next within tens of microseconds of the last
    /// answer: finding the loop awake saves the wake-up system call and a sleep and wake of the loop thread.
    /// Sequentially against a local nginx, 30–50 µs raised requests per second by up to a quarter at the same
    /// CPU per request; 100 and 200 µs gained less. None on one core, where the spin would hold up the very
    /// caller it waits for.
    static let lookForNextStart: UInt64 = ProcessInfo.processInfo.activeProcessorCount > 1 ? 50_000 : 0

    /// Completes the transfers libcurl reports done; whether there were any.
    @discardableResult
    private func completeFinishedTransfers() -> Bool {
        var queued: Int32 = 0
        var completed = false
        while let message = curl.multiInfoRead(multi, &queued) {
            guard message.pointee.msg == LibCurl.messageDone, let handle = message.pointee.easy_handle,
                let transfer = active[handle]
            else { continue }
            complete(transfer, code: message.pointee.data.result)
            completed = true
        }
        return completed
    }

    /// With nothing in flight, gives up the multi handle until work is queued: a caller may drive it
    /// meanwhile. Right after a transfer ended that had been the only one in flight since the multi handle was
    /// last idle, looks for work for ``lookForNextStart`` first. (After more at once, the next start comes from
    /// one of the tasks the pool's threads are running, and a spin would take a core from them.)
    private func park(lookingForWork: Bool) {
        let lookFirst = lock.withLock { () -> Bool in
            guard !hasQueuedWork else { return false }
            driver = .parked
            return mostActiveLastTime <= 1
        }
        if lookingForWork, lookFirst, Self.lookForNextStart > 0 {
            let deadline = DispatchTime.now().uptimeNanoseconds + Self.lookForNextStart
            repeat {
                if lock.withLock({ driver != .parked }) { break }
            } while DispatchTime.now().uptimeNanoseconds < deadline
        }
        lock.withLock {
            while driver != .loop { lock.wait() }
        }
    }

    /// Ends the transfers that have heard nothing for their timeout, and says how long the loop may wait
    /// before the next one could (1 s at most): a timeout is the longest silence, to the millisecond.
    private func timeOutSilences() -> Int32 {
        let now = CurlTransfer.monotonicSeconds()
        var wait: TimeInterval = 1
        var silent: [CurlTransfer] = []
        var overdue: [CurlTransfer] = []
        func check(_ transfer: CurlTransfer, silenceCounts: Bool) {
            if let deadline = transfer.deadline {
                let left = deadline.due - now
                if left <= 0 { return overdue.append(transfer) }
                wait = min(wait, left)
            }
            transfer.noteHeard(now: now)
            guard silenceCounts else { return }
            let left = transfer.heardAt + transfer.silenceLimit - now
            if left <= 0 { silent.append(transfer) } else { wait = min(wait, left) }
        }
        // A transfer waits for its reader, or for its stream body's producer: neither is the server's silence.
        for transfer in active.values {
            check(transfer, silenceCounts: !transfer.isPaused && !transfer.isAwaitingBody)
        }
        // A wait for a connection counts as silence: the request's timeout runs while it waits.
        if waitingForConnection > 0 {
            for transfer in connections.waiting { check(transfer, silenceCounts: true) }
        }
        for transfer in silent { abort(transfer, with: URLError(.timedOut)) }
        for transfer in overdue {
            abort(transfer, with: CallDeadlinePassed(seconds: transfer.deadline?.seconds ?? 0))
        }
        return Int32((wait * 1000).rounded(.up))
    }

    /// Starts the transfer's current hop, once it has a connection to its host (CurlLoop+Connections).
    func begin(_ transfer: CurlTransfer) {
        // Read once: it decides the hop's host, whether the handle's options can stay, and otherwise it is one.
        let url = transfer.hop.text
        guard !transfer.isFinished, holdsConnection(transfer, host: transfer.hop.host) else { return }
        if !mayLeaveTLSErrors, Self.isHTTPS(url) { mayLeaveTLSErrors = true }
        do {
            try transfer.prepareHop()
        } catch {
            leaveHost(of: transfer)
            transfer.finish(.failure(error))
            return
        }
        let tlsOptions: CurlTLSOptions?
        do {
            tlsOptions = try transfer.request.tlsPolicy.map { try tls.options(for: $0) }
        } catch {
            leaveHost(of: transfer)
            transfer.finish(.failure(error))
            return
        }
        // Kept while the transfer may connect: on a libcurl that takes no roots in memory, they own the file
        // its handles read the roots from.
        transfer.tlsOptions = tlsOptions
        guard let pooled = handles.take() else {
            leaveHost(of: transfer)
            transfer.finish(.failure(URLError(.cannotConnectToHost)))
            return
        }
        let handle = pooled.raw
        let fields = transfer.hop.fields
        if pooled.setup?.isSetup(of: transfer, url: url, fields: fields, tls: tlsOptions) == true {
            // The handle is set up as this hop needs, from a hop just like it: only the hop's own pointers
            // change (raw libcurl reuses a handle so, without curl_easy_reset and a URL parsed again).
            transfer.easy = pooled
            pointCallbacks(of: handle, at: transfer)
            pooled.clearErrorBuffer()
            watchSilence(of: transfer)
            watchHandshake(of: transfer, on: handle, url: url)
            setActive(transfer, for: handle)
            _ = curl.multiAddHandle(multi, handle)
            return
        }
        handles.reset(pooled)
        let protocolRefusal: (any Error)? = CurlProtocols.restrict(
            setString: { curl.set(handle, $0, string: $1) }, setNumber: { curl.set(handle, $0, $1) })
        if let refusal = protocolRefusal ?? tlsOptions?.apply(to: handle, curl) {
            handles.giveBack(pooled)
            leaveHost(of: transfer)
            transfer.finish(.failure(refusal))
            return
        }
        transfer.easy = pooled
        configure(pooled, for: transfer, url: url, fields: fields)
        pooled.setup = ReusableSetup(for: transfer, url: url, fields: fields, tls: tlsOptions)
        watchHandshake(of: transfer, on: handle, url: url)
        setActive(transfer, for: handle)
        _ = curl.multiAddHandle(multi, handle)
    }

    /// Points libcurl's callbacks at the hop's transfer.
    private func pointCallbacks(of handle: LibCurl.Handle, at transfer: CurlTransfer) {
        let context = Unmanaged.passUnretained(transfer).toOpaque()
        curl.set(handle, LibCurl.Option.writeData, pointer: context)
        curl.set(handle, LibCurl.Option.headerData, pointer: context)
    }

    /// The timeout is the longest silence, which the loop watches itself (timeOutSilences): libcurl's own
    /// options are a limit on the whole transfer or on its average speed, neither of which it means.
    private func watchSilence(of transfer: CurlTransfer) {
        transfer.silenceLimit = transfer.hop.timeout.usableTimeout
        transfer.heardFrom()
    }

    /// Has OpenSSL record what a new TLS connection's handshake shows, so that a failure can be told by it
    /// (``TLSFailure/error(curlCode:reason:url:handshake:)``). Every https hop sets a record of its own: the
    /// handle may keep the last hop's, which its connection, still cached, may also hold.
    private func watchHandshake(of transfer: CurlTransfer, on handle: LibCurl.Handle, url: String) {
        guard curl.watchesTLSHandshakes, Self.isHTTPS(url), let watch = transfer.watchNewHandshake()
        else { return }
        typealias O = LibCurl.Option
        let callback:
            @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?)
                -> Int32 = ccurl_tls_watch_ssl_ctx
        curl.set(handle, O.sslContextFunction, pointer: unsafeBitCast(callback, to: UnsafeRawPointer.self))
        curl.set(handle, O.sslContextData, pointer: UnsafeRawPointer(watch))
    }

    /// Empties this thread's OpenSSL error queue (``LibCurl/forgetTLSErrors()``) once the loop could have
    /// left anything there.
    private func forgetTLSErrors() {
        if mayLeaveTLSErrors { curl.forgetTLSErrors() }
    }

    /// Whether the environment names a proxy for libcurl to use (`http_proxy`, `https_proxy`, `all_proxy`).
    static let proxiesFromEnvironment = namesProxy(ProcessInfo.processInfo.environment)

    /// Whether `environment` names a proxy (an empty value names none).
    static func namesProxy(_ environment: [String: String]) -> Bool {
        ["http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"].contains {
            environment[$0]?.isEmpty == false
        }
    }

    /// Whether the handles leave proxies to libcurl's reading of the environment: only when the environment
    /// has something to say about them. libcurl reads it for every request (five lookups, each a walk through
    /// the whole environment, when it names no proxy); when it names none, the handles say so themselves.
    static let readsProxiesFromEnvironment = mentionsProxies(ProcessInfo.processInfo.environment)

    /// Whether any variable of `environment` is about proxies (`*_proxy`, `no_proxy`, in any case).
    static func mentionsProxies(_ environment: [String: String]) -> Bool {
        environment.keys.contains { $0.lowercased().hasSuffix("_proxy") }
    }

    /// Whether `url` starts with `https:`, in any letter case (URL's `scheme` costs a parse on Linux).
    private static func isHTTPS(_ url: String) -> Bool {
        var letters = url.utf8.makeIterator()
        for expected in "https:".utf8 {
            guard let byte = letters.next(), byte | 0x20 == expected | 0x20 else { return false }
        }
        return true
    }

    private func configure(
        _ pooled: PooledHandle, for transfer: CurlTransfer, url: String, fields: [String: String]
    ) {
        let handle = pooled.raw
        let context = Unmanaged.passUnretained(transfer).toOpaque()
        typealias O = LibCurl.Option
        curl.set(handle, O.url, string: url)
        if !Self.readsProxiesFromEnvironment {
            curl.set(handle, O.proxy, string: "")
            curl.set(handle, O.noProxy, string: "")
        }
        pooled.clearErrorBuffer()
        curl.set(handle, O.errorBuffer, pointer: pooled.errorBuffer)
        curl.set(handle, O.noSignal, 1)
        curl.set(handle, O.followLocation, 0)
        curl.set(handle, O.acceptEncoding, string: "")
        curl.set(handle, O.httpContentDecoding, 1)
        let version = transfer.request.httpVersion
        curl.set(handle, O.httpVersion, LibCurl.Option.httpVersion(version))
        // libcurl 7 breaks the framing of an h2c connection's second stream ("Error in the HTTP2 framing layer",
        // seen with 7.88.1 against nginx and hypercorn, its command line too): there, a connection per request.
        let ownConnection = version == .http2PriorKnowledge && url.hasPrefix("http:") && !reusesH2CConnections
        curl.set(handle, O.freshConnect, ownConnection ? 1 : 0)
        curl.set(handle, O.forbidReuse, ownConnection ? 1 : 0)
        // Where HTTP/2 may be spoken, a request waits for a connection being made to its host to say whether
        // it multiplexes rather than open one of its own beside it.
        if !ownConnection && (version == .http2PriorKnowledge || (version == .automatic && url.hasPrefix("https:"))) {
            curl.set(handle, O.pipeWait, 1)
        }
        curl.set(handle, O.writeFunction, pointer: unsafeBitCast(curlWrite, to: UnsafeRawPointer.self))
        curl.set(handle, O.writeData, pointer: context)
        curl.set(handle, O.headerFunction, pointer: unsafeBitCast(curlHeader, to: UnsafeRawPointer.self))
        curl.set(handle, O.headerData, pointer: context)
        // A stream's chunks each cost a hand-over to its reader: fewer, larger reads (16 KiB by default).
        if transfer.sink != nil { curl.set(handle, O.bufferSize, Self.streamReadSize) }

        let method = transfer.hop.method
        if transfer.hasBody {
            curl.set(handle, O.post, 1)
            curl.set(handle, O.postFieldSizeLarge, offset: transfer.bodyLength)
            curl.set(handle, O.readFunction, pointer: unsafeBitCast(curlRead, to: UnsafeRawPointer.self))
            curl.set(handle, O.readData, pointer: context)
            // libcurl sends a request again when a reused connection turns out closed, which needs the body
            // from its start: without a seek function that ends the request in CURLE_SEND_FAIL_REWIND.
            curl.set(handle, O.seekFunction, pointer: unsafeBitCast(curlSeek, to: UnsafeRawPointer.self))
            curl.set(handle, O.seekData, pointer: context)
            if method != "POST" { curl.set(handle, O.customRequest, string: method) }
        } else if method == "HEAD" {
            curl.set(handle, O.noBody, 1)
        } else if method != "GET" {
            curl.set(handle, O.customRequest, string: method)
        }

        var fields = fields
        // libcurl decides by itself whether to wait for a 100 Continue (7.88: bodies over 1 KiB; 8.x: 1 MiB).
        // Decided here instead: a large body, or one of unknown length, waits for the server's go-ahead (for
        // at most `expectContinueWait`), so that a refusal (401, 413) costs no upload; a small one is sent at
        // once, a round trip sooner. A request that sets `Expect` itself keeps it.
        if transfer.hasBody,
            !fields.keys.contains(where: { $0.caseInsensitiveCompare("Expect") == .orderedSame })
        {
            let waits = transfer.bodyLength < 0 || transfer.bodyLength >= Self.expectContinueThreshold
            fields["Expect"] = waits ? "100-continue" : ""
            if waits { curl.set(handle, O.expect100TimeoutMilliseconds, Self.expectContinueWait) }
        }
        if let list = pooled.headerList(for: fields, offering: offeredCodings, curl) {
            curl.set(handle, O.httpHeader, pointer: list)
        }
        watchSilence(of: transfer)
    }

    /// The size from which a body is sent with `Expect: 100-continue`.
    static let expectContinueThreshold: Int64 = 1 << 20
    /// How long (ms) a body sent with `Expect: 100-continue` waits for the server's `100 Continue` (or its
    /// refusal) before it goes anyway: a server that ignores the header costs that much, once per request.
    static let expectContinueWait = 1000

    /// libcurl's read buffer for streamed responses (`CURLOPT_BUFFERSIZE`).
    static let streamReadSize = 256 * 1024

    /// A hop ended: a redirect to follow, the response, or the failure.
    private func complete(_ transfer: CurlTransfer, code: Int32) {
        guard let handle = transfer.easy?.raw else { return }
        let status = curl.responseCode(handle)
        if transfer.request.collectsMetrics {
            let secure = transfer.hop.url?.scheme == "https"
            var metrics = curl.metrics(of: handle, start: transfer.startedAt ?? Date(), secure: secure)
            metrics.queued = (metrics.queued ?? 0) + transfer.waitedForConnections
            transfer.measured(metrics)
        }
        // The error buffer is the handle's: read before the handle goes back to the pool.
        let reason = code == 0 ? nil : transfer.easy?.failureReason(or: curl.describe(code))
        let handshake = code == 0 ? nil : transfer.handshake
        release(transfer)
        if let problem = transfer.headTooLarge { return transfer.finish(.failure(problem)) }
        if let limit = transfer.tooLarge { return transfer.finish(.failure(ResponseTooLarge(limit: limit))) }
        if code != 0, let failure = transfer.bodyStreamFailure { return transfer.finish(.failure(failure)) }
        // CURLE_SEND_FAIL_REWIND: libcurl would send the request again on a new connection, from a stream body
        // that cannot go back (CurlTransfer.rewind(to:)).
        if code == 65, transfer.request.bodyStream != nil {
            return transfer.finish(.failure(BodyStreamError.cannotResendOnNewConnection))
        }
        guard code == 0 else {
            let reason = reason ?? curl.describe(code)
            let error =
                TLSFailure.error(
                    curlCode: code, reason: reason, url: transfer.hop.url, handshake: handshake ?? .init()
                )
                ?? Self.urlError(code, description: reason)
            transfer.finish(.failure(error))
            return
        }
        guard (300..<400).contains(status) else { return transfer.succeed(status: status, head: nil) }
        guard let head = transfer.response(status: status) else {
            return transfer.finish(.failure(URLError(.badServerResponse)))
        }
        switch transfer.nextHop(after: head) {
        case let .follow(next)?:
            if let refusal = transfer.refusalToResendBody(after: status, to: next) {
                return transfer.finish(.failure(refusal))
            }
            begin(transfer)
        case .tooMany?:
            transfer.finish(.failure(URLError(.httpTooManyRedirects)))
        case let .refuse(refusal)?:
            transfer.finish(.failure(refusal))
        case .stop?, nil:
            transfer.succeed(status: status, head: head)
        }
    }

    /// Lets libcurl deliver a paused transfer's body again; its silence starts over (the wait was the reader's).
    /// A transfer waiting for its stream body's next bytes is resumed the same way.
    private func unpause(_ transfer: CurlTransfer) {
        guard transfer.isPaused || transfer.isAwaitingBody, let handle = transfer.easy?.raw else { return }
        transfer.isPaused = false
        transfer.isAwaitingBody = false
        transfer.heardFrom()
        // CURLPAUSE_CONT; libcurl may call the write callback (and pause again) before this returns.
        _ = curl.easyPause?(handle, 0)
    }

    private func abort(_ transfer: CurlTransfer, with error: any Error) {
        stopWaitingForConnection(transfer)
        release(transfer)
        transfer.finish(.failure(error))
    }

    /// Puts a transfer in `active` or takes it out, and tells other threads how many there are.
    private func setActive(_ transfer: CurlTransfer?, for handle: UnsafeMutableRawPointer) {
        active[handle] = transfer
        countTransfers()
    }

    /// Tells other threads how many transfers there are, those waiting for a connection included.
    func countTransfers() {
        let count = active.count + waitingForConnection
        lock.withLock {
            activeTotal = count
            mostActive = max(mostActive, count)
            if count == 0 {
                mostActiveLastTime = mostActive
                mostActive = 0
            }
        }
    }

    /// Takes the hop's handle out of the multi handle and back to the pool, and its connection to the host
    /// back to the transfers waiting for one.
    private func release(_ transfer: CurlTransfer) {
        transfer.stopWatchingHandshake()
        guard let pooled = transfer.easy else { return }
        _ = curl.multiRemoveHandle(multi, pooled.raw)
        transfer.easy = nil
        setActive(nil, for: pooled.raw)
        handles.giveBack(pooled)
        leaveHost(of: transfer)
    }

    /// Lets libcurl open as many connections to one host as a request's realm allows (it closes idle ones past
    /// its limit); a larger limit also makes room for more idle connections.
    func allowConnections(perHost limit: Int) {
        guard limit > hostConnectionCeiling else { return }
        hostConnectionCeiling = limit
        curl.setMulti(multi, LibCurl.Option.multiMaxHostConnections, limit)
        curl.setMulti(multi, LibCurl.Option.multiMaxConnects, Self.cachedConnections(perHost: limit))
    }
}

/// The loop as an executor for tasks: their jobs run on the loop thread between its turns, so that an awaited
/// request from such a task is begun and answered on one thread, with no hand-over between threads.
@available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)
extension CurlLoop: TaskExecutor {
    func enqueue(_ job: consuming ExecutorJob) {
        runOnLoop(UnownedJob(job))
    }
}
