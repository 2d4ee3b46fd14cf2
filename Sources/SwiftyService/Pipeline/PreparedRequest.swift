import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A built request and everything needed to send it: the realm's decisions, frozen at build time, and the
/// call's own state (its events, progress, download staging) that the backend never sees. A class: the
/// pipeline's closures and the exchange hold it by one reference rather than by copies of every field.
///
/// Its way to an outcome is in this folder: the chain and the trips to the backend (Pipeline.swift), a
/// streamed call's hand-over to its reader (StreamedCall.swift), the verdict and the settlement.
final class PreparedRequest: Sendable {
    /// What the backend is asked to send.
    let backendRequest: BackendRequest
    /// What the request's settings decided, shared with every request built on them.
    let decided: SettingsDecisions
    /// Realm's, endpoint's and overrides' middleware, outermost first, with the realm's cache and coalescing.
    let chain: MiddlewareChain
    /// The deadline for the whole request as `request()` sends it (a stream asks ``limits`` for its own).
    let resourceTimeout: TimeInterval?
    /// Where an accepted body goes, moved there from ``downloadStaging`` when it is settled.
    let download: DownloadDestination?
    /// The file a download is written to until it is accepted.
    let downloadStaging: URL?
    /// The largest body the realm accepts in memory.
    let maxResponseSize: Int?
    /// The attempts' metrics, when they are collected and attempts go through middleware.
    let metricsLog: MetricsLog?
    /// Where the call's events go, when the realm has observers.
    let events: EventEmitter?
    /// The caller's progress handler, throttled; the backend reports into it.
    let progress: ProgressThrottle?
    /// The statuses accepted: the settings' own, or a WebSocket handshake's 101.
    private let acceptedStatusCodes: StatusCodes?
    /// Whether the answer is delivered on the settings' callback queue (a WebSocket handshake's is not).
    private let usesCallbackQueue: Bool

    // Kept here rather than read from `decided`: a realm that sets none has the default backend, made when
    // the first of them sends, not when it is configured.
    let backend: any NetworkBackend
    /// ``backend``, when it can carry out an awaited request on the sender's thread.
    let drivenBackend: (any CallerDrivenBackend)?
    var callbackQueue: DispatchQueue? { usesCallbackQueue ? decided.callbackQueue : nil }
    var validStatusCodes: StatusCodes { acceptedStatusCodes ?? decided.validStatusCodes }
    /// Realm's, endpoint's and overrides' middleware, outermost first; empty on the fast path.
    var middleware: [any Middleware] { chain.middleware }
    /// The realm's cache when it is first in ``middleware``: a fresh hit is answered before the chain starts.
    var leadingCache: CacheMiddleware? { chain.leadingCache }
    var errorBody: ErrorBody? { decided.errorBody }
    /// The limits the settings chose, for each way of sending the request.
    var limits: RequestLimits { decided.limits }
    /// What typed responses are read with: the topmost layer's decoder, if any sets one.
    var decoder: JSONDecoder? { decided.decoder }
    /// Whether identical calls in flight may share one trip (the realm coalesces, and nothing of this call
    /// is its own: no progress, no download).
    var coalesces: Bool { chain.coalesces }

    var urlRequest: URLRequest { backendRequest.urlRequest }

    init(
        backendRequest: BackendRequest, decided: SettingsDecisions, chain: MiddlewareChain,
        metricsLog: MetricsLog?, events: EventEmitter?, progress: ProgressThrottle?,
        resourceTimeout: TimeInterval?, download: DownloadDestination?,
        acceptedStatusCodes: StatusCodes? = nil, usesCallbackQueue: Bool = true
    ) {
        // Read before the request is stored, so that storing it is its last use: a move, not a copy of its
        // fields (and a destroy of the argument).
        downloadStaging = backendRequest.downloadFile
        maxResponseSize = backendRequest.maxResponseSize
        self.backendRequest = backendRequest
        self.decided = decided
        let chosen = decided.backend
        backend = chosen.backend
        drivenBackend = chosen.driven
        self.chain = chain
        self.metricsLog = metricsLog
        self.events = events
        self.progress = progress
        self.resourceTimeout = resourceTimeout
        self.download = download
        self.acceptedStatusCodes = acceptedStatusCodes
        self.usesCallbackQueue = usesCallbackQueue
    }
}
