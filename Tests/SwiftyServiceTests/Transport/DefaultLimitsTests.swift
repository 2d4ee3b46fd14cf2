import Foundation
import ProcessProbes
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A realm that sets no limits still has two: buffered bodies stop at 64 MiB, as decoded, and a buffered
/// request ends 5 timeouts after it began. Streams and downloads to a file get neither. Against
/// misbehaving_server.py's `/zeros`, `/gzip-zeros` and `/trickle`, on every backend.
@Suite("Default limits", .timeLimit(.minutes(5)), .tags(.realServer))
struct DefaultLimitsTests {
    let temporaryFiles = TemporaryFiles()

    func realm(_ kind: ConformingBackend) throws -> ServiceRealm {
        uniqueRealm("limits").setBaseURL(try MisbehavingServer.url()).use(try kind.make()).setTimeout(10)
    }

    static let cap = 64 << 20

    @Test func theDefaultsAreDocumentedValues() {
        let configuration = RealmConfiguration()
        #expect(RealmConfiguration.defaultMaxResponseSize == Self.cap)
        #expect(configuration.maxResponseSize == Self.cap)
        #expect(configuration.resourceTimeout == 300, "5 times the 60 s timeout")
        var unlimited = RealmConfiguration()
        unlimited.setMaxResponseSize(.unlimited)
        unlimited.setResourceTimeout(.unlimited)
        #expect(unlimited.maxResponseSize == nil)
        #expect(unlimited.resourceTimeout == nil)
        unlimited.setMaxResponseSize(nil)
        unlimited.setResourceTimeout(nil)
        #expect(unlimited.maxResponseSize == Self.cap, "nil is the default again")
        #expect(unlimited.resourceTimeout == 300)
    }

    @Test(arguments: ConformingBackend.allCases)
    func aBodyOverTheDefaultCapFailsNamingTheLimitAndTheSetting(_ kind: ConformingBackend) async throws {
        // /zeros?mb=65: one MiB past the cap, its length declared. No deadline: under ThreadSanitizer, on a machine
        // stalled by other builds, URLSession took more than the default 50 s to read the 64 MiB.
        let error = await #expect(throws: ServiceError.self) {
            try await TestEndpoint(
                try realm(kind).setTimeout(60).setResourceTimeout(.unlimited), "zeros", parameters: ["mb": 65]
            ).request()
        }
        let tooLarge = try #require(
            error?.underlyingError as? ResponseTooLarge, "\(kind): \(String(describing: error))")
        #expect(tooLarge.limit == Self.cap)
        let description = try #require(error?.description)
        #expect(description.contains("67108864-byte limit"), "\(description)")
        #expect(description.contains("setMaxResponseSize"), "the error names the setting that raises it")
    }

    @Test(arguments: ConformingBackend.allCases)
    func anExplicitUnlimitedTakesTheSameBody(_ kind: ConformingBackend) async throws {
        let response = try await TestEndpoint(
            try realm(kind).setMaxResponseSize(.unlimited), "zeros", parameters: ["mb": 65]
        ).request()
        #expect(response.data.count == 65 << 20)
    }

    @Test(arguments: ConformingBackend.allCases)
    func aTricklingServerIsStoppedByTheDefaultDeadline(_ kind: ConformingBackend) async throws {
        // A byte every 0.25 s for 100 s: the 8 s silence timeout never fires (URLSession on Linux, on a loaded
        // machine, let 1 s pass between two bytes, a CI run more than 2 s, a saturated machine more than 4 s);
        // 5 of it, the default deadline, does.
        let realm = try realm(kind).setTimeout(8)
        let start = Date()
        let error = await #expect(throws: ServiceError.self) {
            try await TestEndpoint(realm, "trickle", parameters: ["interval": 0.25, "count": 400]).request()
        }
        let elapsed = Date().timeIntervalSince(start)
        #expect(error?.kind == .timedOut, "\(kind): \(String(describing: error))")
        #expect(elapsed >= 39.5, "\(kind): ended after \(elapsed) s, before the deadline")
        #expect(elapsed < 90, "\(kind): ended after \(elapsed) s")
        let description = error?.description ?? ""
        #expect(description.contains("timed out after 40 s"), "the error names the limit: \(description)")
        #expect(description.contains("setResourceTimeout"), "and the setting: \(description)")
        print("\(kind): the default deadline (5 × 8 s) ended the trickle after \(elapsed) s")
    }

    @Test(arguments: ConformingBackend.allCases)
    func anExplicitUnlimitedDeadlineLetsTheTrickleFinish(_ kind: ConformingBackend) async throws {
        // 192 bytes, one every 0.25 s: 48 s, past the 40 s default (5 × the 8 s silence timeout).
        let response = try await TestEndpoint(
            try realm(kind).setTimeout(8).setResourceTimeout(.unlimited), "trickle",
            parameters: ["interval": 0.25, "count": 192]
        ).request()
        #expect(response.data.count == 192)
    }

    @Test(arguments: ConformingBackend.allCases)
    func downloadsToAFileHaveNeitherDefault(_ kind: ConformingBackend) async throws {
        let realm = try realm(kind).setTimeout(8)
        let directory = temporaryFiles.uniquePath("limits")
        // Past the cap…
        let big = directory.appendingPathComponent("big.bin")
        let saved = try await DownloadEndpoint(
            realm: realm, path: "zeros", destination: .file(big), query: ["mb": 80]
        ).request()
        #expect(saved.fileURL == big)
        let size = try FileManager.default.attributesOfItem(atPath: big.path)[.size] as? Int
        #expect(size == 80 << 20, "\(kind)")
        // …and past the default deadline (40 s).
        let slow = directory.appendingPathComponent("slow.bin")
        _ = try await DownloadEndpoint(
            realm: realm, path: "trickle", destination: .file(slow), query: ["interval": 0.25, "count": 192]
        ).request()
        #expect(try Data(contentsOf: slow).count == 192, "\(kind)")
    }

    @Test func streamsHaveNeitherDefault() async throws {
        // CurlBackend streams what it reads (URLSession on Linux cannot hold a reader's pace: see Streaming).
        let realm = try realm(.curl).setTimeout(8)
        var bytes = 0
        for try await chunk in try await TestEndpoint(realm, "zeros", parameters: ["mb": 80]).stream() {
            bytes += chunk.count
        }
        #expect(bytes == 80 << 20, "past the cap")
        var trickled = 0
        let start = Date()
        for try await chunk in try await TestEndpoint(
            realm, "trickle", parameters: ["interval": 0.25, "count": 192]
        ).stream() {
            trickled += chunk.count
        }
        #expect(trickled == 192)
        #expect(Date().timeIntervalSince(start) > 40, "past the default deadline of a buffered request")
    }
}

