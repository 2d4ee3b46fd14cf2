import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Uploads from an `AsyncSequence` (`RequestBody.stream`), and `Expect: 100-continue` for large bodies, against
/// misbehaving_server.py: `/upload` reads a body (sized or chunked) and answers its length and SHA-256,
/// `/refuse-upload` answers 413 without reading and counts what comes anyway, `/uploads` tells what each id's
/// requests delivered.
@Suite("Uploads from a stream", .timeLimit(.minutes(5)), .tags(.realServer))
struct StreamedUploadTests {
    func realm(_ kind: ConformingBackend) throws -> ServiceRealm {
        uniqueRealm("upload").setBaseURL(try MisbehavingServer.url()).use(try kind.make())
    }

    @Test(arguments: ConformingBackend.allCases, [true, false])
    func aStreamArrivesByteForByteWithItsLengthOrChunked(_ kind: ConformingBackend, lengthKnown: Bool)
        async throws
    {
        let body = patternData(count: 3_000_001, step: 13)
        let chunks = SlicedChunks(data: body, sizes: [1, 65_536, 7, 300_000, 1_000, 0])
        let id = UUID().uuidString
        let endpoint = TestEndpoint(
            try realm(kind), "upload", method: .put, parameters: ["id": id],
            body: .stream(chunks, length: lengthKnown ? Int64(body.count) : nil))
        guard kind != .urlSession else {
            // URLSessionBackend cannot stream it on Linux and refuses it before sending (fails closed).
            let error = await #expect(throws: ServiceError.self) { try await endpoint.request() }
            guard case let .invalidRequest(reason, _, url)? = error else {
                Issue.record("expected invalidRequest, got \(String(describing: error))")
                return
            }
            #expect(reason == .unsupportedBodyStream(backend: "URLSessionBackend"))
            #expect(url.contains("/upload"))
            #expect(try await uploads(id, kind).isEmpty)
            return
        }
        let record = try await endpoint.request().decode(UploadRecord.self)
        #expect(record.length == body.count && record.sha256 == sha256Hex(body), "\(kind)")
        #expect(record.complete == true)
        if kind == .curl {
            // CurlBackend streams it: sized when the length is known, chunked when not; over 1 MiB, it waits
            // for the server's 100 Continue.
            #expect(record.chunked == !lengthKnown)
            #expect(record.expect == "100-continue")
        }
    }

    @Test func aSmallStreamOfUnknownLengthIsSentChunked() async throws {
        let body = Data("hello, stream".utf8)
        let id = UUID().uuidString
        let record = try await TestEndpoint(
            try realm(.curl), "upload", method: .post, parameters: ["id": id],
            body: .stream(SlicedChunks(data: body, sizes: [5, 3])), headers: ["Expect": ""]
        ).request().decode(UploadRecord.self)
        #expect(record.length == body.count && record.sha256 == sha256Hex(body) && record.chunked == true)
    }

