import Foundation
import Testing

@testable import SwiftyService

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Streaming on the stub: the head before the body, chunks as scripted, the limits and the ways a stream ends.
@Suite("Streaming on the stub", .timeLimit(.minutes(5)))
struct StubStreamingTests: StubStreamSuite {
    @Test func theHeadComesFirstThenTheChunksInOrder() async throws {
        let stub = StubBackend().on(
            .path("/feed"),
            answer: .streamed(chunks(["a", "bc", "def"]), every: 0.01, headers: ["X-Feed": "1"]))
        let stream = try await TestEndpoint(realm(stub), "feed").stream()
        #expect(stream.response.statusCode == 200 && stream.response.header("X-Feed") == "1")
        #expect(stream.response.data.isEmpty)
        var received: [String] = []
        for try await chunk in stream { received.append(String(decoding: chunk, as: UTF8.self)) }
        #expect(received == ["a", "bc", "def"])
        #expect(stream.byteCount == 6)
    }

    @Test func linesEventsAndJSONLinesAcrossChunks() async throws {
        // The emoji's four bytes are split between the third and fourth chunks.
        let rest = Array("lo\n\n: keep-alive\r\nevent: done\r\ndata: \u{1F600}".utf8)
        let stub = StubBackend()
            .on(
                .path("/sse"),
                answer: .streamed([
                    Data("id: 1\ndata: hel".utf8), Data(rest[0..<(rest.count - 2)]),
                    Data(rest[(rest.count - 2)...]),
                    Data("\r\n\r\n".utf8),
                ])
            )
            .on(.path("/lines"), answer: .streamed(chunks(["one\r", "\ntwo\rthr", "ee"])))
            .on(.path("/jsonl"), answer: .streamed(chunks(["{\"n\":1}\n\n{\"n\"", ":2}\n"])))
        let realm = realm(stub)
        var events: [ServerSentEvent] = []
        for try await event in try await TestEndpoint(realm, "sse").stream().serverSentEvents {
            events.append(event)
        }
        #expect(
            events == [
                ServerSentEvent(data: "hello", id: "1"),
                ServerSentEvent(event: "done", data: "\u{1F600}", id: "1"),
            ])
        var lines: [String] = []
        for try await line in try await TestEndpoint(realm, "lines").stream().lines { lines.append(line) }
        #expect(lines == ["one", "two", "three"])
        struct Value: Decodable, Sendable { let n: Int }
        var values: [Int] = []
        for try await value in try await TestEndpoint(realm, "jsonl").stream().jsonLines(as: Value.self) {
            values.append(value.n)
        }
        #expect(values == [1, 2])
    }

    @Test func aRefusedStatusFailsBeforeAnyBodyWithTheDecodedErrorBody() async throws {
        struct Problem: Decodable, Sendable { let message: String }
        let stub = StubBackend().on(
            .path("/feed"), answer: .streamed(chunks(["{\"message\":", "\"nope\"}"]), statusCode: 429))
        let realm = realm(stub).decodeErrorBodies(.json(Problem.self))
        do {
            _ = try await TestEndpoint(realm, "feed").stream()
            Issue.record("a 429 must fail")
        } catch let error as ServiceError {
            #expect(error.kind == .unacceptableStatusCode)
            #expect(error.errorBody(as: Problem.self)?.message == "nope")
        }
    }

    @Test func aBadLineFailsWithADecodingErrorNamingIt() async throws {
        struct Value: Decodable, Sendable { let n: Int }
        let stub = StubBackend().on(.path("/jsonl"), answer: .streamed(chunks(["{\"n\":1}\n", "oops\n"])))
        var values: [Int] = []
        await #expect {
            for try await value in try await TestEndpoint(realm(stub), "jsonl").stream().jsonLines(
                as: Value.self)
            {
                values.append(value.n)
            }
        } throws: { error in
            guard case let .decoding(response, _)? = error as? ServiceError else { return false }
            return String(decoding: response.data, as: UTF8.self) == "oops"
        }
        #expect(values == [1])
    }

    @Test func aLinePastItsLimitEndsTheStreamWithATypedError() async throws {
        let stub = StubBackend().on(
            .path("/lines"), answer: .streamed(chunks(["short\n", String(repeating: "x", count: 100)])))
        let stream = try await TestEndpoint(realm(stub), "lines").stream()
        await #expect {
            for try await _ in stream.lines(maxLength: 50) {}
        } throws: { error in
            guard case let .transport(request, underlying, _)? = error as? ServiceError else { return false }
            return (underlying as? StreamItemTooLarge)?.limit == 50 && request.url?.path == "/lines"
        }
    }

    @Test func silenceBetweenChunksTimesOutAtTheTimeout() async throws {
        let stub = StubBackend().on(
            .path("/slow"),
            answer: .streamed([
                StubBackend.Piece(Data("a".utf8)), StubBackend.Piece(Data("b".utf8), after: 120),
            ]))
        try await measuringPromptness {
            let stream = try await TestEndpoint(realm(stub).setTimeout(0.3), "slow").stream()
            let start = Date()
            var received = 0
            await #expect {
                for try await _ in stream { received += 1 }
            } throws: { ($0 as? ServiceError)?.kind == .timedOut }
            #expect(received == 1 && Date().timeIntervalSince(start) < 90, "well before the piece at 120 s")
        }
    }

    @Test func chunksSpreadOverMoreThanTheTimeoutAreFine() async throws {
        // The timeout is silence between chunks, not the whole stream.
        let stub = StubBackend().on(
            .path("/drip"), answer: .streamed(chunks(Array(repeating: "x", count: 8)), every: 0.1))
        try await measuringPromptness {
            let stream = try await TestEndpoint(realm(stub).setTimeout(0.4), "drip").stream()
            var count = 0
            for try await _ in stream { count += 1 }
            #expect(count == 8)
        }
    }

    @Test func aResourceTimeoutEndsTheWholeStream() async throws {
        // 5 s of chunks; the deadline at 0.5 s (dispatch timers can be late on a loaded 2-core machine).
        let stub = StubBackend().on(
            .path("/drip"), answer: .streamed(chunks(Array(repeating: "x", count: 100)), every: 0.05))
        _ = try await measuringPromptness {
            // On a loaded machine the deadline may pass before the head: either way, the stream times out.
            await #expect {
                for try await _ in try await TestEndpoint(realm(stub).setResourceTimeout(0.5), "drip")
                    .stream()
                {}
            } throws: { ($0 as? ServiceError)?.kind == .timedOut }
        }
    }

    @Test func leavingTheLoopEarlyStopsTheStream() async throws {
        let stopped = CallbackRecorder<Bool>()
        let stub = StubBackend().on(
            .path("/drip"), answer: .streamed(chunks(Array(repeating: "x", count: 1000)), every: 0.05))
        let spy = StopSpy(stub, stopped: stopped)
        let stream = try await TestEndpoint(realm(stub).use(spy), "drip").stream()
        for try await _ in stream { break }
        #expect(try await stopped.first())
    }

    @Test func cancellingTheTaskStopsTheStream() async throws {
        let stub = StubBackend().on(
            .path("/drip"), answer: .streamed(chunks(Array(repeating: "x", count: 1000)), every: 0.05))
        let realm = realm(stub)
        let task = Task {
            var count = 0
            for try await _ in try await TestEndpoint(realm, "drip").stream() { count += 1 }
            return count
        }
        try await Task.sleep(nanoseconds: 100_000_000)
        task.cancel()
        await #expect { try await task.value } throws: { ($0 as? ServiceError)?.kind == .cancelled }
    }

    @Test func aStreamNobodyReadsStopsWhenLetGo() async throws {
        let stopped = CallbackRecorder<Bool>()
        let stub = StubBackend().on(
            .path("/drip"), answer: .streamed(chunks(Array(repeating: "x", count: 1000)), every: 0.05))
        _ = try await TestEndpoint(realm(stub).use(StopSpy(stub, stopped: stopped)), "drip").stream()
        #expect(try await stopped.first())
    }

    @Test func aSlowConsumerHoldsTheProducerBack() async throws {
        // 64 pieces of 64 KiB at once: the sink takes about its capacity and refuses the rest until read.
        let piece = Data(repeating: 7, count: 64 * 1024)
        let stub = StubBackend().on(.path("/big"), answer: .streamed(Array(repeating: piece, count: 64)))
        let stream = try await TestEndpoint(realm(stub), "big").stream()
        try await Task.sleep(nanoseconds: 200_000_000)
        var total = 0
        var iterator = stream.makeAsyncIterator()
        _ = try await iterator.next()
        // Delivered so far: what the buffer held, not the whole 4 MiB.
        #expect(stream.byteCount <= Int64(StreamSink.capacity + 2 * piece.count))
        total += piece.count
        while let chunk = try await iterator.next() { total += chunk.count }
        #expect(total == 64 * piece.count)
    }

    @Test func middlewareSeesTheHeadAndRetriesBeforeTheBody() async throws {
        let stub = StubBackend().on(
            .path("/feed"), answer: .streamed(chunks(["x"]), statusCode: 503),
            .streamed(chunks(["a", "b"]), statusCode: 200))
        var policy = RetryPolicy.maxRetries(2)
        policy.baseDelay = 0
        let seen = CallbackRecorder<Int>()
        let realm = realm(stub)
            .addMiddleware(
                Hooks(didReceive: { result, _ in seen.record((try? result.get().statusCode) ?? -1) })
            )
            .addMiddleware(RetryMiddleware(policy))
        let stream = try await TestEndpoint(realm, "feed").stream()
        var body = Data()
        for try await chunk in stream { body.append(chunk) }
        #expect(body == Data("ab".utf8) && stream.response.attempts == 2)
        #expect(seen.calls == [200])
        #expect(stub.received.count == 2)
    }

    @Test func aBackendThatDoesNotStreamServesTheWholeBody() async throws {
        let stub = StubBackend().on(.path("/feed"), answer: .streamed(chunks(["a\n", "b\n"])))
        let realm = realm(stub).use(SpyBackend(stub))
        var lines: [String] = []
        for try await line in try await TestEndpoint(realm, "feed").stream().lines { lines.append(line) }
        #expect(lines == ["a", "b"])
    }

    @Test func aWholeBodyReachesAReaderThatWasWaitingForIt() async throws {
        // The head of a whole answer goes first: a reader can be waiting before its body is handed over. The
        // head is kept, as the pipeline keeps it: a head let go of stops its body.
        let request = URLRequest(url: URL(string: "https://stream.test/whole")!)
        let heads = CallbackRecorder<Response>()
        let sink = StreamSink(request: request) { if case let .success(head) = $0 { heads.record(head) } }
        let reader = Task { try await sink.collect(limit: 1 << 20) }
        try await waitUntil(every: 1_000_000, for: 15) { sink.hasWaitingReader }
        try #require(sink.hasWaitingReader)
        let body = Data("the whole body".utf8)
        sink.deliver(.success(Response(request: request, statusCode: 200, data: body)))
        #expect(try await reader.value == body)
    }

    @Test func aReaderHearsOfTheEndOnlyOnceATapHasTakenIt() async throws {
        // A recorder's tap writes its cassette when it hears of the end: a loop that asks for the next chunk
        // meanwhile must not be over before the file is there (a recorded stream's test once read no file).
        let request = URLRequest(url: URL(string: "https://stream.test/tapped")!)
        // The head is kept, as the pipeline keeps it: a head let go of stops its body.
        let heads = CallbackRecorder<Response>()
        let sink = StreamSink(request: request) { if case let .success(head) = $0 { heads.record(head) } }
        let kept = Locked.make(false)
        sink.tap { event in
            guard case .end = event else { return }
            Thread.sleep(forTimeInterval: 0.3)
            kept.withLock { $0 = true }
        }
        sink.head(Response(request: request, statusCode: 200))
        _ = sink.offer(Data("body".utf8))
        #expect(try await sink.next() == Data("body".utf8))
        let ending = Thread { sink.finish() }
        ending.start()
        try await Task.sleep(for: .milliseconds(100))  // the tap is taking the end now
        #expect(try await sink.next() == nil)
        #expect(kept.withLock { $0 }, "the loop ended after the tap had kept what it kept")
    }

    @Test func aReaderCancelledWhileChunksArriveStopsTheStreamEveryTime() async throws {
        // A chunk handed to a waiting reader in the instant its task is cancelled: the cancellation handler
        // stops the sink while the producer wakes the reader. Waking it under the sink's lock once deadlocked
        // (the wake waits for the task's own lock, which its cancellation handler holds while it waits for the
        // sink's). 300 rounds, each a reader cancelled after a short, varying while.
        for round in 0..<300 {
            let request = URLRequest(url: URL(string: "https://stream.test/race/\(round)")!)
            let heads = CallbackRecorder<Response>()
            let sink = StreamSink(request: request) { if case let .success(head) = $0 { heads.record(head) } }
            sink.head(Response(request: request, statusCode: 200))
            let producer = Thread {
                var sent = 0
                while !sink.isEnded, sent < 1_000_000 {
                    if sink.offer(Data("x".utf8)) { sent += 1 } else { Thread.sleep(forTimeInterval: 0.000_05) }
                }
            }
            let reader = Task {
                var bytes = 0
                while let chunk = try await sink.next() { bytes += chunk.count }
                return bytes
            }
            producer.start()
            try await Task.sleep(for: .microseconds(50 + (round % 10) * 40))
            reader.cancel()
            await #expect(throws: ServiceError.self, "round \(round): the reader hears it was cancelled") {
                try await reader.value
            }
            #expect(sink.isEnded, "round \(round): and the stream is stopped")
        }
    }

    @Test func aSecondLoopAtOnceIsToldAndTheFirstGoesOn() async throws {
        // "b" comes 300 s after "a": the first loop waits for it while the second one tries, however late a
        // loaded machine runs them (under ThreadSanitizer beside busy loops, past 30 s).
        let pieces = [StubBackend.Piece(Data("a".utf8)), StubBackend.Piece(Data("b".utf8), after: 300)]
        let stub = StubBackend().on(.path("/drip"), answer: .streamed(pieces))
        let stream = try await TestEndpoint(realm(stub).setTimeout(600), "drip").stream()
        let first = Task {
            var body = ""
            for try await chunk in stream { body += String(decoding: chunk, as: UTF8.self) }
            return body
        }
        try await waitUntil(every: 5_000_000, for: 60) { stream.hasWaitingReader }
        try #require(stream.hasWaitingReader)
        do {
            var second = stream.makeAsyncIterator()
            await #expect { _ = try await second.next() } throws: { error in
                guard case .transport? = error as? ServiceError else { return false }
                return "\(error)".contains("read once")
            }
        }
        // The second iterator is gone and stopped nothing: the first still waits, until it is cancelled.
        #expect(stream.hasWaitingReader)
        first.cancel()
        await #expect { try await first.value } throws: { ($0 as? ServiceError)?.kind == .cancelled }
    }

    @Test func aFailureBeforeTheHeadFailsTheRequest() async throws {
        let stub = StubBackend().on(.path("/feed"), answer: .connectionRefused)
        await #expect {
            try await TestEndpoint(realm(stub), "feed").stream()
        } throws: { ($0 as? ServiceError)?.kind == .transport }
    }
}

/// A streaming backend that says when its transfer was stopped.
struct StopSpy: StreamingBackend {
    let inner: StubBackend
    let stopped: CallbackRecorder<Bool>

    init(_ inner: StubBackend, stopped: CallbackRecorder<Bool>) {
        self.inner = inner
        self.stopped = stopped
    }

    func send(
        _ request: BackendRequest, completion: @escaping @Sendable (Result<Response, any Error>) -> Void
    )
        -> BackendTask
    {
        inner.send(request, completion: completion)
    }

    func stream(_ request: BackendRequest, into sink: StreamSink) -> BackendTask {
        let task = inner.stream(request, into: sink)
        return BackendTask { [stopped] in
            stopped.record(true)
            task.cancel()
        }
    }
}