/// A gzip bomb (10 MB of gzip that decodes to 10 GB of zeros, misbehaving_server.py's `/gzip-zeros?mb=10240`)
/// stops at the cap on the decoded body, with memory bounded by it, on CurlBackend, the default on Linux.
/// URLSession on Linux cannot be held to it: FoundationNetworking decodes and queues the body ahead of its
/// delegate and went on after the cancel (a 2 GB bomb: 4.2 GB resident; see the Responses and errors article).
///
/// Alone in its own process (scripts/test runs it by itself), so that the peak it measures is its request's.
@Suite("A gzip bomb", .serialized, .timeLimit(.minutes(5)), .tags(.realServer))
struct GzipBombTests {
    @Test func aGzipBombStopsAtTheDefaultCapWithBoundedMemory() async throws {
        let kind = ConformingBackend.curl
        let realm = uniqueRealm("bomb").setBaseURL(try MisbehavingServer.url()).use(try kind.make())
        resetPeakResident()
        let before = residentKilobytes()
        let start = Date()
        let error = await #expect(throws: ServiceError.self) {
            try await TestEndpoint(realm, "gzip-zeros", parameters: ["mb": 10_240]).request()
        }
        let elapsed = Date().timeIntervalSince(start)
        let peak = peakResidentKilobytes()
        let tooLarge = error?.underlyingError as? ResponseTooLarge
        #expect(tooLarge?.limit == DefaultLimitsTests.cap, "\(kind): \(String(describing: error))")
        #expect(error?.description.contains("setMaxResponseSize") == true)
        let grewBy = (peak - before) / 1024
        print(
            "\(kind): gzip bomb stopped after \(elapsed) s; resident \(before / 1024) MB before, peak \(peak / 1024) MB (+\(grewBy) MB)"
        )
        // The cap is 64 MiB; a body grown by doubling may hold twice that for a moment. Unbounded, the bomb
        // is 10 GB.
        #expect(grewBy < 320, "\(kind): the peak grew by \(grewBy) MB")
    }
}
