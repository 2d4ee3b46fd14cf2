import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Wraps a real backend and holds its answer back until the request is cancelled, then gives it from inside
/// `cancel()`: the success arrives exactly as the cancellation does, every time.
final class AnswerOnCancelBackend: NetworkBackend, @unchecked Sendable {
    private let inner: any NetworkBackend
    private let lock = NSLock()
    private var held: [(Result<Response, any Error>, @Sendable (Result<Response, any Error>) -> Void)] = []

    init(_ inner: any NetworkBackend) { self.inner = inner }

    var supportsStreaming: Bool { inner.supportsStreaming }

    /// Waits until the wrapped backend has answered (and, streaming, written its file).
    func waitForAnswer(within seconds: TimeInterval = 30) async throws {
        if try await waitUntil(every: 5_000_000, for: seconds, { !lock.withLock { held.isEmpty } }) { return }
        throw SetupError(description: "no answer within \(seconds) s")
    }

    func send(
        _ request: BackendRequest, completion: @escaping @Sendable (Result<Response, any Error>) -> Void
    ) -> BackendTask {
        _ = inner.send(request) { [self] result in lock.withLock { held.append((result, completion)) } }
        return BackendTask { [self] in
            let answers = lock.withLock {
                () -> [(Result<Response, any Error>, @Sendable (Result<Response, any Error>) -> Void)] in
                defer { held = [] }
                return held
            }
            for (result, completion) in answers { completion(result) }
        }
    }
}

/// The effects of an outcome — a download moved into place, the final progress report — happen only for the
/// outcome the caller is told, and never after it was told the request was cancelled.
@Suite("Settlement races", .timeLimit(.minutes(5)), .tags(.realServer))
struct SettlementRaceTests {
    let temporaryFiles = TemporaryFiles()

    struct Setup {
        let realm: ServiceRealm
        let backend: AnswerOnCancelBackend
        let directory: URL
        let destination: URL

        /// What is in the download's directory: nothing, when the request was cancelled.
        var leftovers: [String] {
            (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        }
    }

    func setup(_ kind: ConformingBackend) throws -> Setup {
        let backend = AnswerOnCancelBackend(try kind.make())
        let directory = temporaryFiles.uniquePath("race")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return Setup(
            realm: try HTTPBin.realm(backend: backend), backend: backend, directory: directory,
            destination: directory.appendingPathComponent("file.bin"))
    }

    @Test(arguments: ConformingBackend.allCases)
    func aCancelledCallbackRequestLeavesNoFile(_ kind: ConformingBackend) async throws {
        // httpbin /bytes/65536: the body the held success would move into place.
        let setup = try setup(kind)
        let outcome = CallbackRecorder<Result<Response, ServiceError>>()
        let handle = DownloadEndpoint(
            realm: setup.realm, path: "bytes/65536", destination: .file(setup.destination)
        )
        .request { outcome.record($0) }
        try await setup.backend.waitForAnswer()
        handle.cancel()
        let result = try await outcome.first(within: 30)
        #expect(result.serviceError?.kind == .cancelled, "\(kind)")
        try await Task.sleep(nanoseconds: 200_000_000)
        #expect(setup.leftovers.isEmpty, "\(kind): \(setup.leftovers)")
        #expect(try await outcome.count() == 1)
    }

    @Test(arguments: ConformingBackend.allCases)
    func aCancelledTaskLeavesNoFile(_ kind: ConformingBackend) async throws {
        // httpbin /bytes/65536.
        let setup = try setup(kind)
        let endpoint = DownloadEndpoint(
            realm: setup.realm, path: "bytes/65536", destination: .file(setup.destination))
        let task = Task { try await endpoint.request() }
        try await setup.backend.waitForAnswer()
        task.cancel()
        await #expect { try await task.value } throws: { ($0 as? ServiceError)?.kind == .cancelled }
        try await Task.sleep(nanoseconds: 200_000_000)
        #expect(setup.leftovers.isEmpty, "\(kind): \(setup.leftovers)")
    }

