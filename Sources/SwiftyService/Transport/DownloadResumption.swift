import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A download to a resumable destination, over its attempts and over calls: what an interrupted attempt
/// wrote stays in a partial file next to the destination, with a record of the version it belongs to, and
/// the next attempt asks for the rest (`Range` + `If-Range`, RFC 9110 §14.2 and §13.1.5).
///
/// Each attempt writes a segment of its own. A segment the server sent as the continuation of the partial
/// file (a `206` whose `Content-Range` starts where the file ends) is appended to it; one it sent whole (a
/// `200`: the version changed, or the server ignored the range) replaces it. Two versions are never spliced.
final class DownloadResumption: Sendable {
    /// What the partial file holds: the part of one version of one URL's body.
    struct Record: Codable, Equatable {
        let url: String
        /// The `If-Range` value: a strong `ETag`, else `Last-Modified`.
        let validator: String
        /// The length of the whole body, when the server said.
        let length: Int64?
    }

    private struct State {
        /// Where each attempt started: its segment file, and the partial file's length then.
        var offsets: [URL: Int64] = [:]
        /// The latest attempt's segment: an older one that ends late (its call timed out, a retry began)
        /// changes nothing, since the latest asked for the rest of the file as it was.
        var latest: URL?
        /// The segments of attempts that answered, which the call's answer may not be (a middleware sent
        /// the request again): let go of when the call ends.
        var answered: Set<URL> = []
    }

    /// The file the download ends up in.
    let destination: URL
    let partialFile: URL
    let recordFile: URL
    private let state = Locked.make(State())

    /// The destinations whose partial file a call in this process holds.
    private static let claimed = Locked.make([String: ObjectIdentifier]())

    /// The resumption of a download to `destination`; `nil` while another call of this process downloads
    /// there (that one keeps the partial file; this one downloads as a destination that does not resume).
    static func claim(_ destination: URL) -> DownloadResumption? {
        let path = partialFile(of: destination).standardizedFileURL.path
        let resumption = DownloadResumption(destination, path: path)
        let claimed = claimed.withLock { claims in
            guard claims[path] == nil else { return false }
            claims[path] = ObjectIdentifier(resumption)
            return true
        }
        return claimed ? resumption : nil
    }

    private let claimedPath: String

    private init(_ destination: URL, path: String) {
        self.destination = destination
        partialFile = Self.partialFile(of: destination)
        recordFile = Self.recordFile(of: destination)
        claimedPath = path
    }

    /// Where a resumable download to `destination` keeps what it received until it is whole: beside it, named
    /// after it, so that a later call (or run) finds it.
    static func partialFile(of destination: URL) -> URL {
        destination.deletingLastPathComponent().appendingPathComponent(
            ".\(destination.lastPathComponent).partial")
    }

    /// The record of what the partial file of a download to `destination` holds.
    static func recordFile(of destination: URL) -> URL {
        partialFile(of: destination).appendingPathExtension("json")
    }

    deinit {
        release()
    }

    /// An attempt answered with its body in `segment`, which the call may use or not.
    func answered(_ segment: URL) {
        state.withLock { _ = $0.answered.insert(segment) }
    }

    /// Lets another call download to the destination: this one has ended. The answers it did not use go.
    func release() {
        let unused = state.withLock { state -> Set<URL> in
            defer { state.answered = [] }
            for segment in state.answered { state.offsets[segment] = nil }
            return state.answered
        }
        for segment in unused { try? FileManager.default.removeItem(at: segment) }
        let me = ObjectIdentifier(self)
        Self.claimed.withLock { claims in
            if claims[claimedPath] == me { claims[claimedPath] = nil }
        }
    }

    /// Makes `request` the next attempt: a segment of its own to write to and, when a partial file of the
    /// same URL's version is there, a request for the rest of it (progress counts from the bytes on disk).
    func prepare(_ request: inout BackendRequest) {
        let segment = destination.deletingLastPathComponent().appendingPathComponent(
            ".\(destination.lastPathComponent).\(UUID().uuidString).part")
        let url = request.urlRequest.url?.absoluteString ?? ""
        let (offset, record) = state.withLock { state -> (Int64, Record?) in
            var resumed: (Int64, Record?) = (0, nil)
            if let record = self.record(), record.url == url, let size = fileSize(partialFile), size > 0 {
                resumed = (size, record)
            } else {
                discardPartial()
            }
            state.offsets[segment] = resumed.0
            state.latest = segment
            return resumed
        }
        request.downloadFile = segment
        request.progressOffset = offset
        guard let record else { return }
        request.urlRequest.setValue("bytes=\(offset)-", forHTTPHeaderField: "Range")
        request.urlRequest.setValue(record.validator, forHTTPHeaderField: "If-Range")
        // Ranges count the bytes of the representation as sent: a coded one's would not be those on disk.
        request.urlRequest.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
    }

