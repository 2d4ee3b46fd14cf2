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
/// `maxConnectionsPerHost` per host), HTTP/2 is used where the server offers it over TLS, proxies come
/// from the environment (`http_proxy`, `https_proxy`, `no_proxy`), and compressed bodies are decoded.
/// Redirects follow a ``RedirectPolicy`` exactly as ``URLSessionBackend`` does (secrets dropped across
/// origins, 307/308 keep method and body); libcurl never follows one on its own. Timeouts follow
/// URLSession's meaning (no byte for that long). Bodies stream from files and downloads go straight to
/// disk. libcurl is loaded at run time, so building needs nothing beyond the toolchain.
///
/// Completions run on the backend's thread: keep them short, or give the realm a callback queue.
/// An awaited request (`try await endpoint.request()`) skips that thread while it has nothing in flight:
/// the awaiting thread sends it and waits up to a millisecond for the answer, then hands it over. A
/// server that answers that fast costs no thread hop at all.
public final class CurlBackend: NetworkBackend {
    let loop: CurlLoop
    let policy: RedirectPolicy

    /// A backend with its own libcurl thread.
    /// - Throws: ``CurlUnavailable`` when libcurl (7.68 or later) cannot be loaded.
    public convenience init(maxConnectionsPerHost: Int = 8, redirects policy: RedirectPolicy = .default)
        throws
    {
        try self.init(maxConnectionsPerHost: maxConnectionsPerHost, redirects: policy, tlsSupport: .shared)
    }

    /// A backend that carries out TLS policies as a libcurl with `tlsSupport` would (tests take the paths
    /// of older libcurls with it).
    init(
        maxConnectionsPerHost: Int = 8, redirects policy: RedirectPolicy = .default,
        tlsSupport: CurlTLSSupport
    )
        throws
    {
        let curl = try LibCurl.shared.get()
        loop = try CurlLoop(curl: curl, maxConnectionsPerHost: maxConnectionsPerHost, tlsSupport: tlsSupport)
        self.policy = policy
    }

    deinit {
        loop.shutdown()
    }

    /// Transfers under way or waiting to start.
    public var transfersInFlight: Int { loop.activeCount }

    /// The name of the thread that drives this backend's transfers, as `ps -L`, `top -H` and debuggers show it.
    public var threadName: String { loop.threadName }

    /// Streams file bodies and writes downloads to disk itself.
    public var supportsStreaming: Bool { true }

    /// What the loaded libcurl carries out of a realm's ``TLSPolicy``: with OpenSSL (Debian's libcurl),
    /// all of it. Pins are checked against the server's own (leaf) certificate during the handshake, before
    /// a byte of the request is sent.
    public var supportedTLSFeatures: TLSFeatures { loop.tlsSupport.features }

    /// Queues the request on the libcurl thread.
    public func send(
        _ request: BackendRequest, completion: @escaping @Sendable (Result<Response, any Error>) -> Void
    ) -> BackendTask {
        send(request, driving: false, completion: completion)
    }

    private func send(
        _ request: BackendRequest, driving: Bool,
        completion: @escaping @Sendable (Result<Response, any Error>) -> Void
    ) -> BackendTask {
        let transfer = CurlTransfer(request: request, policy: policy, loop: loop, completion: completion)
        if driving { loop.startDriving(transfer) } else { loop.start(transfer) }
        return BackendTask(stopping: transfer)
    }
}

extension CurlBackend: CallerDrivenBackend {
    /// Carries the request out on this thread when the libcurl thread is idle, for up to a millisecond.
    package func sendDriving(
        _ request: BackendRequest, completion: @escaping @Sendable (Result<Response, any Error>) -> Void
    ) -> BackendTask {
        send(request, driving: true, completion: completion)
    }
}
