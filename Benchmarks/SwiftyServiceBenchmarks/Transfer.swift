import Foundation
import SwiftyService

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A large upload from a file and a large download to a file, streamed by the realm's backend.
struct BigTransfer: SwiftyServiceProtocol {
    enum Kind: Sendable {
        case upload(URL)
        case download(URL)
    }

    let kind: Kind
    var realm: ServiceRealm { .get("bench-transfer") }
    var path: String {
        switch kind {
        case .upload: "upload"
        case .download: "big.bin"
        }
    }
    var method: HTTPMethod {
        switch kind {
        case .upload: .post
        case .download: .get
        }
    }
    var body: RequestBody? {
        switch kind {
        case let .upload(file): .file(file)
        case .download: nil
        }
    }
    var download: DownloadDestination? {
        switch kind {
        case .upload: nil
        case let .download(file): .file(file, replacing: true)
        }
    }
}

/// Samples resident memory every 10 ms on a thread of its own and keeps the highest reading.
final class PeakMemory: @unchecked Sendable {
    private let lock = NSLock()
    private var peak = 0
    private var running = true

    init() {
        Thread.detachNewThread { [self] in
            while lock.withLock({ running }) {
                if let now = residentBytes(trimming: false) { lock.withLock { peak = max(peak, now) } }
                Thread.sleep(forTimeInterval: 0.01)
            }
        }
    }

    var peakSoFar: Int { lock.withLock { peak } }

    func stop() -> Int {
        lock.withLock {
            running = false
            return peak
        }
    }
}

/// `transfer.memory` on URLSessionBackend; `transfer.memory.curl` on CurlBackend, the default on Linux.
func transferMemory(_ settings: Settings, base: URL, curl: Bool = false) async throws -> Outcome {
    let megabytes = settings.quick ? 20 : 200
    let realm = ServiceRealm.get("bench-transfer").setBaseURL(base).setTimeout(120)
    if curl { realm.use(try CurlBackend()) } else { realm.use(URLSessionBackend()) }
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
        "bench-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let upload = directory.appendingPathComponent("upload.bin")
    _ = FileManager.default.createFile(atPath: upload.path, contents: nil)
    let handle = try FileHandle(forWritingTo: upload)
    let chunk = Data(repeating: 0x5A, count: 1 << 20)
    for _ in 0..<megabytes { try handle.write(contentsOf: chunk) }
    try handle.close()

    let before = residentBytes() ?? 0
    let sampler = PeakMemory()
    let start = now()
    let sent = try await BigTransfer(kind: .upload(upload)).request()
    let afterUpload = sampler.peakSoFar
    let downloaded = directory.appendingPathComponent("download.bin")
    let received = try await BigTransfer(kind: .download(downloaded)).request()
    let seconds = Double(now() - start) / 1e9
    let peak = sampler.stop()
    let size = (try FileManager.default.attributesOfItem(atPath: downloaded.path)[.size] as? Int) ?? 0
    let growth = Double(max(peak - before, 0)) / 1_048_576
    return Outcome(
        scenario: curl ? "transfer.memory.curl" : "transfer.memory", ours: growth, baseline: nil,
        unit: .megabytes, goal: 32, higherIsBetter: false,
        note: String(
            format:
                "%d MB up (%d) and %d MB down (%d) in %.1f s; RSS %d → %d MB after the upload, %d MB peak",
            megabytes, sent.statusCode, size >> 20, received.statusCode, seconds, before >> 20,
            afterUpload >> 20,
            peak >> 20))
}
