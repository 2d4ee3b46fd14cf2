import Foundation
import ProcessProbes
import SwiftyService
import SwiftyServiceCurl
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The streaming server that scripts/test starts (Tests/Servers/sse_server.py).
enum StreamServer {
    static func url(private: Bool = false) throws -> URL {
        let name = `private` ? "SSE_PRIVATE_URL" : "SSE_URL"
        guard let value = ProcessInfo.processInfo.environment[name], let url = URL(string: value) else {
            throw SetupError(
                description: "\(name) is not set: run the tests with scripts/test, which starts it")
        }
        return url
    }
}

/// Streams from real servers on every shipped backend. CurlBackend and URLSessionBackend stream; the legacy
/// example's backend does not, and serves the same items from the whole body (see StreamingBackend).
// One test at a time: the URLSession cases share one FoundationNetworking thread, and under AddressSanitizer a
// hundred thousand JSON lines on it held up another test's ticks past its 1.5 s silence limit.
@Suite("Streaming from real servers", .serialized, .timeLimit(.minutes(5)), .tags(.realServer))
struct StreamingRealServerTests {
    func realm(_ kind: ConformingBackend, private: Bool = false) throws -> ServiceRealm {
        uniqueRealm("stream").setBaseURL(try StreamServer.url(private: `private`)).use(try kind.make())
    }

