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
/// cancelled.
public struct DownloadDestination: Sendable, Hashable {
    /// The file the body ends up in.
    public let url: URL
    /// Whether an existing file there may be replaced.
    public let replacesExisting: Bool

    /// The body goes to `url`; with `replacing`, over an existing file.
    public static func file(_ url: URL, replacing: Bool = false) -> DownloadDestination {
        DownloadDestination(url: url, replacesExisting: replacing)
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