    @Test(arguments: ConformingBackend.allCases)
    func aCancelledTransferReportsNoProgressAfterItsCancellation(_ kind: ConformingBackend) async throws {
        // httpbin /bytes/65536, with progress: the final 100% report belongs to the success only.
        let setup = try setup(kind)
        let events = Collected<String>()
        let transfer = DownloadEndpoint(
            realm: setup.realm, path: "bytes/65536", destination: .file(setup.destination)
        )
        .transfer(progress: { events.add("progress \($0.completed)") }) { result in
            events.add(result.serviceError.map { "\($0.kind)" } ?? "success")
        }
        try await setup.backend.waitForAnswer()
        transfer.cancel()
        try await Task.sleep(nanoseconds: 300_000_000)
        let log = events.all
        #expect(log.last == "cancelled", "\(kind): \(log)")
        #expect(log.filter { !$0.hasPrefix("progress") } == ["cancelled"], "\(kind): \(log)")
        #expect(setup.leftovers.isEmpty, "\(kind): \(setup.leftovers)")
    }

    @Test(arguments: ConformingBackend.allCases)
    func aCancelledTransferTaskLeavesNoFile(_ kind: ConformingBackend) async throws {
        // httpbin /bytes/65536 through TransferTask, whose progress stream ends with the request.
        let setup = try setup(kind)
        let transfer = DownloadEndpoint(
            realm: setup.realm, path: "bytes/65536", destination: .file(setup.destination)
        )
        .transfer()
        try await setup.backend.waitForAnswer()
        transfer.cancel()
        await #expect { try await transfer.response } throws: { ($0 as? ServiceError)?.kind == .cancelled }
        try await Task.sleep(nanoseconds: 200_000_000)
        #expect(setup.leftovers.isEmpty, "\(kind): \(setup.leftovers)")
    }
}

/// The race as a user met it: a 400 MB download from a local server, cancelled at its first progress report;
/// twenty times in a row no file is left behind (it was in 2 runs of 6). On URLSession the body is 16 MB:
/// FoundationNetworking reads ahead on a thread that every session of the process shares, and 400 MB twenty
/// times kept the suite's other URLSession requests waiting past their 60 s timeout under AddressSanitizer.
@Suite("A cancelled 400 MB download", .timeLimit(.minutes(5)), .tags(.realServer))
struct CancelledLargeDownloadTests {
    let temporaryFiles = TemporaryFiles()

    @Test(arguments: [ConformingBackend.urlSession, .curl])
    func cancellingAtTheFirstProgressReportNeverLeavesAFile(_ kind: ConformingBackend) async throws {
        // The misbehaving server's /zeros?mb=N: N MB of zeros, as fast as loopback goes.
        // Heavy on loopback and disk: run alone, never beside the tests that measure promptness.
        try await underLoad { try await cancelTwentyTimes(kind) }
    }

    func cancelTwentyTimes(_ kind: ConformingBackend) async throws {
        let backend = try kind.make()
        let realm = uniqueRealm().setBaseURL(try MisbehavingServer.url()).use(backend)
        let megabytes = kind == .curl ? 400 : 16
        for run in 1...20 {
            let directory = temporaryFiles.uniquePath("large-download")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let destination = directory.appendingPathComponent("big.bin")
            let transfer = DownloadEndpoint(
                realm: realm, path: "zeros", destination: .file(destination), query: ["mb": megabytes]
            ).transfer()
            for await _ in transfer.progress {
                transfer.cancel()
                break
            }
            let outcome = await Result { try await transfer.response }
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            if case .success = outcome {
                // The answer won the race: then the file is whole, at its final name, and nothing else is there.
                #expect(leftovers == ["big.bin"], "\(kind) run \(run): \(leftovers)")
            } else {
                #expect((outcome.failure as? ServiceError)?.kind == .cancelled, "\(kind) run \(run)")
                try await Task.sleep(nanoseconds: 100_000_000)
                let later = try FileManager.default.contentsOfDirectory(atPath: directory.path)
                #expect(
                    later.isEmpty, "\(kind) run \(run): \(later) after the caller was told it was cancelled")
            }
        }
    }
}

extension Result where Failure == any Error {
    /// The outcome of an async throwing body.
    init(catching body: () async throws -> Success) async {
        do {
            self = .success(try await body())
        } catch {
            self = .failure(error)
        }
    }
}
