import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The one protocol a transport implements: send a built request, answer once.
///
/// SwiftyService builds the `URLRequest` (URL, method, headers, body, timeout, cache policy) and hands it
/// to the realm's backend. Write a backend to put another network library under your endpoints — a
/// company's legacy client, a test double, an HTTP/2 client — without touching endpoint code.
/// A backend does not validate statuses or decode bodies; SwiftyService does that after it answers.
///
/// Rules: call `completion` exactly once, from any thread; report failures as thrown errors (`URLError`s
/// are mapped to ``ServiceError`` cases: `.timedOut` → ``ServiceError/timedOut(_:attempts:)``, `.cancelled` →
/// ``ServiceError/cancelled(_:attempts:)``, anything else → ``ServiceError/transport(_:underlying:attempts:)``); honour
/// `urlRequest.timeoutInterval`; return a ``BackendTask`` whose `cancel()` stops the transfer.
/// For a library with an `async` API, conform to ``AsyncNetworkBackend`` instead.
public protocol NetworkBackend: Sendable {
    /// Sends `request` and calls `completion` exactly once with the server's answer or the failure.
    /// - Returns: a task whose `cancel()` stops the transfer; SwiftyService reports the cancellation itself.
    func send(
        _ request: BackendRequest, completion: @escaping @Sendable (Result<Response, any Error>) -> Void
    )
        -> BackendTask

    /// Whether this backend streams bodies from ``BackendRequest/bodyFile`` and writes responses to
    /// ``BackendRequest/downloadFile`` itself. When not (the default), SwiftyService reads file bodies into
    /// memory before `send` and writes downloads to their files after it, so every backend handles
    /// uploads and downloads.
    var supportsStreaming: Bool { get }

    /// The parts of a realm's ``TLSPolicy`` this backend carries out on every connection it makes for a
    /// request (``BackendRequest/tlsPolicy``). A request whose policy needs more is refused with
    /// ``ServiceError/InvalidRequestReason/unsupportedTLSPolicy(backend:missing:)`` before `send` is called.
    ///
    /// None by default, so a backend that does not say fails closed. Declare a feature only if the backend
    /// also never reuses a connection made under another policy for the request.
    var supportedTLSFeatures: TLSFeatures { get }

    /// Whether a realm may open WebSockets through this backend; a handshake through one that cannot fails
    /// with ``WebSocketError/unsupportedBackend(_:)`` before anything is sent.
    var opensWebSockets: Bool { get }

    /// The versions of HTTP a realm may ask this backend to speak (``RealmConfiguration/setHTTPVersion(_:)``);
    /// only ``HTTPVersionPreference/automatic`` by default, so that a backend that does not say fails closed.
    var supportedHTTPVersions: Set<HTTPVersionPreference> { get }
}

extension NetworkBackend {
    /// `false`: SwiftyService moves file bodies and downloads through memory for this backend.
    public var supportsStreaming: Bool { false }

    /// None: a realm with a TLS policy cannot send through this backend.
    public var supportedTLSFeatures: TLSFeatures { [] }

    /// ``HTTPVersionPreference/automatic`` only: whatever the backend negotiates.
    public var supportedHTTPVersions: Set<HTTPVersionPreference> { [.automatic] }
}

extension BackendRequest {
    /// Refuses the request when its realm sets a TLS policy that `backend` cannot carry out in full:
    /// failing closed, before anything is sent, instead of connecting without a pin or a root.
    func checkHTTPVersion(for backend: any NetworkBackend) throws(ServiceError) {
        guard httpVersion != .automatic, !backend.supportedHTTPVersions.contains(httpVersion) else { return }
        throw .invalidRequest(
            .unsupportedHTTPVersion(backend: String(describing: type(of: backend)), version: httpVersion),
            method: HTTPMethod(rawValue: urlRequest.httpMethod ?? "GET"),
            url: (urlRequest.url?.absoluteString ?? "?").abbreviatedURL)
    }

    func checkTLSPolicy(for backend: any NetworkBackend) throws(ServiceError) {
        guard let tlsPolicy else { return }
        let missing = tlsPolicy.requiredFeatures.subtracting(backend.supportedTLSFeatures)
        guard !missing.isEmpty else { return }
        throw .invalidRequest(
            .unsupportedTLSPolicy(backend: String(describing: type(of: backend)), missing: missing),
            method: HTTPMethod(rawValue: urlRequest.httpMethod ?? "GET"),
            url: (urlRequest.url?.absoluteString ?? "?").abbreviatedURL)
    }
}

