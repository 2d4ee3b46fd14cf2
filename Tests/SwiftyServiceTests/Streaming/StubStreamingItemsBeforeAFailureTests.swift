import Foundation
import SwiftyService
import Testing

/// On the stub: a stream's items before a failing one all come out, in order, then the error — with all of
/// them in one chunk and byte by byte.
@Suite("Stream items before a failure, on the stub", .timeLimit(.minutes(5)))
struct StubStreamingItemsBeforeAFailureTests: StubStreamSuite {
    struct Value: Decodable, Sendable { let n: Int }

    /// The body in one chunk, and byte by byte.
    static func splits(_ body: String) -> [(String, [Data])] {
        [("one chunk", [Data(body.utf8)]), ("byte by byte", Array(body.utf8).map { Data([$0]) })]
    }

    @Test func jsonLinesBeforeABadLineAreDelivered() async throws {
        for (split, chunks) in Self.splits("{\"n\":0}\n{\"n\":1}\noops\n{\"n\":3}\n") {
            let stub = StubBackend().on(.path("/jsonl"), answer: .streamed(chunks))
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
            #expect(values == [0, 1], "\(split)")
        }
    }

    @Test func linesBeforeATooLongLineAreDelivered() async throws {
        for (split, chunks) in Self.splits("a\nbb\n\(String(repeating: "x", count: 40))\nlast\n") {
            let stub = StubBackend().on(.path("/lines"), answer: .streamed(chunks))
            var lines: [String] = []
            await #expect {
                for try await line in try await TestEndpoint(realm(stub), "lines").stream().lines(
                    maxLength: 16)
                {
                    lines.append(line)
                }
            } throws: { error in
                guard case let .transport(_, underlying, _)? = error as? ServiceError else { return false }
                return (underlying as? StreamItemTooLarge)?.limit == 16
            }
            #expect(lines == ["a", "bb"], "\(split)")
        }
    }

    @Test func eventsBeforeATooLargeEventAreDelivered() async throws {
        let body =
            "id: 1\ndata: a\n\nid: 2\ndata: bb\n\ndata: \(String(repeating: "x", count: 40))\n\ndata: last\n\n"
        for (split, chunks) in Self.splits(body) {
            let stub = StubBackend().on(.path("/sse"), answer: .streamed(chunks))
            var events: [ServerSentEvent] = []
            await #expect {
                for try await event in try await TestEndpoint(realm(stub), "sse").stream().serverSentEvents(
                    maxEventSize: 16)
                {
                    events.append(event)
                }
            } throws: { error in
                guard case let .transport(_, underlying, _)? = error as? ServiceError else { return false }
                return (underlying as? StreamItemTooLarge)?.limit == 16
            }
            #expect(
                events == [ServerSentEvent(data: "a", id: "1"), ServerSentEvent(data: "bb", id: "2")],
                "\(split)")
        }
    }

    @Test func reconnectingEventsBeforeATooLargeEventAreDelivered() async throws {
        let body = "id: 1\ndata: a\n\nid: 2\ndata: bb\n\ndata: \(String(repeating: "x", count: 40))\n\n"
        for (split, chunks) in Self.splits(body) {
            let stub = StubBackend().on(.path("/sse"), answer: .streamed(chunks))
            var events: [String] = []
            await #expect {
                for try await event in TestEndpoint(realm(stub), "sse").serverSentEvents(
                    reconnecting: .init(delay: 0), maxEventSize: 16)
                {
                    events.append(event.data)
                }
            } throws: { error in
                guard case let .transport(_, underlying, _)? = error as? ServiceError else { return false }
                return underlying is StreamItemTooLarge
            }
            #expect(events == ["a", "bb"], "\(split)")
            #expect(stub.received.count == 1, "an event too large is not a reason to reconnect")
        }
    }
}
