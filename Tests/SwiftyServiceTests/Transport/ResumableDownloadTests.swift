import Foundation
import SwiftyService
import SwiftyServiceCurl
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Downloads to a resumable destination against Tests/Servers/range_server.py, which cuts its answers where a
/// test says: what an interrupted download received stays, the next attempt or call asks for the rest with
/// `Range` + `If-Range`, and the file that results is the server's, byte for byte — never two versions spliced.
@Suite("Resumable downloads", .timeLimit(.minutes(5)), .tags(.realServer))
struct ResumableDownloadTests {
    let temporaryFiles = TemporaryFiles()

    enum Kind: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case curl, urlSession
        var testDescription: String { rawValue }
        func make() throws -> any NetworkBackend {
            switch self {
            case .curl: try CurlBackend()
            case .urlSession: URLSessionBackend()
            }
        }
    }

    /// What the server saw of one resource (range_server.py `/stats`).
    struct Stats: Decodable {
        let requests: Int
        let body_bytes: Int
        let ranges: [String?]
        let if_ranges: [String?]
        let statuses: [Int]
        let sha256: [String: String]
    }

    static func serverURL() throws -> URL {
        guard let value = ProcessInfo.processInfo.environment["RANGE_URL"], let url = URL(string: value)
        else {
            throw SetupError(description: "RANGE_URL is not set: run the tests with scripts/test")
        }
        return url
    }

    func realm(_ kind: Kind, retries: Int = 0) throws -> ServiceRealm {
        let realm = uniqueRealm("resume").setBaseURL(try Self.serverURL()).use(try kind.make())
        if retries > 0 {
            var policy = RetryPolicy.maxRetries(retries)
            policy.baseDelay = 0.001
            policy.maxDelay = 0.01
            realm.addMiddleware(.retry(policy))
        }
        return realm
    }

    func stats(_ id: String) async throws -> Stats {
        let realm = uniqueRealm().setBaseURL(try Self.serverURL())
        return try await TestEndpoint(realm, "stats", parameters: ["id": id]).request(as: Stats.self)
    }

    /// A download of resource `id` to `destination`, the server set to answer with `options` (range_server.py
    /// `/setup`; none: plainly) from now on. The URL is the same whatever the options and size.
    func download(
        _ realm: ServiceRealm, _ id: String, size: Int, to destination: DownloadDestination,
        _ options: [String: any Sendable] = [:]
    ) async throws -> DownloadEndpoint {
        var setup: [String: any Sendable] = ["id": id, "size": size]
        setup.merge(options) { _, new in new }
        _ = try await TestEndpoint(uniqueRealm().setBaseURL(try Self.serverURL()), "setup", parameters: setup)
            .request()
        return DownloadEndpoint(realm: realm, path: "file", destination: destination, query: ["id": id])
    }

    func destination() throws -> DownloadDestination {
        let directory = temporaryFiles.uniquePath("resume")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return .file(directory.appendingPathComponent("archive.bin"), resumable: true)
    }

    /// The files in the destination's directory, hidden ones too.
    func filesBeside(_ destination: DownloadDestination) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: destination.url.deletingLastPathComponent().path)
            .sorted()
    }

    @Test(arguments: Kind.allCases)
    func aDownloadCutTwentyTimesResumesToTheSameBytes(_ kind: Kind) async throws {
        let size = 4 << 20
        var cuts = Set<Int>()
        while cuts.count < 20 { cuts.insert(Int.random(in: 1..<size)) }
        let positions = cuts.sorted()
        let id = UUID().uuidString
        let destination = try destination()
        let response = try await download(
            try realm(kind, retries: 25), id, size: size, to: destination,
            ["cuts": positions.map(String.init).joined(separator: ",")]
        ).request()
        let stats = try await stats(id)
        #expect(response.fileURL == destination.url)
        #expect(response.attempts == 21, "cut at \(positions)")
        #expect(sha256Hex(file: destination.url) == stats.sha256["1"], "cut at \(positions)")
        #expect(stats.ranges == [nil] + positions.map { "bytes=\($0)-" })
        #expect(stats.if_ranges.dropFirst().allSatisfy { $0 == "\"v1-\(size)\"" })
        #expect(stats.statuses == [200] + Array(repeating: 206, count: 20))
        // Each resume asks for exactly what is missing: no byte is sent twice.
        #expect(stats.body_bytes == size, "\(stats.body_bytes) bytes sent for a body of \(size)")
        #expect(try filesBeside(destination) == ["archive.bin"], "nothing left behind")
    }

    @Test(arguments: Kind.allCases)
    func aFailedDownloadKeepsItsPartOfTheBodyAndTheNextCallAsksOnlyForTheRest(_ kind: Kind) async throws {
        let size = 3 << 20
        let id = UUID().uuidString
        let destination = try destination()
        let realm = try realm(kind)
        let endpoint = try await download(realm, id, size: size, to: destination, ["cuts": 1_000_000])
        let failure = await #expect(throws: ServiceError.self) { try await endpoint.request() }
        #expect(failure?.kind == .transport, "\(String(describing: failure))")
        #expect(!FileManager.default.fileExists(atPath: destination.url.path))
        #expect(destination.partialLength == 1_000_000)

        let progress = ProgressLog()
        let response = try await endpoint.transfer(progress: { progress.add($0) })
        #expect(response.statusCode == 206)
        let stats = try await stats(id)
        #expect(sha256Hex(file: destination.url) == stats.sha256["1"])
        #expect(stats.ranges == [nil, "bytes=1000000-"])
        #expect(stats.body_bytes == size)
        // Progress counts from the bytes on disk, up to the whole body.
        let reports = progress.all.filter { $0.direction == .download }
        #expect(reports.first.map { $0.completed >= 1_000_000 } == true, "\(reports.prefix(3))")
        #expect(reports.allSatisfy { $0.expected == Int64(size) }, "\(reports.prefix(3))")
        #expect(reports.last?.completed == Int64(size))
        #expect(destination.partialLength == nil)
        #expect(try filesBeside(destination) == ["archive.bin"])
    }

    @Test(arguments: Kind.allCases)
    func aNewVersionMidWayRestartsAndArrivesWhole(_ kind: Kind) async throws {
        // The resource changes after the first request: If-Range no longer matches, the server sends the new
        // version whole (200), and the file is that version alone.
        let size = 2 << 20
        let id = UUID().uuidString
        let destination = try destination()
        let endpoint = try await download(
            try realm(kind, retries: 2), id, size: size, to: destination,
            ["cuts": 700_000, "change_after": 1])
        let response = try await endpoint.request()
        let stats = try await stats(id)
        #expect(response.statusCode == 200)
        #expect(stats.ranges == [nil, "bytes=700000-"])
        #expect(stats.statuses == [200, 200])
        #expect(sha256Hex(file: destination.url) == stats.sha256["2"])
        #expect(try filesBeside(destination) == ["archive.bin"])
    }

    @Test(arguments: Kind.allCases)
    func lastModifiedServesAsTheValidatorWithoutAStrongETag(_ kind: Kind) async throws {
        let size = 1 << 20
        let id = UUID().uuidString
        let destination = try destination()
        _ = try await download(
            try realm(kind, retries: 1), id, size: size, to: destination,
            ["cuts": 300_000, "validator": "lastmod"]
        ).request()
        let stats = try await stats(id)
        #expect(stats.ranges == [nil, "bytes=300000-"])
        #expect(stats.if_ranges.last == "Mon, 01 Nov 2026 10:00:00 GMT")
        #expect(sha256Hex(file: destination.url) == stats.sha256["1"])
    }

    /// Servers a download cannot be resumed from: no ranges advertised, no validator `If-Range` may carry,
    /// a body in a content coding (its ranges are not the bytes on disk).
    @Test(
        arguments: Kind.allCases,
        [["ranges": "0"], ["validator": "weak"], ["validator": "none"], ["gzip": "1"]])
    func aServerThatCannotResumeGetsAskedForTheWholeBodyAgain(_ kind: Kind, _ options: [String: String])
        async throws
    {
        let size = 1 << 20
        let id = UUID().uuidString
        let destination = try destination()
        var query: [String: any Sendable] = ["cuts": options["gzip"] == nil ? 400_000 : 200]
        for (name, value) in options { query[name] = value }
        let endpoint = try await download(try realm(kind), id, size: size, to: destination, query)
        await #expect(throws: ServiceError.self) { try await endpoint.request() }
        #expect(destination.partialLength == nil, "\(options)")
        _ = try await endpoint.request()
        let stats = try await stats(id)
        #expect(stats.ranges == [nil, nil], "\(options)")
        #expect(sha256Hex(file: destination.url) == stats.sha256["1"], "\(options)")
        #expect(try filesBeside(destination) == ["archive.bin"])
    }

    @Test(arguments: Kind.allCases)
    func aContentRangeThatDoesNotContinueTheFileFailsAndDropsThePart(_ kind: Kind) async throws {
        let size = 1 << 20
        let id = UUID().uuidString
        let destination = try destination()
        let realm = try realm(kind)
        let cut = try await download(realm, id, size: size, to: destination, ["cuts": 500_000])
        await #expect(throws: ServiceError.self) { try await cut.request() }
        #expect(destination.partialLength == 500_000)

        let lying = try await download(realm, id, size: size, to: destination, ["bad_range": 1])
        let failure = await #expect(throws: ServiceError.self) { try await lying.request() }
        guard case let .transport(_, underlying, _)? = failure,
            let mismatch = underlying as? DownloadResumeError
        else {
            Issue.record("expected a DownloadResumeError, got \(String(describing: failure))")
            return
        }
        #expect(mismatch.offset == 500_000)
        #expect(mismatch.contentRange == "bytes 500007-1048575/1048576")
        #expect(
            failure?.description.contains("/file?") == true, "names the URL: \(String(describing: failure))")
        #expect(destination.partialLength == nil)
        #expect(try filesBeside(destination).isEmpty, "nothing spliced, nothing kept")

        _ = try await download(realm, id, size: size, to: destination).request()
        #expect(sha256Hex(file: destination.url) == (try await stats(id)).sha256["1"])
    }

    @Test(arguments: Kind.allCases)
    func aDownloadCancelledOrTimedOutKeepsItsPartForTheNextCall(_ kind: Kind) async throws {
        // The server sends 600,000 bytes, then says nothing for 20 s.
        let size = 1 << 20
        let destination = try destination()
        let cancelledID = UUID().uuidString
        let realm = try realm(kind)
        let stalled = try await download(
            realm, cancelledID, size: size, to: destination, ["cuts": 600_000, "stall": 20])
        let progress = ProgressLog()
        let task = Task { try await stalled.transfer(progress: { progress.add($0) }) }
        // Progress reports are throttled: the first says the body is coming; cancelled a moment later, the
        // download has some of it, all of it (600,000 bytes) unless the machine is slow.
        try await waitUntil(every: 10_000_000, for: 10) { !progress.all.isEmpty }
        try await Task.sleep(for: .milliseconds(500))
        task.cancel()
        let cancelled = await #expect(throws: ServiceError.self) { try await task.value }
        #expect(cancelled?.kind == .cancelled)
        // The backend hands over what it wrote once its transfer has stopped, which may follow the call's end.
        let kept = try await poll(every: 10_000_000, for: 10) { destination.partialLength }
        #expect(kept.map { $0 > 0 && $0 <= 600_000 } == true, "\(String(describing: kept))")
        _ = try await download(realm, cancelledID, size: size, to: destination).request()
        #expect((try await stats(cancelledID)).ranges == [nil, "bytes=\(kept ?? 0)-"])
        #expect(sha256Hex(file: destination.url) == (try await stats(cancelledID)).sha256["1"])

        let timedOutID = UUID().uuidString
        let again = try self.destination()
        let silent = try await download(
            realm.setTimeout(1), timedOutID, size: size, to: again, ["cuts": 600_000, "stall": 20])
        let timedOut = await #expect(throws: ServiceError.self) { try await silent.request() }
        #expect(timedOut?.kind == .timedOut)
        try await waitUntil(every: 10_000_000, for: 10) { again.partialLength == 600_000 }
        _ = try await download(realm, timedOutID, size: size, to: again).request()
        #expect((try await stats(timedOutID)).ranges == [nil, "bytes=600000-"])
        #expect(sha256Hex(file: again.url) == (try await stats(timedOutID)).sha256["1"])
    }

    @Test(arguments: Kind.allCases)
    func aDestinationThatDoesNotResumeLeavesNothingBehind(_ kind: Kind) async throws {
        let size = 1 << 20
        let id = UUID().uuidString
        let resumable = try destination()
        let plain = DownloadDestination.file(resumable.url)
        let endpoint = try await download(try realm(kind), id, size: size, to: plain, ["cuts": 500_000])
        await #expect(throws: ServiceError.self) { try await endpoint.request() }
        #expect(try filesBeside(plain).isEmpty)
        _ = try await endpoint.request()
        #expect((try await stats(id)).ranges == [nil, nil])
    }
}