    @Test(arguments: [ConformingBackend.curl, .legacy])
    func aRetryOfAStreamIsRefusedAndTheServerGetsNoSecondBody(_ kind: ConformingBackend) async throws {
        // `/upload?status=503` reads the whole body, then answers 503, which the retry middleware retries (PUT).
        let body = patternData(count: 200_000)
        let id = UUID().uuidString
        let waits = CallbackRecorder<TimeInterval>()
        let realm = try realm(kind).addMiddleware(.retry(.instant(recordingWaitsIn: waits)))
        let endpoint = TestEndpoint(
            realm, "upload", method: .put, parameters: ["id": id, "status": 503],
            body: .stream(SlicedChunks(data: body, sizes: [65_536]), length: Int64(body.count)))
        let error = await #expect(throws: ServiceError.self) { try await endpoint.request() }
        #expect(error?.kind == .transport, "\(kind): \(String(describing: error))")
        #expect(error?.underlyingError as? BodyStreamError == .cannotResendForRetry(attempt: 2))
        #expect(error?.attempts == 2)
        let description = error?.description ?? ""
        #expect(description.contains("PUT ") && description.contains("/upload?id=\(id)"), "\(description)")
        #expect(description.contains("cannot be sent again"))
        // One body, whole; no second request, partial or empty.
        let seen = try await uploads(id, kind)
        #expect(
            seen.count == 1 && seen.first?.length == body.count && seen.first?.complete == true, "\(seen)")
    }

    @Test func theSameStreamBodySentTwiceIsRefusedTheSecondTime() async throws {
        let id = UUID().uuidString
        let endpoint = TestEndpoint(
            try realm(.curl), "upload", method: .post, parameters: ["id": id],
            body: .stream(SlicedChunks(data: Data("once".utf8), sizes: [4]), length: 4))
        _ = try await endpoint.request()
        let error = await #expect(throws: ServiceError.self) { try await endpoint.request() }
        #expect(error?.underlyingError as? BodyStreamError == .cannotResendForRetry(attempt: 1))
        #expect(try await uploads(id, .curl).count == 1)
    }

    @Test(arguments: [307, 308])
    func aRedirectThatWouldResendAStreamIsNotFollowed(_ status: Int) async throws {
        let id = UUID().uuidString
        let error = await #expect(throws: ServiceError.self) {
            try await TestEndpoint(
                try realm(.curl), "redirect", method: .post,
                parameters: ["to": "/upload?id=\(id)", "status": status],
                body: .stream(SlicedChunks(data: patternData(count: 5_000), sizes: [1_000]), length: 5_000)
            ).request()
        }
        #expect(
            error?.underlyingError as? BodyStreamError
                == .cannotResendForRedirect(
                    status: status,
                    location: try MisbehavingServer.url().absoluteString
                        + "/upload?id=\(id)"),
            "\(String(describing: error))")
        #expect(error?.description.contains("/redirect?") == true)
        #expect(try await uploads(id, .curl).isEmpty)
    }

    @Test func aRedirectToAGETIsFollowedAndTheStreamLetGo() async throws {
        // `/upload` answers a 303 once 1 MB of the body is in (and drops the rest): a 303 turns the POST into a
        // GET without a body, which is followed; the rest of the stream is not read, and nothing holds it.
        let pulled = PulledBytes()
        let response = try await TestEndpoint(
            try realm(.curl), "upload", method: .post,
            parameters: ["status": 303, "after": 1_000_000, "location": "/uploads?id=none"],
            body: .stream(CountingChunks(count: 50_000_000, pulled: pulled), length: 50_000_000)
        ).request()
        #expect(response.statusCode == 200)
        #expect(try response.mapString() == "[]")
        #expect(pulled.iteratorsMade == 1)
        #expect(try await waitUntil(every: 20_000_000, for: 10) { pulled.noIteratorAlive })
        #expect(pulled.count < 16_000_000, "\(pulled.count) bytes pulled")
    }

    @Test func aStreamIsNotSentAgainOnANewConnection() async throws {
        // `/echo-then-reset` echoes a first request, keeps the connection, and resets it once the next request
        // has arrived whole: libcurl would send that one again on a new connection, from its body's start.
        let realm = try realm(.curl)
        let first = try await TestEndpoint(
            realm, "echo-then-reset", method: .post, body: .data(Data("1".utf8))
        )
        .request()
        #expect(first.data == Data("1".utf8))
        let error = await #expect(throws: ServiceError.self) {
            try await TestEndpoint(
                realm, "echo-then-reset", method: .post,
                body: .stream(SlicedChunks(data: Data("second".utf8), sizes: [3]), length: 6)
            ).request()
        }
        #expect(
            error?.underlyingError as? BodyStreamError == .cannotResendOnNewConnection,
            "\(String(describing: error))")
    }

    @Test func aSequenceThatThrowsFailsTheRequestWithItsError() async throws {
        let error = await #expect(throws: ServiceError.self) {
            try await TestEndpoint(
                try realm(.curl), "upload", method: .post,
                body: .stream(ThrowingChunks(before: 3), length: 1_000_000)
            ).request()
        }
        #expect(error?.underlyingError is ChunkFailure, "\(String(describing: error))")
    }

    @Test(arguments: [Int64(10), 1_000_000])
    func aStreamOfAnotherLengthThanDeclaredFails(_ declared: Int64) async throws {
        let error = await #expect(throws: ServiceError.self) {
            try await TestEndpoint(
                try realm(.curl), "upload", method: .post,
                body: .stream(SlicedChunks(data: patternData(count: 1_000), sizes: [100]), length: declared)
            ).request()
        }
        guard case let .lengthMismatch(declaredInError, _)? = error?.underlyingError as? BodyStreamError
        else {
            Issue.record("expected a length mismatch, got \(String(describing: error))")
            return
        }
        #expect(declaredInError == declared)
    }

    @Test(arguments: [413, 401])
    func aLargeBodyRefusedBeforeItIsReadCostsNoUpload(_ status: Int) async throws {
        // 50 MB each way, from a file, a stream of known length and one of unknown length: the server answers
        // `status` to the head (no 100 Continue) and counts the body bytes that come anyway.
        let size = 50_000_000
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(
            "refused-\(UUID().uuidString)")
        _ = FileManager.default.createFile(atPath: file.path, contents: nil)
        try FileHandle(forWritingTo: file).truncate(atOffset: UInt64(size))
        defer { try? FileManager.default.removeItem(at: file) }
        let bodies: [(String, RequestBody)] = [
            ("file", .file(file)),
            ("sized stream", .stream(GeneratedChunks(count: size), length: Int64(size))),
            ("chunked stream", .stream(GeneratedChunks(count: size))),
        ]
        for (name, body) in bodies {
            let id = UUID().uuidString
            let error = await #expect(throws: ServiceError.self) {
                try await TestEndpoint(
                    try realm(.curl), "refuse-upload", method: .post,
                    parameters: ["id": id, "status": status],
                    body: body
                ).request()
            }
            #expect(error?.kind == .unacceptableStatusCode, "\(name): \(String(describing: error))")
            #expect(error?.response?.statusCode == status, "\(name)")
            let received = try await uploads(id, .curl).first?.length
            #expect(
                received == 0, "\(name): the server received \(String(describing: received)) bytes of body")
        }
    }

    @Test(arguments: [true, false])
    func overHTTP2AStreamArrivesWhole(lengthKnown: Bool) async throws {
        // http2_server.py's /echo answers the body's length and SHA-256, and X-HTTP-Version the version it heard.
        let realm = uniqueRealm("upload-h2").setBaseURL(try HTTP2Server.url()).use(try CurlBackend())
            .setTLSPolicy(TLSPolicy(trustedRoots: try TLSFixtures.caRoots()))
        let body = patternData(count: 2_500_000, step: 5)
        let response = try await TestEndpoint(
            realm, "echo", method: .post,
            body: .stream(
                SlicedChunks(data: body, sizes: [70_000, 3]), length: lengthKnown ? Int64(body.count) : nil)
        ).request()
        #expect(response.header("X-HTTP-Version") == "2")
        let echo = try response.decode(UploadRecord.self)
        #expect(echo.length == body.count && echo.sha256 == sha256Hex(body))
    }

    @Test(arguments: ConformingBackend.allCases)
    func aFileIsSentAgainAfterA307(_ kind: ConformingBackend) async throws {
        let body = patternData(count: 100_000, step: 3)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(
            "resent-\(UUID().uuidString)")
        try body.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let id = UUID().uuidString
        let record = try await TestEndpoint(
            try realm(kind), "redirect", method: .post,
            parameters: ["to": "/upload?id=\(id)", "status": 307],
            body: .file(file)
        ).request().decode(UploadRecord.self)
        #expect(record.length == body.count && record.sha256 == sha256Hex(body), "\(kind)")
    }

    @Test func cancellingAStreamedUploadStopsReadingTheSequenceAndLetsItGo() async throws {
        // `/upload?pause=0.05` reads at most 64 KiB per 50 ms: the 100 MB body is far from sent when cancelled.
        let pulled = PulledBytes()
        let endpoint = TestEndpoint(
            try realm(.curl), "upload", method: .put, parameters: ["pause": 0.05],
            body: .stream(CountingChunks(count: 100_000_000, pulled: pulled), length: 100_000_000))
        let task = Task { try await endpoint.request() }
        try await Task.sleep(for: .milliseconds(500))
        task.cancel()
        let error = await #expect(throws: ServiceError.self) { try await task.value }
        #expect(error?.kind == .cancelled, "\(String(describing: error))")
        let atCancel = pulled.count
        try await Task.sleep(for: .milliseconds(300))
        #expect(pulled.count == atCancel, "the sequence was read on after the cancel")
        // The task that read it ends: nothing holds the sequence. (On a loaded machine the cancel can come
        // before the transfer asked for a byte of the body: then no iterator was ever made, which is as good.)
        #expect(try await waitUntil(every: 20_000_000, for: 10) { pulled.noIteratorAlive })
        // What the socket took, plus the bounded buffer: a few MB, not the 100 MB.
        #expect(atCancel < 16_000_000, "\(atCancel) bytes pulled")
    }

    @Test func anUploadCancelledAtAnyMomentLetsItsSequenceGo() async throws {
        // Cancelled 0–4 ms after it starts: before its body was asked for (no iterator is ever made), while the
        // first bytes go out, or later. Whichever, no iterator of the sequence is left alive.
        let realm = try realm(.curl)
        var stillHeld: [Int] = []
        for round in 0..<40 {
            let pulled = PulledBytes()
            let endpoint = TestEndpoint(
                realm, "upload", method: .put, parameters: ["pause": 0.05],
                body: .stream(CountingChunks(count: 100_000_000, pulled: pulled), length: 100_000_000))
            let task = Task { try await endpoint.request() }
            try await Task.sleep(for: .microseconds(round * 100))
            task.cancel()
            _ = try? await task.value
            if !(try await waitUntil(every: 20_000_000, for: 10) { pulled.noIteratorAlive }) {
                stillHeld.append(round)
            }
        }
        #expect(stillHeld.isEmpty, "still held after the cancels of rounds \(stillHeld)")
    }

    @Test(arguments: [ConformingBackend.curl, .legacy], [true, false])
    func progressEndsAtTheStreamsWholeLength(_ kind: ConformingBackend, lengthKnown: Bool) async throws {
        let body = patternData(count: 2_000_000)
        let steps = ProgressLog()
        _ = try await TestEndpoint(
            try realm(kind), "upload", method: .post,
            body: .stream(
                SlicedChunks(data: body, sizes: [65_536]), length: lengthKnown ? Int64(body.count) : nil)
        ).transfer(progress: { steps.add($0) })
        let uploads = steps.all.filter { $0.direction == .upload }
        #expect(
            uploads.last == TransferProgress(direction: .upload, completed: 2_000_000, expected: 2_000_000))
        #expect(zip(uploads, uploads.dropFirst()).allSatisfy { $0.completed <= $1.completed })
    }

    @Test func aStubReceivesTheStreamCollectedAndItsSecondTripIsRefused() async throws {
        // StubBackend does not stream: the body reaches it whole, in the request; a retry finds it read.
        let stub = StubBackend().on(.path("/v1/items"), answer: .status(503), .status(503))
        let realm = uniqueRealm("upload-stub").setBaseURL(URL(string: "https://stub.example/v1")!).use(stub)
        let body = patternData(count: 300_000)
        let endpoint = TestEndpoint(
            realm, "items", method: .put, body: .stream(SlicedChunks(data: body, sizes: [4_096]), length: nil)
        )
        let error = await #expect(throws: ServiceError.self) {
            try await endpoint.request()
        }
        #expect(error?.kind == .unacceptableStatusCode)
        #expect(stub.received.first?.urlRequest.httpBody == body)
        #expect(stub.received.count == 1)
        let retried = await #expect(throws: ServiceError.self) {
            try await TestEndpoint(
                realm.addMiddleware(.retry(.instant(recordingWaitsIn: CallbackRecorder()))), "items",
                method: .put,
                body: .stream(SlicedChunks(data: body, sizes: [4_096]))
            ).request()
        }
        #expect(retried?.underlyingError as? BodyStreamError == .cannotResendForRetry(attempt: 2))
        #expect(stub.received.count == 2)
    }

    /// What the requests sent under `id` delivered, as the server counted.
    private func uploads(_ id: String, _ kind: ConformingBackend) async throws -> [UploadRecord] {
        try await TestEndpoint(try realm(.curl), "uploads", parameters: ["id": id]).request()
            .decode([UploadRecord].self)
    }
}