    @Test(arguments: ConformingBackend.allCases)
    func serverSentEventsFollowTheParsingRules(_ kind: ConformingBackend) async throws {
        let stream = try await TestEndpoint(try realm(kind), "events").stream()
        #expect(stream.response.header("Content-Type") == "text/event-stream")
        var events: [ServerSentEvent] = []
        for try await event in stream.serverSentEvents { events.append(event) }
        #expect(
            events == [
                ServerSentEvent(data: "first", id: "1", retry: 250),
                ServerSentEvent(event: "update", data: "line one\nline two", id: "2"),
                ServerSentEvent(data: "cr only", id: "3"),
                ServerSentEvent(data: "", id: "3"),
                ServerSentEvent(data: "caf\u{E9} \u{20AC}", id: "4"),
                ServerSentEvent(data: "no space\n two spaces", id: "5"),
                ServerSentEvent(event: "done", data: "bye", id: "5"),
            ], "\(kind)")
    }

    @Test(arguments: ConformingBackend.allCases)
    func aHundredThousandJSONLines(_ kind: ConformingBackend) async throws {
        struct Line: Decodable, Sendable {
            let n: Int
            let text: String
        }
        let stream = try await TestEndpoint(try realm(kind), "jsonl", parameters: ["count": 100_000]).stream()
        var expected = 0
        for try await line in stream.jsonLines(as: Line.self) {
            if line.n != expected || line.text != "line \(expected)" {
                Issue.record("\(kind): line \(expected) is \(line)")
            }
            expected += 1
        }
        #expect(expected == 100_000, "\(kind)")
    }

    @Test(arguments: ConformingBackend.allCases)
    func theCallbackFormAServiceAndTheLogStreamFromTheServer(_ kind: ConformingBackend) async throws {
        // /jsonl?count=1000: 1,000 lines of JSON, each ending in a newline.
        let log = CallbackRecorder<String>()
        let realm = try realm(kind).addMiddleware(LoggingMiddleware(to: { log.record($0) }))
        let bytes = CallbackRecorder<Int>()
        let done = CallbackRecorder<Result<Response, ServiceError>>()
        TestEndpoint(realm, "jsonl", parameters: ["count": 1000]).stream {
            bytes.record($0.count)
        } completion: {
            done.record($0)
        }
        #expect(try await done.first(within: 30).get().statusCode == 200, "\(kind)")
        let total = bytes.calls.reduce(0, +)
        #expect(total > 1000, "\(kind): \(total) bytes")
        let lines = log.calls
        #expect(lines.contains { $0.contains("→ 200 streamed \(total) bytes") }, "\(kind): \(lines)")

        let service = Service(baseURL: try StreamServer.url().appendingPathComponent("jsonl"))
        realm.register(service)
        var count = 0
        for try await _ in try await service.stream(query: ["count": 1000]).lines { count += 1 }
        #expect(count == 1000, "\(kind)")
    }

    @Test(arguments: ConformingBackend.allCases)
    func httpbinStreamAndDrip(_ kind: ConformingBackend) async throws {
        // httpbin /stream/N sends N JSON objects, one per line; /drip sends numbytes over duration seconds.
        struct Object: Decodable, Sendable { let id: Int }
        let realm = try HTTPBin.realm(backend: try kind.make())
        var ids: [Int] = []
        for try await object in try await TestEndpoint(realm, "stream/20").stream().jsonLines(as: Object.self)
        {
            ids.append(object.id)
        }
        #expect(ids == Array(0..<20), "\(kind)")

        // 4 bytes over 2 s.
        var total = 0
        for try await chunk in try await TestEndpoint(
            realm, "drip", parameters: ["numbytes": 4, "duration": 2, "delay": 0]
        ).stream() {
            total += chunk.count
        }
        #expect(total == 4, "\(kind)")
    }

    @Test(arguments: [ConformingBackend.urlSession, .curl])
    func silenceIsTimedBetweenChunks(_ kind: ConformingBackend) async throws {
        // 16 ticks 0.25 s apart: 4 s in all, longer than the 2.5 s timeout, yet never more than 0.25 s of
        // silence (a wide margin for a loaded machine). (The legacy example's client times the whole request,
        // as TimeoutMeaningTests notes.)
        // (When events are read is no measure of streaming: a task can wait seconds for a thread of the
        // cooperative pool, 2 here, while other suites compute. The endless stream, the drop and the slow
        // reader tests show it instead.)
        let count = try await measuringPromptness {
            let stream = try await TestEndpoint(
                try realm(kind).setTimeout(2.5), "ticks", parameters: ["count": 16, "every": 0.25]
            ).stream()
            var count = 0
            for try await _ in stream.serverSentEvents { count += 1 }
            return count
        }
        #expect(count == 16, "\(kind)")
    }

    @Test(arguments: ConformingBackend.allCases)
    func aRefusedStatusThrowsWithItsErrorBody(_ kind: ConformingBackend) async throws {
        struct Problem: Decodable, Sendable { let message: String }
        let realm = try realm(kind).decodeErrorBodies(.json(Problem.self))
        await #expect {
            try await TestEndpoint(realm, "error").stream()
        } throws: { error in
            let error = error as? ServiceError
            return error?.kind == .unacceptableStatusCode
                && error?.errorBody(as: Problem.self)?.message == "slow down"
        }
        let empty = try await TestEndpoint(realm, "no-content").stream()
        #expect(empty.response.statusCode == 204)
        for try await _ in empty { Issue.record("\(kind): a 204 has no body") }
    }

    @Test(arguments: [ConformingBackend.urlSession, .curl])
    func aDropMidStreamFailsAfterTheEventsBeforeIt(_ kind: ConformingBackend) async throws {
        // The legacy backend reads the whole body first, so there the drop fails the request itself.
        let stream = try await TestEndpoint(try realm(kind), "events-then-drop").stream()
        var events: [String] = []
        await #expect {
            for try await event in stream.serverSentEvents { events.append(event.data) }
        } throws: { ($0 as? ServiceError)?.kind == .transport }
        #expect(events == ["one", "two"], "\(kind)")
    }

    @Test(.serialized, arguments: [ConformingBackend.urlSession, .curl])
    func leavingTheLoopOrCancellingFreesTheConnectionAtOnce(_ kind: ConformingBackend) async throws {
        // The private port is this test's alone: every socket to it is one of these streams.
        let url = try StreamServer.url(private: true)
        let port = try #require(url.port)
        let realm = uniqueRealm("stream").setBaseURL(url).use(try kind.make())
        let endless = TestEndpoint(realm, "ticks", parameters: ["count": 100_000, "every": 0.01])
        var received = 0
        for try await _ in try await endless.stream().serverSentEvents {
            received += 1
            if received == 3 { break }
        }
        try await expectNoSockets(toPort: port)

        let flowing = CallbackRecorder<Bool>()
        let task = Task {
            for try await _ in try await endless.stream() { flowing.record(true) }
        }
        _ = try await flowing.first()
        #expect(openSockets(toPort: port) == 1)
        task.cancel()
        await #expect { try await task.value } throws: { ($0 as? ServiceError)?.kind == .cancelled }
        try await expectNoSockets(toPort: port)
    }

    func expectNoSockets(toPort port: Int) async throws {
        try await waitUntil(every: 10_000_000, for: 3) { openSockets(toPort: port) == 0 }
        #expect(openSockets(toPort: port) == 0, "the stopped transfer's connection is closed")
    }

    @Test func aSlowConsumerHoldsCurlBack() async throws {
        // 32 MiB as fast as the server can; the reader takes one chunk and waits: what was handed over stays
        // within the buffer's capacity, the rest waits in the kernel and at the server.
        let realm = try realm(.curl)
        let stream = try await TestEndpoint(realm, "bytes", parameters: ["mb": 32]).stream()
        var iterator = stream.makeAsyncIterator()
        var total = try await iterator.next()?.count ?? 0
        try await Task.sleep(nanoseconds: 500_000_000)
        // The chunk read, and the buffer filled up to its capacity by chunks of at most 256 KiB (CurlBackend's
        // read size for streams).
        #expect(
            stream.byteCount <= Int64(StreamSink.capacity + 2 * 256 * 1024),
            "held back at \(stream.byteCount)")
        while let chunk = try await iterator.next() { total += chunk.count }
        #expect(total == 32 << 20)
    }
}
