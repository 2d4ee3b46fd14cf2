import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A backend on libcurl's multi interface, for Linux services that call other HTTP APIs at volume.
///
/// ```swift
/// import SwiftyService
/// ServiceRealm.get("inventory").use(try CurlBackend())
/// ```
/// One dedicated thread drives the backend's transfers: connections are reused (at most
/// `maxConnectionsPerHost` per host, or a realm's own ``RealmConfiguration/setMaxConnectionsPerHost(_:)``; a
/// request past it waits, and its call is told), HTTP/2 is used where the server offers it over TLS (requests
/// to such a host share its connections), proxies come from the environment (`http_proxy`, `https_proxy`,
/// `no_proxy`; when it has no `*_proxy` variable as the first backend starts, requests go direct without
/// reading it again), and compressed bodies are decoded.
/// Redirects follow a ``RedirectPolicy`` exactly as ``URLSessionBackend`` does (secrets dropped across
/// origins, 307/308 keep method and body); libcurl never follows one on its own. Timeouts follow
/// URLSession's meaning (no byte for that long). Bodies stream from files and downloads go straight to
/// disk. libcurl is loaded at run time, so building needs nothing beyond the toolchain.
///
/// Completions run on the backend's thread: keep them short, or give the realm a callback queue.
/// An awaited request (`try await endpoint.request()`) skips that thread while it has nothing in flight:
/// the awaiting thread sends it and waits up to a millisecond for the answer, then hands it over. A
/// server that answers that fast costs no thread hop at all.
///
/// One thread carries some 25,000 requests a second on a small machine. A service that calls several
/// hosts harder than that, on more cores, can give the backend more threads (`threads:`): each has its
/// own connections, and all requests to one host (scheme, name and port) go to the same thread, so that
/// `maxConnectionsPerHost` and connection reuse hold as with one.
public final class CurlBackend: NetworkBackend {
    /// The loops, each with its thread and connections; a host's requests all go to one of them.
    let loops: [CurlLoop]
    let policy: RedirectPolicy

    /// A backend with its own libcurl thread, or `threads` of them (1 to 64) that share the hosts out.
    /// - Throws: ``CurlUnavailable`` when libcurl (7.68 or later) cannot be loaded.
    public convenience init(
        maxConnectionsPerHost: Int = 8, redirects policy: RedirectPolicy = .default, threads: Int = 1
    ) throws {
        try self.init(
            maxConnectionsPerHost: maxConnectionsPerHost, redirects: policy, threads: threads,
            tlsSupport: .shared)
    }

    /// A backend that carries out TLS policies as a libcurl with `tlsSupport` would (tests take the paths
    /// of older libcurls with it).
    init(
        maxConnectionsPerHost: Int = 8, redirects policy: RedirectPolicy = .default, threads: Int = 1,
        tlsSupport: CurlTLSSupport
    )
        throws
    {
        let curl = try LibCurl.shared.get()
        var loops: [CurlLoop] = []
        for _ in 0..<min(max(threads, 1), 64) {
            do {
                loops.append(
                    try CurlLoop(
                        curl: curl, maxConnectionsPerHost: maxConnectionsPerHost, tlsSupport: tlsSupport))
            } catch {
                // The loops made so far have threads of their own: they end with the failed backend.
                for loop in loops { loop.shutdown() }
                throw error
            }
        }
        self.loops = loops
        self.policy = policy
    }

    deinit {
        for loop in loops { loop.shutdown() }
    }

    /// Transfers under way or waiting to start.
    public var transfersInFlight: Int { loops.reduce(0) { $0 + $1.activeCount } }

    /// The name of the (first) thread that drives this backend's transfers, as `ps -L`, `top -H` and
    /// debuggers show it.
    public var threadName: String { loops[0].threadName }

    /// The names of all the threads that drive this backend's transfers, one per `threads`.
    public var threadNames: [String] { loops.map(\.threadName) }

    /// The loop that carries out requests to `url`'s host: the same for every request to it.
    func loop(for url: URL?) -> CurlLoop {
        guard loops.count > 1 else { return loops[0] }
        return loops[Self.hostKey(of: url) % loops.count]
    }

    /// The loop that carries out `request`, its URL read only when there is more than one.
    func loop(for request: BackendRequest) -> CurlLoop {
        loops.count > 1 ? loop(for: request.sent.url) : loops[0]
    }

    /// A number for the URL's scheme, host and port, the same in every run (``HeaderName/fold(_:)``, which
    /// ignores the case of letters): which loop a host goes to does not change from one launch to the next.
    static func hostKey(of url: URL?) -> Int {
        var key = "\(url?.scheme ?? "")://\(url?.host ?? ""):\(url?.port ?? -1)"
        return Int(key.withUTF8 { HeaderName.fold(UnsafeRawBufferPointer($0)) } >> 33)
    }

    /// Streams file bodies and writes downloads to disk itself.
    public var supportsStreaming: Bool { true }

    /// What the loaded libcurl carries out of a realm's ``TLSPolicy``: with OpenSSL (Debian's libcurl),
    /// all of it. Pins are checked against the server's own (leaf) certificate during the handshake, before
    /// a byte of the request is sent.
    public var supportedTLSFeatures: TLSFeatures { loops[0].tlsSupport.features }

    /// Every one: libcurl speaks HTTP/1.1 only, negotiates HTTP/2 over TLS, or speaks it from the first byte.
    public var supportedHTTPVersions: Set<HTTPVersionPreference> { Set(HTTPVersionPreference.allCases) }

    /// Queues the request on the libcurl thread.
    public func send(
        _ request: BackendRequest, completion: @escaping @Sendable (Result<Response, any Error>) -> Void
    ) -> BackendTask {
        send(request, driving: false, completion: completion)
    }

    private func send(
        _ request: BackendRequest, driving: Bool, deadline: TimeInterval? = nil,
        completion: @escaping @Sendable (Result<Response, any Error>) -> Void
    ) -> BackendTask {
        if let upgrade = request.webSocketUpgrade {
            return CurlWebSocketConnector.open(
                request, upgrade: upgrade, tlsSupport: loops[0].tlsSupport, completion: completion)
        }
        let loop = self.loop(for: request)
        let transfer = CurlTransfer(request: request, policy: policy, loop: loop, completion: completion)
        if let deadline { transfer.keepDeadline(after: deadline) }
        if driving { loop.startDriving(transfer) } else { loop.start(transfer) }
        return BackendTask(stopping: transfer)
    }
}

@available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)
extension CurlBackend {
    /// Runs tasks on the backend's (first) libcurl thread: `Task(executorPreference: backend.executor)`.
    ///
    /// An awaited request from such a task is begun and answered on that thread, with no hand-over
    /// between threads either way: less CPU per request, but one thread does all of the work, so it
    /// suits services that count CPU more than one host's throughput. The thread also carries every
    /// transfer of the backend, so such tasks must not block it (no blocking sleeps, no waiting on locks held
    /// long, no heavy computing); after the backend is gone their jobs run on the global executor.
    public var executor: any TaskExecutor { loops[0] }
}

extension CurlBackend: CallerDrivenBackend {
    /// Carries the request out on this thread when the libcurl thread is idle, for up to a millisecond.
    package func sendDriving(
        _ request: BackendRequest, deadline: TimeInterval?,
        completion: @escaping @Sendable (Result<Response, any Error>) -> Void
    ) -> BackendTask {
        send(request, driving: true, deadline: deadline, completion: completion)
    }
}

/// Sends stream bodies as they come, through a bounded buffer (CurlTransfer's read callback).
extension CurlBackend: BodyStreamingBackend {}
