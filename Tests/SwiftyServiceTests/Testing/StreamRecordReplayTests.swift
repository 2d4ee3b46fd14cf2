import Foundation
import SwiftyService
import SwiftyServiceCurl
import SwiftyServiceTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Streams recorded with their chunks and timing, redacted as other answers are, and replayed chunk by chunk.
@Suite("Recording and replaying streams", .timeLimit(.minutes(5)))
struct StreamRecordReplayTests {
    let temporaryFiles = TemporaryFiles()

    func cassette() -> URL {
        temporaryFiles.uniquePath("stream-cassette").appendingPathExtension("json")
    }

    @Test func aStreamIsRecordedWithItsChunksAndReplayedAsIt() async throws {
        let pieces = ["data: one\n\n", "data: two k3y-s3cret\n", "\ndata: three\n\n"].map { Data($0.utf8) }
        let stub = StubBackend().on(.path("/events"), answer: .streamed(pieces, every: 0.05))
        let file = cassette()
        let recorder = try RecordingBackend(recording: stub, to: file)
        let realm = uniqueRealm("record").setBaseURL(URL(string: "https://sse.test")!).use(recorder)
            .addHeader("X-Api-Key", withValue: "k3y-s3cret").declareSecrets(headers: ["X-Api-Key"])
        var recorded: [String] = []
        for try await event in try await TestEndpoint(realm, "events").stream().serverSentEvents {
            recorded.append(event.data)
        }
        #expect(recorded == ["one", "two k3y-s3cret", "three"])

        let interaction = try #require(Cassette.load(from: file).interactions.first)
        let chunks = try #require(interaction.response?.chunks)
        #expect(chunks.map(\.size) == pieces.map(\.count))
        #expect(chunks.map(\.at) == chunks.map(\.at).sorted() && (chunks.last?.at ?? 0) >= 0.1)
        let body = try #require(interaction.response?.body?.data)
        #expect(
            !String(decoding: body, as: UTF8.self).contains("k3y-s3cret"),
            "the secret is redacted in the body")
        #expect(interaction.request.headers["X-Api-Key"] != "k3y-s3cret")

        // Replayed at once: the same events, the secret as redacted; chunk by chunk, as recorded.
        let replay = try ReplayBackend(cassette: file, timeScale: 0)
        realm.use(replay)
        let stream = try await TestEndpoint(realm, "events").stream()
        var replayedChunks: [Int] = []
        for try await chunk in stream { replayedChunks.append(chunk.count) }
        #expect(replayedChunks.reduce(0, +) == body.count)
        #expect(replayedChunks.count == 3)
        var replayed: [String] = []
        for try await event in try await TestEndpoint(realm, "events").stream().serverSentEvents {
            replayed.append(event.data)
        }
        #expect(replayed.count == 3 && replayed.first == "one" && replayed.last == "three")
    }

    @Test func aCancelledStreamIsNotRecorded() async throws {
        // The second piece comes 300 s after the first, so the stream cannot end whole before the loop leaves
        // it, however long this task waits for a thread (in CI, beside the suites that hold the pool, 10 s and
        // more; under ThreadSanitizer on a loaded machine, 40 s).
        let piece = Data("data: x\n\n".utf8)
        let stub = StubBackend().on(
            .any, answer: .streamed([StubBackend.Piece(piece), StubBackend.Piece(piece, after: 300)]))
        let file = cassette()
        let recorder = try RecordingBackend(recording: stub, to: file)
        let realm = uniqueRealm("record").setBaseURL(URL(string: "https://sse.test")!).use(recorder)
            .setTimeout(600)
        for try await _ in try await TestEndpoint(realm, "events").stream() { break }
        // A recorder that kept the cancelled stream would have it by now: the cancel ends it at once.
        try await Task.sleep(nanoseconds: 200_000_000)
        #expect(recorder.cassette.interactions.isEmpty)
    }

    @Test func aPlainRecordingReplaysAsOneChunk() async throws {
        let file = cassette()
        let recorder = try RecordingBackend(
            recording: StubBackend().on(.any, answer: .json("{\"n\":1}\n{\"n\":2}\n")), to: file)
        let realm = uniqueRealm("record").setBaseURL(URL(string: "https://sse.test")!).use(recorder)
        _ = try await TestEndpoint(realm, "lines").request()
        realm.use(try ReplayBackend(cassette: file))
        struct Value: Decodable, Sendable { let n: Int }
        var values: [Int] = []
        for try await value in try await TestEndpoint(realm, "lines").stream().jsonLines(as: Value.self) {
            values.append(value.n)
        }
        #expect(values == [1, 2])
    }

    @Test(.tags(.realServer))
    func aRealStreamRecordedThroughCurlReplaysTheSameEvents() async throws {
        let file = cassette()
        let realm = uniqueRealm("record").setBaseURL(try StreamServer.url())
            .use(try RecordingBackend(recording: try CurlBackend(), to: file))
        var live: [ServerSentEvent] = []
        for try await event in try await TestEndpoint(realm, "events").stream().serverSentEvents {
            live.append(event)
        }
        realm.use(try ReplayBackend(cassette: file, timeScale: 0.5))
        var replayed: [ServerSentEvent] = []
        for try await event in try await TestEndpoint(realm, "events").stream().serverSentEvents {
            replayed.append(event)
        }
        #expect(live.count == 7 && replayed == live)
    }
}