/// What misbehaving_server.py's `/upload` and `/refuse-upload` saw of a body.
struct UploadRecord: Decodable, Sendable {
    let length: Int
    var sha256: String?
    var chunked: Bool?
    var expect: String?
    var complete: Bool?
}

/// `data` cut into chunks of `sizes` bytes in turn (a size of 0 makes an empty chunk), each chunk a copy.
struct SlicedChunks: AsyncSequence, Sendable {
    typealias Element = Data
    let data: Data
    let sizes: [Int]

    struct AsyncIterator: AsyncIteratorProtocol {
        let data: Data
        let sizes: [Int]
        var offset = 0
        var turn = 0

        mutating func next() async -> Data? {
            guard offset < data.count else { return nil }
            let size = sizes[turn % sizes.count]
            turn += 1
            let end = Swift.min(data.count, offset + size)
            defer { offset = end }
            return Data(data[data.startIndex + offset..<data.startIndex + end])
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(data: data, sizes: sizes) }
}

/// `count` bytes in chunks of 64 KiB, each one made (and allocated) as it is asked for.
struct GeneratedChunks: AsyncSequence, Sendable {
    typealias Element = Data
    let count: Int

    struct AsyncIterator: AsyncIteratorProtocol {
        let count: Int
        var made = 0

        mutating func next() async -> Data? {
            guard made < count else { return nil }
            let size = Swift.min(65_536, count - made)
            made += size
            return Data(repeating: UInt8(truncatingIfNeeded: made >> 16), count: size)
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(count: count) }
}

/// How many bytes a ``CountingChunks`` gave, and how many of its iterators are alive.
final class PulledBytes: Sendable {
    private let lock = NSLock()
    nonisolated(unsafe) private var total = 0
    nonisolated(unsafe) private var made = 0
    nonisolated(unsafe) private var dropped = 0