/// A backend for a network library with an `async` API: implement one `async` method.
///
/// ```swift
/// struct MyClientBackend: AsyncNetworkBackend {
///     let client: MyAsyncClient
///     func send(_ request: BackendRequest) async throws -> Response {
///         let (data, head) = try await client.perform(request.urlRequest)
///         return Response(request: request.urlRequest, response: head, data: data)
///     }
/// }
/// ```
/// Task cancellation reaches `send(_:)` when the request is cancelled.
public protocol AsyncNetworkBackend: NetworkBackend {
    /// Sends `request` and returns the server's answer, or throws the failure.
    func send(_ request: BackendRequest) async throws -> Response
}

extension AsyncNetworkBackend {
    /// Runs the `async` ``send(_:)`` in a task that the returned ``BackendTask`` cancels.
    public func send(
        _ request: BackendRequest, completion: @escaping @Sendable (Result<Response, any Error>) -> Void
    ) -> BackendTask {
        let task = Task {
            do {
                completion(.success(try await send(request)))
            } catch {
                completion(.failure(error))
            }
        }
        return BackendTask { task.cancel() }
    }
}

/// What a backend is asked to send: the built `URLRequest`, and what it was built from.
public struct BackendRequest: Sendable {
    /// The fields, behind one reference: a request is handed on and kept several times (the prepared request,
    /// the transfer), and a copy is then one retain rather than one per field; a change copies them first
    /// when the reference is shared.
    private var fields: CopyOnWriteBox<Fields>

    /// The request to send, complete with URL, method, headers, body, timeout and cache policy.
    public var urlRequest: URLRequest {
        get { fields.value.sent.urlRequest }
        // A changed request is read anew; what the builder wrote down no longer describes it.
        set { unique().value.sent = .given(newValue) }
    }
    /// The request to send, as the builder wrote it or as it was given.
    var sent: SentRequest { fields.value.sent }
    /// What the builder wrote, as it wrote it, while the request is unchanged: a transport that reads its
    /// parts takes them from here rather than through `URLRequest`'s accessors, which copy under a lock.
    var wire: WireForm? {
        guard case let .built(wire) = fields.value.sent else { return nil }
        return wire
    }
    /// The endpoint the request was built from, kept opaque here: ``endpoint`` reads it as what it is.
    var builtFrom: (any Sendable)? { fields.value.builtFrom }
    /// The CRUD method, if the request came from a ``Service``.
    public var crudMethod: CRUDMethod? { fields.value.crudMethod }
    /// The endpoint's ``SwiftyServiceProtocol/sampleData``, what stubs answer with.
    public var sampleData: Data { fields.value.sampleData }
    /// What the realm declares secret, for backends that log or record.
    public var redaction: Redaction { fields.value.redaction }
    /// A file the body is to be streamed from (`urlRequest.httpBody` is then empty). Only backends that
    /// declare ``NetworkBackend/supportsStreaming`` ever see one; others get the body in memory.
    public var bodyFile: URL? { bodySource?.url }
    /// Where to write the response body instead of memory; the ``Response`` then has `fileURL` set to it
    /// and empty `data`. Only streaming backends see one.
    public internal(set) var downloadFile: URL? {
        get { fields.value.downloadFile }
        set { unique().value.downloadFile = newValue }
    }
    /// The largest body the realm accepts in memory; a backend that can should stop the transfer and fail
    /// with ``ResponseTooLarge`` once the body (or its declared length) goes past it.
    public internal(set) var maxResponseSize: Int? {
        get { fields.value.maxResponseSize }
        set { unique().value.maxResponseSize = newValue }
    }
    /// The most connections the realm lets its requests hold to one host; `nil`: the backend's own limit.
    public internal(set) var maxConnectionsPerHost: Int? {
        get { fields.value.maxConnectionsPerHost }
        set { unique().value.maxConnectionsPerHost = newValue }
    }
    /// The version of HTTP to speak; only backends whose ``NetworkBackend/supportedHTTPVersions`` hold it
    /// see one other than ``HTTPVersionPreference/automatic``.
    public internal(set) var httpVersion: HTTPVersionPreference {
        get { fields.value.httpVersion }
        set { unique().value.httpVersion = newValue }
    }
    /// The realm's TLS policy, which the backend applies to every connection it makes for the request. Only
    /// backends whose ``NetworkBackend/supportedTLSFeatures`` cover it see one.
    public internal(set) var tlsPolicy: TLSPolicy? {
        get { fields.value.tlsPolicy }
        set { unique().value.tlsPolicy = newValue }
    }
    var bodySource: BodyFile? {
        get { fields.value.bodySource }
        set { unique().value.bodySource = newValue }
    }
    /// A body read from an `AsyncSequence`, once; only backends that stream it (``BodyStreamingBackend``) see
    /// one, others get it collected into `urlRequest.httpBody`.
    var bodyStream: BodyStream? {
        get { fields.value.bodyStream }
        set { unique().value.bodyStream = newValue }
    }
    var progress: ProgressThrottle? {
        get { fields.value.progress }
        set { unique().value.progress = newValue }
    }
    /// The bytes of the body on disk before this attempt, which a resumed download's progress counts from.
    var progressOffset: Int64 {
        get { fields.value.progressOffset }
        set { unique().value.progressOffset = newValue }
    }
    /// The resumable download this attempt belongs to: a backend that writes ``downloadFile`` hands what it
    /// wrote of a failed attempt to it (``DownloadResumption/interrupted(segment:head:)``) instead of removing it.
    var resumption: DownloadResumption? {
        get { fields.value.resumption }
        set { unique().value.resumption = newValue }
    }
    /// Whether the realm collects metrics: a backend that can measures the attempt into
    /// ``Response/metrics`` (one ``TransferMetrics``).
    public internal(set) var collectsMetrics: Bool {
        get { fields.value.collectsMetrics }
        set { unique().value.collectsMetrics = newValue }
    }
    /// Who hears of the redirects the backend follows, when the realm has observers.
    var reports: (any TransferReporting)? {
        get { fields.value.reports }
        set { unique().value.reports = newValue }
    }
    /// The realm's cookie jar, if it keeps cookies.
    var cookieJar: CookieJar? {
        get { fields.value.cookieJar }
        set { unique().value.cookieJar = newValue }
    }
    /// The `Cookie` header the request had before the jar's cookies joined it.
    var explicitCookies: String? {
        get { fields.value.explicitCookies }
        set { unique().value.explicitCookies = newValue }
    }
    /// Set when the request is a WebSocket handshake: backends that can open one answer `101` and leave the
    /// socket in it.
    var webSocketUpgrade: WebSocketUpgrade? {
        get { fields.value.webSocketUpgrade }
        set { unique().value.webSocketUpgrade = newValue }
    }