extension ResumableDownloadTests {
    @Test(arguments: Kind.allCases)
    func a416ForTheEndOfTheFileCompletesItAndOneForLessFailsAndDropsIt(_ kind: Kind) async throws {
        let realm = try realm(kind)
        // The first answer says one byte more than it sends: the client has the whole body and fails. Asked
        // for the rest, the server answers 416 `bytes */N`: the partial file is the body.
        let size = 1 << 20
        let whole = UUID().uuidString
        let destination = try destination()
        let overstated = try await download(realm, whole, size: size, to: destination, ["overstate": 1])
        await #expect(throws: ServiceError.self) { try await overstated.request() }
        #expect(destination.partialLength == Int64(size))
        let completed = try await download(realm, whole, size: size, to: destination).request()
        #expect(completed.statusCode == 200)
        #expect(completed.header("Content-Length") == String(size))
        #expect((try await stats(whole)).statuses == [200, 416])
        #expect(sha256Hex(file: destination.url) == (try await stats(whole)).sha256["1"])
        #expect(try filesBeside(destination) == ["archive.bin"])

        // The same Last-Modified, a shorter body: 416 `bytes */500000` for a file of 600,000 bytes.
        let shrunk = UUID().uuidString
        let other = try self.destination()
        let cut = try await download(
            realm, shrunk, size: size, to: other, ["cuts": 600_000, "validator": "lastmod"])
        await #expect(throws: ServiceError.self) { try await cut.request() }
        #expect(other.partialLength == 600_000)
        let shorter = try await download(realm, shrunk, size: 500_000, to: other, ["validator": "lastmod"])
        let failure = await #expect(throws: ServiceError.self) { try await shorter.request() }
        guard case let .transport(_, underlying, _)? = failure, underlying is DownloadResumeError else {
            Issue.record("expected a DownloadResumeError, got \(String(describing: failure))")
            return
        }
        #expect(other.partialLength == nil)
        #expect(try filesBeside(other).isEmpty)
    }
}
