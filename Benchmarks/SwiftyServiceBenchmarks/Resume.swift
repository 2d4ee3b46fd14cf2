import Foundation
import SwiftyService
import SwiftyServiceCurl

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A download to a resumable destination from Tests/Servers/range_server.py.
private struct ResumedDownload: SwiftyServiceProtocol {
    let id: String
    let file: URL
    var realm: ServiceRealm { .get("bench-resume") }
    var path: String { "file" }
    var method: HTTPMethod { .get }
    var parameters: [String: Any]? { ["id": id] }
    var download: DownloadDestination? { .file(file, replacing: true, resumable: true) }
}

/// What range_server.py's `/stats` says of a resource.
private struct RangeStats: Decodable {
    let requests: Int
    let body_bytes: Int
    let statuses: [Int]
}

/// `download.resume.overhead`: the bytes of body the server sent for a download that it cut 10 times (each
/// attempt retried and resumed with `Range`), ÷ the file's size. 1.0: not a byte sent twice.
func downloadResumeOverhead(_ settings: Settings, rangeURL: URL) async throws -> Outcome {
    let size = settings.quick ? 8 << 20 : 256 << 20
    let id = UUID().uuidString
    // Ten cuts, one in each tenth of the body, somewhere in it.
    let cuts = (0..<10).map { tenth in size / 10 * tenth + Int.random(in: 1..<(size / 10)) }
    let setup = URL(
        string:
            "\(rangeURL.absoluteString)/setup?id=\(id)&size=\(size)&cuts=\(cuts.map(String.init).joined(separator: ","))"
    )!
    _ = try await URLSession.shared.data(from: setup)
    var policy = RetryPolicy.maxRetries(10)
    policy.baseDelay = 0.001
    policy.maxDelay = 0.01
    ServiceRealm.get("bench-resume").setBaseURL(rangeURL).use(try CurlBackend()).setTimeout(60)
        .addMiddleware(.retry(policy))
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
        "bench-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let file = directory.appendingPathComponent("download.bin")
    // The same download uncut first, for the time the cuts and resumes cost (appending each resumed part
    // included); it also has the server make the body, which the cut one then does not wait for.
    let whole = UUID().uuidString
    _ = try await URLSession.shared.data(
        from: URL(string: "\(rangeURL.absoluteString)/setup?id=\(whole)&size=\(size)")!)
    let uncutStart = now()
    _ = try await ResumedDownload(id: whole, file: file).request()
    let uncut = Double(now() - uncutStart) / 1e9
    try FileManager.default.removeItem(at: file)
    let start = now()
    let response = try await ResumedDownload(id: id, file: file).request()
    let seconds = Double(now() - start) / 1e9
    let (data, _) = try await URLSession.shared.data(
        from: URL(string: "\(rangeURL.absoluteString)/stats?id=\(id)")!)
    let stats = try JSONDecoder().decode(RangeStats.self, from: data)
    let written = (try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int) ?? 0
    guard written == size else {
        throw ResumeBenchError(description: "\(written) bytes on disk, not \(size)")
    }
    return Outcome(
        scenario: "download.resume.overhead", ours: Double(stats.body_bytes) / Double(size), baseline: nil,
        unit: .ratio, goal: 1.05, higherIsBetter: false,
        note: String(
            format:
                "%d MB cut 10 times: %d requests (%d attempts), %d bytes of body sent, %.1f s (uncut: %.1f s)",
            size >> 20, stats.requests, response.attempts, stats.body_bytes, seconds, uncut))
}

/// The resumed download did not end whole.
struct ResumeBenchError: Error, CustomStringConvertible {
    let description: String
}