    init(
        sent: SentRequest, builtFrom: (any Sendable)?, crudMethod: CRUDMethod?, sampleData: Data,
        redaction: Redaction, bodySource: BodyFile? = nil, downloadFile: URL? = nil,
        maxResponseSize: Int? = nil,
        cookieJar: CookieJar? = nil, tlsPolicy: TLSPolicy? = nil, progress: ProgressThrottle? = nil,
        collectsMetrics: Bool = false, reports: (any TransferReporting)? = nil, bodyStream: BodyStream? = nil,
        maxConnectionsPerHost: Int? = nil, httpVersion: HTTPVersionPreference = .automatic,
        resumption: DownloadResumption? = nil
    ) {
        let fields = Fields(
            sent: sent, builtFrom: builtFrom, crudMethod: crudMethod,
            sampleData: sampleData, redaction: redaction, downloadFile: downloadFile,
            maxResponseSize: maxResponseSize, maxConnectionsPerHost: maxConnectionsPerHost,
            httpVersion: httpVersion, tlsPolicy: tlsPolicy, bodySource: bodySource, bodyStream: bodyStream,
            progress: progress, resumption: resumption, collectsMetrics: collectsMetrics, reports: reports,
            cookieJar: cookieJar)
        self.fields = CopyOnWriteBox(fields)
    }

    /// The fields, this request's own: copied first when another request shares them.
    private mutating func unique() -> CopyOnWriteBox<Fields> { CopyOnWriteBox.unique(&fields) }

    /// Reports how far the transfer has come; SwiftyService throttles what reaches the caller.
    public func reportProgress(_ progress: TransferProgress) {
        guard progressOffset > 0, progress.direction == .download else {
            self.progress?.report(progress)
            return
        }
        self.progress?.report(
            TransferProgress(
                direction: .download, completed: progressOffset + progress.completed,
                expected: progress.expected.map { progressOffset + $0 }))
    }

