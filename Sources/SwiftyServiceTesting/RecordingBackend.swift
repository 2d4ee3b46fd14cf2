import Foundation
import SwiftyService

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Wraps a backend and writes every exchange it makes to a cassette file, for ``ReplayBackend``.
///
/// ```swift
/// let recorder = try RecordingBackend(recording: URLSessionBackend(), to: cassetteURL)
/// ServiceRealm.get("users").use(recorder)
/// ```
/// The file is rewritten atomically after each exchange, so it is always a whole cassette. Secret
/// headers and query values (``/SwiftyService/Redaction/default``, the realm's declared secrets and `redaction`) are
/// stored redacted. Cancelled requests are not recorded. A WebSocket is recorded once it ends, with every
/// message it received and sent (the request's secret values scrubbed from them too), and its close.
public final class RecordingBackend: NetworkBackend, @unchecked Sendable {
    /// The cassette file.
    public let file: URL
    let backend: any NetworkBackend
    let redaction: Redaction
    private let lock = NSLock()
    private var recorded: Cassette
    private var failedWrite: (any Error)?

    /// Records what `backend` does to `file`; with `appending`, after the exchanges already in it.
    /// - Throws: ``CassetteError`` when appending to a file that is not a cassette.
    public init(
        recording backend: some NetworkBackend, to file: URL, redaction: Redaction = .default,
        appending: Bool = false
    ) throws {
        self.backend = backend
        self.file = file
        self.redaction = redaction
        recorded =
            appending && FileManager.default.fileExists(atPath: file.path)
            ? try Cassette.load(from: file) : Cassette()
    }

    /// What has been recorded so far.
    public var cassette: Cassette {
        lock.withLock { recorded }
    }

    /// Why the last write of the file failed, if it did; requests are not failed for it.
    public var writeError: (any Error)? {
        lock.withLock { failedWrite }
    }

    /// The wrapped backend's: it is the one that connects. A TLS policy itself is never recorded.
    public var supportedTLSFeatures: TLSFeatures { backend.supportedTLSFeatures }

    /// The wrapped backend's: it is the one that speaks HTTP.
    public var supportedHTTPVersions: Set<HTTPVersionPreference> { backend.supportedHTTPVersions }

    /// Sends through the wrapped backend and records the exchange before answering.
    public func send(
        _ request: BackendRequest, completion: @escaping @Sendable (Result<Response, any Error>) -> Void
    ) -> BackendTask {
        if request.isWebSocketHandshake { return sendHandshake(request, completion: completion) }
        return backend.send(request) { [self] result in
            if !Self.isCancellation(result) {
                record(Cassette.Interaction(request, result, redaction: redaction.union(request.redaction)))
            }
            completion(result)
        }
    }

    func record(_ interaction: Cassette.Interaction) {
        lock.withLock {
            recorded.interactions.append(interaction)
            do {
                try recorded.write(to: file)
                failedWrite = nil
            } catch {
                failedWrite = error
            }
        }
    }

    static func isCancellation(_ result: Result<Response, any Error>) -> Bool {
        guard case let .failure(error) = result else { return false }
        let nsError = error as NSError
        return error is CancellationError
            || (nsError.domain == NSURLErrorDomain && nsError.code == NSURLErrorCancelled)
    }
}
