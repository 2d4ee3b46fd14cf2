import Foundation

/// Where a downloaded body goes: a file, moved into place atomically once the response is accepted.
///
/// ```swift
/// enum Files: SwiftyServiceProtocol {
///     case archive(id: Int, to: URL)
///     var download: DownloadDestination? {
///         switch self { case let .archive(_, url): .file(url, replacing: true) }
///     }
///     …
/// }
/// let response = try await Files.archive(id: 7, to: url).request()   // response.fileURL == url
/// ```
/// Parent directories are created; an existing file is replaced only with `replacing: true` (otherwise
/// the request is refused before anything is sent). Nothing is left behind when the request fails or is
/// cancelled — unless the destination is `resumable`:
///
/// ```swift
/// var download: DownloadDestination? { .file(url, replacing: true, resumable: true) }
/// ```
/// A resumable download that fails (the connection lost, a timeout, cancelled) keeps what it received in a
/// partial file next to the destination, with the version it belongs to; the next attempt (a retry of the
/// `.retry()` middleware, or a later call, even in another run of the app) asks only for the rest, with
/// `Range` and `If-Range`, and progress counts from the bytes on disk. The server must advertise
/// `Accept-Ranges: bytes` and give a strong `ETag` or a `Last-Modified`; a body sent with a
/// `Content-Encoding` is not resumed. When the version changed (or the server ignores the range) the
/// answer is a `200` with the whole new body, which replaces the partial file: two versions are never
/// spliced. A resumed download answers with the server's `206`; a `206` that does not continue the file
/// fails with ``DownloadResumeError`` and drops it. Only backends that write downloads themselves
/// (``NetworkBackend/supportsStreaming``: `CurlBackend`, `URLSessionBackend`) keep partial files.
public struct DownloadDestination: Sendable, Hashable {
    /// The file the body ends up in.
    public let url: URL
    /// Whether an existing file there may be replaced.
    public let replacesExisting: Bool
    /// Whether a failed download keeps what it received, for the next attempt to resume.
    public let resumes: Bool

    /// The body goes to `url`; with `replacing`, over an existing file; with `resumable`, a failed download
    /// keeps what it received and the next one asks only for the rest.
    public static func file(_ url: URL, replacing: Bool = false, resumable: Bool = false)
        -> DownloadDestination
    {
        DownloadDestination(url: url, replacesExisting: replacing, resumes: resumable)
    }

    /// The bytes a failed resumable download left for the next one; `nil` when there are none.
    public var partialLength: Int64? {
        guard resumes, FileManager.default.fileExists(atPath: DownloadResumption.recordFile(of: url).path)
        else { return nil }
        return
            (try? FileManager.default.attributesOfItem(atPath: DownloadResumption.partialFile(of: url).path))?[
                .size] as? Int64
    }

    /// Removes what a failed resumable download left, so that the next one starts over.
    public func discardPartial() {
        try? FileManager.default.removeItem(at: DownloadResumption.partialFile(of: url))
        try? FileManager.default.removeItem(at: DownloadResumption.recordFile(of: url))
    }

    /// A file next to the destination to download into, so that the final move stays on one file system.
    func stagingFile() -> URL {
        url.deletingLastPathComponent().appendingPathComponent(
            ".\(url.lastPathComponent).\(UUID().uuidString).part")
    }

    /// Moves a finished download from `staging` to the destination.
    func settle(from staging: URL) throws {
        if replacesExisting {
            // rename(2) replaces an existing file atomically: readers see the old file or the new one.
            guard rename(staging.path, url.path) == 0 else {
                throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: url.path])
            }
        } else {
            guard !FileManager.default.fileExists(atPath: url.path) else {
                throw CocoaError(.fileWriteFileExists, userInfo: [NSFilePathErrorKey: url.path])
            }
            try FileManager.default.moveItem(at: staging, to: url)
        }
    }

    /// Makes sure the directory exists.
    func prepareDirectory() throws {
        try FileManager.default.createDirectory(
            at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
    }
}