    /// Gives up the file a failed attempt wrote: to the resumable download it belongs to, which keeps what
    /// continues its partial file, or to nobody.
    func abandonDownload(head: HTTPURLResponse?) {
        guard let downloadFile else { return }
        if let resumption {
            resumption.interrupted(segment: downloadFile, head: head)
        } else {
            try? FileManager.default.removeItem(at: downloadFile)
        }
    }

    /// Whether the caller asked for progress reports (backends may then pick a slower, reporting path).
    public var wantsProgress: Bool { progress != nil }
}

/// ``BackendRequest``'s fields, which it keeps in a ``CopyOnWriteBox``.
private struct Fields: Sendable {
    var sent: SentRequest
    let builtFrom: (any Sendable)?
    let crudMethod: CRUDMethod?
    let sampleData: Data
    let redaction: Redaction
    var downloadFile: URL?
    var maxResponseSize: Int?
    var maxConnectionsPerHost: Int?
    var httpVersion: HTTPVersionPreference
    var tlsPolicy: TLSPolicy?
    var bodySource: BodyFile?
    var bodyStream: BodyStream?
    var progress: ProgressThrottle?
    var resumption: DownloadResumption?
    var collectsMetrics: Bool
    var reports: (any TransferReporting)?
    var cookieJar: CookieJar?
    var progressOffset: Int64 = 0
    var explicitCookies: String?
    var webSocketUpgrade: WebSocketUpgrade?
}

extension WireForm {
    /// The parts of `request`, read through its accessors.
    convenience init(reading request: URLRequest) {
        self.init(reading: request, host: BackendRequest.hostKey(ofURL:))
    }
}

/// What a backend tells the call while it works, besides its answer and its progress.
protocol TransferReporting: AnyObject, Sendable {
    /// The backend follows a redirect from `from` to `to`, answered with `statusCode`.
    func redirected(from: URL, to: URL, statusCode: Int)
    /// The request waits for a connection to its host (ConnectionLimit.swift).
    func waitingForConnection(_ wait: ConnectionWait)
}

/// A transfer a backend started, and how to stop it.
public struct BackendTask: Sendable {
    private enum Stop {
        case call(@Sendable () -> Void)
        case transfer(any StoppableTransfer)
        case none
    }

    private let stop: Stop

    /// A task that runs `cancel` to stop the transfer.
    public init(cancel: @escaping @Sendable () -> Void) {
        stop = .call(cancel)
    }

    /// A task that stops `transfer`: for a backend whose transfers are objects already, which spares it the
    /// closure (an allocation) per request.
    package init(stopping transfer: any StoppableTransfer) {
        stop = .transfer(transfer)
    }

    private init() { stop = .none }

    /// A task that cannot be stopped (it finished already, or the library offers no way).
    public static let uncancellable = BackendTask()

    /// Stops the transfer.
    public func cancel() {
        switch stop {
        case let .call(cancel): cancel()
        case let .transfer(transfer): transfer.stop()
        case .none: break
        }
    }
}

/// A backend's transfer that can be told to stop, from any thread.
package protocol StoppableTransfer: AnyObject, Sendable {
    /// Stops the transfer; it ends as cancelled unless it has ended already.
    func stop()
}

/// A backend that sends a ``RequestBody/stream(_:length:contentType:)`` body as it comes, from
/// ``BackendRequest/bodyStream``. A backend that streams files (``NetworkBackend/supportsStreaming``) but is not
/// one refuses such a body, rather than hold a body of any size in memory; one that does not stream gets it
/// collected, as it gets files read.
package protocol BodyStreamingBackend: NetworkBackend {}

/// A backend that can carry out a request on the sending thread instead of handing it to a thread of its
/// own, for senders that only wait for the answer; and that keeps the call's deadline with the transfer, so
/// that such a call needs no timer of its own.
package protocol CallerDrivenBackend: NetworkBackend {
    /// Sends `request` as ``NetworkBackend/send(_:completion:)`` does, except that `completion` may be
    /// called on this thread before this returns: only for a sender that does nothing but wait for it (an
    /// awaiting task, which the completion resumes). With a `deadline`, the transfer ends with
    /// ``CallDeadlinePassed`` if it has not ended that many seconds from now, redirects included.
    func sendDriving(
        _ request: BackendRequest, deadline: TimeInterval?,
        completion: @escaping @Sendable (Result<Response, any Error>) -> Void
    ) -> BackendTask
}