    /// An attempt failed after writing `segment` (or some of it) under `head`: what continues or replaces
    /// the partial file is kept there, the rest let go of.
    func interrupted(segment: URL, head: HTTPURLResponse?) {
        state.withLock { state in
            defer { try? FileManager.default.removeItem(at: segment) }
            guard let offset = state.offsets.removeValue(forKey: segment), state.latest == segment, let head,
                let written = fileSize(segment), written > 0
            else { return }
            switch head.statusCode {
            case 206 where offset > 0:
                guard let range = ContentRange(head), range.first == offset,
                    fileSize(partialFile) == offset, isIdentity(head)
                else { return discardPartial() }
                append(segment, to: partialFile)
            case 200:
                discardPartial()
                guard let record = Record(head), isIdentity(head) else { return }
                guard (try? FileManager.default.moveItem(at: segment, to: partialFile)) != nil else { return }
                write(record)
            default:
                return
            }
        }
    }

    /// The answer to an attempt that wrote its body to `segment`: the whole body in one file, its name in
    /// `fileURL`. A `206` continues the partial file; a `416` says that it is whole already.
    func finish(_ response: Response, segment: URL) throws -> Response {
        try state.withLock { state -> Response in
            state.answered.remove(segment)
            let offset = state.offsets.removeValue(forKey: segment) ?? 0
            var response = response
            switch response.statusCode {
            case 206 where offset > 0:
                // The rest, all of it: from where the file ends to the end of the body.
                guard let range = ContentRange(response.response), range.first == offset,
                    let last = range.last,
                    range.complete.map({ last + 1 == $0 }) ?? true, fileSize(segment) == last - offset + 1,
                    fileSize(partialFile) == offset, isIdentity(response.response)
                else {
                    discardPartial()
                    try? FileManager.default.removeItem(at: segment)
                    throw DownloadResumeError(
                        url: response.response.url?.absoluteString ?? "?", offset: offset,
                        contentRange: response.header("Content-Range"))
                }
                append(segment, to: partialFile)
                try? FileManager.default.removeItem(at: segment)
                try? FileManager.default.removeItem(at: recordFile)
                response.fileURL = partialFile
            case 416 where offset > 0:
                // The range starts past the end: the partial file is the whole body if the server says so.
                guard let range = ContentRange(response.response), range.complete == offset else {
                    discardPartial()
                    try? FileManager.default.removeItem(at: segment)
                    throw DownloadResumeError(
                        url: response.response.url?.absoluteString ?? "?", offset: offset,
                        contentRange: response.header("Content-Range"))
                }
                try? FileManager.default.removeItem(at: segment)
                try? FileManager.default.removeItem(at: recordFile)
                response = response.completedFromPartial(partialFile, length: offset)
            case 200...299:
                discardPartial()
            default:
                break
            }
            return response
        }
    }

    /// The partial file's record, if it has one.
    private func record() -> Record? {
        guard let data = try? Data(contentsOf: recordFile) else { return nil }
        return try? JSONDecoder().decode(Record.self, from: data)
    }

    private func write(_ record: Record) {
        guard let data = try? JSONEncoder().encode(record) else { return discardPartial() }
        if (try? data.write(to: recordFile, options: .atomic)) == nil { discardPartial() }
    }

    private func discardPartial() {
        try? FileManager.default.removeItem(at: partialFile)
        try? FileManager.default.removeItem(at: recordFile)
    }

    private func isIdentity(_ head: HTTPURLResponse) -> Bool {
        let coding = head.value(forHTTPHeaderField: "Content-Encoding")?.trimmingCharacters(in: .whitespaces)
        return coding == nil || coding == "" || coding?.lowercased() == "identity"
    }

