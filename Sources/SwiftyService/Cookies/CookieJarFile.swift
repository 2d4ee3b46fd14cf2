import Foundation

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Why a cookie jar's file could not be used; names the file and the problem, never a cookie's value.
public struct CookieJarFileError: Error, Sendable, CustomStringConvertible, LocalizedError {
    /// The jar's file.
    public let file: URL
    /// What is wrong with it, such as "is not valid JSON".
    public let problem: String

    /// "Cookie jar file /path/cookies.json is not valid JSON".
    public var description: String { "Cookie jar file \(file.path) \(problem)" }

    /// The same text as `description`, for callers that show `localizedDescription`.
    public var errorDescription: String? { description }
}

/// A persisted jar's JSON file: read once, then rewritten whole after each change.
final class CookieJarFile: @unchecked Sendable {
    private struct Contents: Codable {
        var version: Int
        var cookies: [Cookie]
    }

    private static let version = 1

    let url: URL
    private let lock = NSLock()
    /// The newest change on disk; guarded by `lock`.
    private var writtenGeneration: UInt64 = 0

    init(url: URL) {
        self.url = url
    }

    /// Checks that the file can be written later, then returns the cookies it holds (none when it does not exist).
    func load() throws -> [Cookie] {
        let directory = url.deletingLastPathComponent().path
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory),
            isDirectory.boolValue
        else {
            throw problem("is in a directory that does not exist")
        }
        guard FileManager.default.isWritableFile(atPath: directory) else {
            throw problem("is in a directory that cannot be written")
        }
        guard FileManager.default.fileExists(atPath: url.path) else { return [] }
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw problem("cannot be read")
        }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        let contents: Contents
        do {
            contents = try decoder.decode(Contents.self, from: data)
        } catch {
            // Only the decoding error's shape is reported: its text could quote a cookie value.
            throw problem(describing: error)
        }
        guard contents.version == CookieJarFile.version else {
            throw problem("has unsupported version \(contents.version)")
        }
        return contents.cookies
    }

    /// Replaces the file's contents with `cookies`, unless a newer change has already been written.
    ///
    /// A failure is dropped: the jar keeps working in memory, and the next change writes everything again.
    func write(_ cookies: [Cookie], generation: UInt64) {
        lock.lock()
        defer { lock.unlock() }
        // Snapshots are taken under the jar's lock but written under this one, so they can arrive out of order.
        guard generation > writtenGeneration else { return }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.dateEncodingStrategy = .secondsSince1970
        let contents = Contents(
            version: CookieJarFile.version, cookies: cookies.sorted(by: Cookie.sortsBefore))
        guard let data = try? encoder.encode(contents), (try? replaceAtomically(with: data)) != nil else {
            return
        }
        writtenGeneration = generation
    }

    /// Writes a temporary file beside the real one and renames it over, so readers never see half a jar.
    private func replaceAtomically(with data: Data) throws {
        let temporary = url.deletingLastPathComponent()
            .appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString).tmp").path
        // Created 0600 rather than chmod-ed after writing, which would briefly expose the cookies.
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw CocoaError(.fileWriteNoPermission) }
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: false)
        defer { close(descriptor) }
        do {
            // A umask can only take bits away, but an unusual one could take the owner's.
            guard fchmod(descriptor, 0o600) == 0 else { throw CocoaError(.fileWriteNoPermission) }
            try handle.write(contentsOf: data)
            try handle.synchronize()
            guard rename(temporary, url.path) == 0 else { throw CocoaError(.fileWriteUnknown) }
        } catch {
            unlink(temporary)
            throw error
        }
    }

    private func problem(_ text: String) -> CookieJarFileError {
        CookieJarFileError(file: url, problem: text)
    }

    private func problem(describing error: any Error) -> CookieJarFileError {
        switch error as? DecodingError {
        case .keyNotFound(let key, let context)?:
            return problem(
                "is not a cookie jar file: \(Self.location(context.codingPath + [key])) is missing")
        case .typeMismatch(_, let context)?, .valueNotFound(_, let context)?:
            return problem(
                "is not a cookie jar file: \(Self.location(context.codingPath)) has the wrong type")
        case .dataCorrupted(let context)? where !context.codingPath.isEmpty:
            return problem("is not a cookie jar file: \(Self.location(context.codingPath)) is invalid")
        default:
            return problem("is not valid JSON")
        }
    }

    /// A coding path as `cookies[2].name`; field names and indexes only, never values.
    private static func location(_ path: [any CodingKey]) -> String {
        guard !path.isEmpty else { return "the top level" }
        let text = path.map { key in key.intValue.map { "[\($0)]" } ?? ".\(key.stringValue)" }.joined()
        return text.hasPrefix(".") ? String(text.dropFirst()) : text
    }
}
