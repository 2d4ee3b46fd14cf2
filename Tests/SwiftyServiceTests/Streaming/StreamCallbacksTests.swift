import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Streams as the callback style, the CRUD resource, the log and the realm's observers see them.
@Suite("Streams with callbacks, on a Service, in the log and in events", .timeLimit(.minutes(5)))
struct StreamCallbacksTests: StubStreamSuite {
    @Test func theCallbackFormHandsOverChunksInOrderThenCompletesOnceOnTheRealmsQueue() async throws {
        let queue = DispatchQueue(label: "callbacks")
        let key = DispatchSpecificKey<Bool>()
        queue.setSpecific(key: key, value: true)
        let stub = StubBackend().on(
            .path("/feed"), answer: .streamed(chunks(["a", "bc", "def"]), every: 0.01))
        let realm = realm(stub).setCallbackQueue(queue)
        let pieces = CallbackRecorder<(String, Bool)>()
        let done = CallbackRecorder<(Result<Response, ServiceError>, Bool, Int)>()
        TestEndpoint(realm, "feed").stream { chunk in
            pieces.record(
                (String(decoding: chunk, as: UTF8.self), DispatchQueue.getSpecific(key: key) == true))
        } completion: { result in
            done.record((result, DispatchQueue.getSpecific(key: key) == true, pieces.calls.count))
        }
        let (result, onQueue, chunksBefore) = try await done.first()
        #expect(try result.get().statusCode == 200)
        #expect(onQueue && chunksBefore == 3, "the completion comes on the queue, after every chunk")
        #expect(pieces.calls.map(\.0) == ["a", "bc", "def"])
        #expect(pieces.calls.allSatisfy { $0.1 }, "each chunk comes on the queue")
        #expect(try await done.count() == 1)
    }

    @Test func cancellingTheCallbackFormCompletesOnceAsCancelledAndStopsTheChunks() async throws {
        // A chunk every 50 ms for 50 s: the cancel comes after the first few.
        let stub = StubBackend().on(
            .path("/feed"), answer: .streamed(Array(repeating: Data("x".utf8), count: 1000), every: 0.05))
        let pieces = CallbackRecorder<Int>()
        let done = CallbackRecorder<Result<Response, ServiceError>>()
        let handle = TestEndpoint(realm(stub), "feed").stream {
            pieces.record($0.count)
        } completion: {
            done.record($0)
        }
        _ = try await pieces.first()
        handle.cancel()
        let result = try await done.first()
        #expect(result.serviceError?.kind == .cancelled)
        let seen = pieces.calls.count
        try await Task.sleep(nanoseconds: 300_000_000)
        #expect(pieces.calls.count == seen, "no chunk after the completion")
        #expect(try await done.count() == 1)
    }

    @Test func aRefusedStreamCompletesWithItsStatusAndNoChunk() async throws {
        let stub = StubBackend().on(.path("/feed"), answer: .streamed(chunks(["nope"]), statusCode: 503))
        let pieces = CallbackRecorder<Data>()
        let done = CallbackRecorder<Result<Response, ServiceError>>()
        TestEndpoint(realm(stub), "feed").stream {
            pieces.record($0)
        } completion: {
            done.record($0)
        }
        let result = try await done.first()
        #expect(result.serviceError?.kind == .unacceptableStatusCode)
        #expect(result.serviceError?.response?.data == Data("nope".utf8), "the error body is read")
        #expect(pieces.calls.isEmpty)
    }

    @Test func aServiceStreamsItsCollectionWithTheQuery() async throws {
        let stub = StubBackend().on(
            .path("/v1/users"), answer: .streamed(chunks(["{\"id\":1}\n{\"id\"", ":2}\n"])))
        let realm = uniqueRealm("stream").use(stub)
        let users = Service(baseURL: URL(string: "https://api.example.com/v1/users")!)
        realm.register(users)
        struct User: Decodable, Sendable { let id: Int }
        var ids: [Int] = []
        for try await user in try await users.stream(query: ["export": "all"]).jsonLines(as: User.self) {
            ids.append(user.id)
        }
        #expect(ids == [1, 2])
        let sent = try #require(stub.received.last?.urlRequest)
        #expect(sent.httpMethod == "GET")
        #expect(sent.url?.absoluteString == "https://api.example.com/v1/users?export=all")
        let one = try await users.stream("7")
        #expect(one.response.request.url?.path == "/v1/users/7")
    }

    @Test func theLogHasTheHeadThenTheBytesAtTheEnd() async throws {
        let stub = StubBackend()
            .on(.path("/feed"), answer: .streamed(chunks(["abc", "defg"]), every: 0.01))
            .on(
                .path("/endless"),
                answer: .streamed(Array(repeating: Data("xy".utf8), count: 1000), every: 0.05))
        let log = CallbackRecorder<String>()
        let realm = realm(stub).addMiddleware(LoggingMiddleware(to: { log.record($0) }))
        for try await _ in try await TestEndpoint(realm, "feed").stream() {}
        var read = 0
        for try await _ in try await TestEndpoint(realm, "endless").stream() {
            read += 1
            if read == 2 { break }
        }
        try await waitUntil(every: 5_000_000, for: 10) { log.calls.count >= 4 }
        let lines = log.calls
        #expect(lines.count == 4, "\(lines)")
        #expect(lines[0].hasPrefix("GET https://stream.test/feed → 200 ("))
        #expect(lines[1].hasPrefix("GET https://stream.test/feed → 200 streamed 7 bytes ("), "\(lines[1])")
        #expect(
            lines[3].hasPrefix("GET https://stream.test/endless → 200 stream cancelled after "), "\(lines[3])"
        )
    }

    @Test func observersSeeAStreamFromBuiltToCompletedOrFailed() async throws {
        let stub = StubBackend()
            .on(.path("/feed"), answer: .streamed(chunks(["abc"])))
            .on(.path("/refused"), answer: .streamed(chunks(["no"]), statusCode: 429))
        let events = CallbackRecorder<RequestEvent>()
        let realm = realm(stub).addObserver(EventHandler { events.record($0) })
        for try await _ in try await TestEndpoint(realm, "feed").stream() {}
        await #expect(throws: ServiceError.self) { try await TestEndpoint(realm, "refused").stream() }
        func ended(_ event: RequestEvent) -> Bool {
            switch event.kind {
            case .completed, .failed: true
            default: false
            }
        }
        try await waitUntil(every: 5_000_000, for: 10) { events.calls.filter(ended).count >= 2 }
        let byCall = Dictionary(grouping: events.calls, by: \.requestID).values.sorted {
            $0[0].requestID.value < $1[0].requestID.value
        }
        #expect(byCall.count == 2)
        let names = byCall.map { $0.map { "\($0.kind)".prefix(while: { $0 != "(" }) } }
        #expect(names.first == ["built", "attemptStarted", "responseHead", "completed"])
        #expect(names.last == ["built", "attemptStarted", "responseHead", "failed"])
    }
}