    /// Appends `segment` to `file`; on a failure to write, drops the partial file.
    private func append(_ segment: URL, to file: URL) {
        guard let input = try? FileHandle(forReadingFrom: segment),
            let output = try? FileHandle(forWritingTo: file)
        else { return discardPartial() }
        defer {
            try? input.close()
            try? output.close()
        }
        do {
            try output.seekToEnd()
            #if os(Linux)
            // In the kernel, without a trip through this process's memory (sendfile(2) between files: Linux 2.6.33 on).
            while true {
                let copied = sendfile(output.fileDescriptor, input.fileDescriptor, nil, 1 << 30)
                if copied > 0 { continue }
                if copied == 0 { return }
                // Not between these file systems, or not on this kernel: by reads and writes, from where it stopped.
                break
            }
            #endif
            while let chunk = try input.read(upToCount: 1 << 20), !chunk.isEmpty {
                try output.write(contentsOf: chunk)
            }
        } catch {
            discardPartial()
        }
    }
}

/// The size of the file at `url`, if there is one.
private func fileSize(_ url: URL) -> Int64? {
    (try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? Int64
}

extension DownloadResumption.Record {
    /// The record of a `200`'s body, when it can be resumed: the server takes byte ranges
    /// (`Accept-Ranges: bytes`) and gave a validator `If-Range` can carry (a strong `ETag`, else
    /// `Last-Modified`).
    init?(_ head: HTTPURLResponse) {
        let ranges = head.value(forHTTPHeaderField: "Accept-Ranges")?.lowercased()
        guard let ranges,
            ranges.split(separator: ",").contains(where: {
                $0.trimmingCharacters(in: .whitespaces) == "bytes"
            })
        else { return nil }
        let etag = head.value(forHTTPHeaderField: "ETag")?.trimmingCharacters(in: .whitespaces)
        // A weak ETag may not go in If-Range (RFC 9110 §13.1.5).
        let strong = etag.flatMap { $0.hasPrefix("\"") ? $0 : nil }
        guard let validator = strong ?? head.value(forHTTPHeaderField: "Last-Modified"), !validator.isEmpty,
            let url = head.url?.absoluteString
        else { return nil }
        let length = head.expectedContentLength
        self.init(url: url, validator: validator, length: length >= 0 ? length : nil)
    }
}

/// A `Content-Range` of bytes (RFC 9110 §14.4): `bytes 100-199/1000`, `bytes 100-199/*` or `bytes */1000`.
struct ContentRange: Equatable {
    let first: Int64
    /// The last byte's position; `nil` for an unsatisfied range (`bytes */1000`).
    let last: Int64?
    /// The length of the whole body, when known.
    let complete: Int64?

    init?(_ head: HTTPURLResponse) {
        guard let value = head.value(forHTTPHeaderField: "Content-Range") else { return nil }
        self.init(value)
    }

    init?(_ value: String) {
        let parts = value.trimmingCharacters(in: .whitespaces).split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bytes" else { return nil }
        let spec = parts[1].split(separator: "/", omittingEmptySubsequences: false)
        guard spec.count == 2 else { return nil }
        if spec[1] == "*" {
            complete = nil
        } else if let length = Int64(spec[1]), length >= 0 {
            complete = length
        } else {
            return nil
        }
        if spec[0] == "*" {
            guard complete != nil else { return nil }
            first = complete ?? 0
            last = nil
            return
        }
        let bounds = spec[0].split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = Int64(bounds[0]), let last = Int64(bounds[1]), first >= 0,
            last >= first, complete.map({ last < $0 }) ?? true
        else { return nil }
        self.first = first
        self.last = last
    }
}

/// A resumed download's answer that does not continue the partial file: a `206` whose `Content-Range` does
/// not start where the file ends or does not reach the end, or a `416` that does not say the file is whole.
/// The partial file is dropped (the next attempt starts over); nothing was spliced.
public struct DownloadResumeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The URL downloaded.
    public let url: String
    /// The bytes on disk, where the rest was asked from.
    public let offset: Int64
    /// The answer's `Content-Range`, if it had one.
    public let contentRange: String?

    /// The cause, naming the URL.
    public var description: String {
        "\(url): asked for the bytes from \(offset) on, the server answered with "
            + (contentRange.map { "Content-Range: \($0)" } ?? "no Content-Range")
            + ", which does not continue the partial download; it was dropped"
    }
}

extension Response {
    /// The `200` a `416` stands for when the partial file was the whole body: that file, and its length.
    fileprivate func completedFromPartial(_ file: URL, length: Int64) -> Response {
        var headers = allHeaders.filter { name, _ in
            !["content-range", "content-length", "content-type"].contains(name.lowercased())
        }
        headers["Content-Length"] = String(length)
        var response = Response(
            request: request, statusCode: 200, headers: headers, url: url)
        response.fileURL = file
        response.metrics = metrics
        response.attempts = attempts
        return response
    }
}
