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
    let backend: any NetworkBackend
    /// ``backend``, when it can carry out an awaited request on the sender's thread.
    let drivenBackend: (any CallerDrivenBackend)?
    let callbackQueue: DispatchQueue?
    let validStatusCodes: StatusCodes
    /// Realm's, endpoint's and overrides' middleware, outermost first; empty on the fast path.
    let middleware: [any Middleware]
    /// The realm's cache when it is first in ``middleware``: a fresh hit is answered before the chain starts.
    let leadingCache: CacheMiddleware?
    let errorBody: ErrorBody?
    /// The deadline for the whole request as `request()` sends it (a stream asks ``limits`` for its own).
    let resourceTimeout: TimeInterval?
    /// The limits the settings chose, for each way of sending the request.
    let limits: RequestLimits
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
    /// What typed responses are read with: the topmost layer's decoder, if any sets one.
    let decoder: JSONDecoder?
    /// Whether identical calls in flight may share one trip (the realm coalesces, and nothing of this call
    /// is its own: no progress, no download).
    let coalesces: Bool

    var urlRequest: URLRequest { backendRequest.urlRequest }

    init(
        backendRequest: BackendRequest, backend: ChosenBackend, callbackQueue: DispatchQueue?,
        validStatusCodes: StatusCodes, middleware: [any Middleware], leadingCache: CacheMiddleware?,
        metricsLog: MetricsLog?, events: EventEmitter?, progress: ProgressThrottle?,
        errorBody: ErrorBody?, resourceTimeout: TimeInterval?, limits: RequestLimits,
        download: DownloadDestination?,
        decoder: JSONDecoder?, coalesces: Bool
    ) {
        // Read before the request is stored, so that storing it is its last use: a move, not a copy of its
        // fields (and a destroy of the argument).
        downloadStaging = backendRequest.downloadFile
        maxResponseSize = backendRequest.maxResponseSize
        self.backendRequest = backendRequest
        self.backend = backend.backend
        drivenBackend = backend.driven
        self.callbackQueue = callbackQueue
        self.validStatusCodes = validStatusCodes
        self.middleware = middleware
        self.leadingCache = leadingCache
        self.metricsLog = metricsLog
        self.events = events
        self.progress = progress
        self.errorBody = errorBody
        self.resourceTimeout = resourceTimeout
        self.limits = limits
        self.download = download
        self.decoder = decoder
        self.coalesces = coalesces
    }
}
