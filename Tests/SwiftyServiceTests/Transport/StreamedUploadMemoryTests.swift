import Foundation
import ProcessProbes
import SwiftyService
import Testing

/// A streamed upload of 128 MiB from a sequence that makes each chunk as it is asked for, to a server that
/// reads 64 KiB per millisecond at most: the client's memory grows by the bounded buffer, not by the body.
///
/// Alone in its own process (scripts/test runs it by itself), so that the peak it measures is its upload's.
@Suite("A streamed upload's memory", .serialized, .timeLimit(.minutes(5)), .tags(.realServer))
struct StreamedUploadMemoryTests {
    @Test func aSlowlyReadStreamedUploadKeepsMemoryBounded() async throws {
        let size = 128 << 20
        let realm = uniqueRealm("upload-memory").setBaseURL(try MisbehavingServer.url())
            .use(try ConformingBackend.curl.make())
        let id = UUID().uuidString
        resetPeakResident()
        let before = residentKilobytes()
        let start = Date()
        let record = try await TestEndpoint(
            realm, "upload", method: .put, parameters: ["id": id, "pause": 0.001],
            body: .stream(GeneratedChunks(count: size), length: Int64(size))
        ).request().decode(UploadRecord.self)
        let peak = peakResidentKilobytes()
        let grewBy = (peak - before) / 1024
        print(
            "streamed upload: \(size >> 20) MiB in \(Date().timeIntervalSince(start)) s; resident \(before / 1024) MB "
                + "before, peak \(peak / 1024) MB (+\(grewBy) MB)")
        #expect(record.length == size && record.complete == true)
        // The buffer holds about 1 MiB; unbounded, the body is 128 MiB.
        #expect(grewBy < 24, "the peak grew by \(grewBy) MB")
    }
}