    var count: Int { lock.withLock { total } }
    /// How many iterators of the sequence were made: 0 when nothing ever read it.
    var iteratorsMade: Int { lock.withLock { made } }
    /// Whether no iterator of the sequence is alive: nothing is reading it, or can. True as well when none
    /// was ever made (a request cancelled before its body was asked for).
    var noIteratorAlive: Bool { lock.withLock { made == dropped } }
    func add(_ bytes: Int) { lock.withLock { total += bytes } }
    func makeIterator() { lock.withLock { made += 1 } }
    func dropIterator() { lock.withLock { dropped += 1 } }
}

/// Tells ``PulledBytes`` when the iterator holding it is made and when it goes.
final class IteratorLifetime: Sendable {
    let pulled: PulledBytes
    init(_ pulled: PulledBytes) {
        self.pulled = pulled
        pulled.makeIterator()
    }
    deinit { pulled.dropIterator() }
}

/// `count` bytes in chunks of 64 KiB, counting what was asked for.
struct CountingChunks: AsyncSequence, Sendable {
    typealias Element = Data
    let count: Int
    let pulled: PulledBytes

    struct AsyncIterator: AsyncIteratorProtocol {
        var generated: GeneratedChunks.AsyncIterator
        let lifetime: IteratorLifetime

        mutating func next() async -> Data? {
            let chunk = await generated.next()
            lifetime.pulled.add(chunk?.count ?? 0)
            return chunk
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(
            generated: GeneratedChunks(count: count).makeAsyncIterator(), lifetime: IteratorLifetime(pulled))
    }
}

/// What ``ThrowingChunks`` throws.
struct ChunkFailure: Error {}

/// A few chunks, then a failure.
struct ThrowingChunks: AsyncSequence, Sendable {
    typealias Element = Data
    let before: Int

    struct AsyncIterator: AsyncIteratorProtocol {
        var left: Int

        mutating func next() async throws -> Data? {
            guard left > 0 else { throw ChunkFailure() }
            left -= 1
            return Data(repeating: 1, count: 1_000)
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(left: before) }
}
