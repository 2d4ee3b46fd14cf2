import Foundation
import SwiftyService
import Testing

/// Items before a failing one, reconnection without events and the last event ID, on every backend against
/// the streaming server (Tests/Servers/sse_server.py: /bad-items, /no-events, /id-only).
extension StreamingRealServerTests {
    static let splits = ["one", "bytes"]

    @Test(arguments: ConformingBackend.allCases, splits)
    func jsonLinesBeforeABadLineAreDelivered(_ kind: ConformingBackend, _ split: String) async throws {
        let stream = try await TestEndpoint(
            try realm(kind), "bad-items", parameters: ["kind": "jsonl", "split": split]
        ).stream()
        var values: [Int] = []
        await #expect {
            for try await value in stream.jsonLines(as: [Int].self) { values += value }
        } throws: { error in
            guard case let .decoding(response, _)? = error as? ServiceError else { return false }
            return String(decoding: response.data, as: UTF8.self) == "oops"
        }
        #expect(values == [0, 1], "\(kind), \(split)")
    }

    @Test(arguments: ConformingBackend.allCases, splits)
    func linesBeforeATooLongLineAreDelivered(_ kind: ConformingBackend, _ split: String) async throws {
        let stream = try await TestEndpoint(
            try realm(kind), "bad-items", parameters: ["kind": "lines", "split": split]
        ).stream()
        var lines: [String] = []
        await #expect {
            for try await line in stream.lines(maxLength: 16) { lines.append(line) }
        } throws: { error in
            guard case let .transport(_, underlying, _)? = error as? ServiceError else { return false }
            return (underlying as? StreamItemTooLarge)?.limit == 16
        }
        #expect(lines == ["a", "bb"], "\(kind), \(split)")
    }

    @Test(arguments: ConformingBackend.allCases, splits)
    func eventsBeforeATooLargeEventAreDelivered(_ kind: ConformingBackend, _ split: String) async throws {
        let stream = try await TestEndpoint(
            try realm(kind), "bad-items", parameters: ["kind": "sse", "split": split]
        ).stream()
        var events: [ServerSentEvent] = []
        await #expect {
            for try await event in stream.serverSentEvents(maxEventSize: 16) { events.append(event) }
        } throws: { error in
            guard case let .transport(_, underlying, _)? = error as? ServiceError else { return false }
            return (underlying as? StreamItemTooLarge)?.limit == 16
        }
        #expect(
            events == [ServerSentEvent(data: "a", id: "1"), ServerSentEvent(data: "bb", id: "2")],
            "\(kind), \(split)")
    }

    @Test(arguments: ConformingBackend.allCases)
    func streamsEndedWithoutAnEventThrowAfterMaxAttempts(_ kind: ConformingBackend) async throws {
        let connections = CallbackRecorder<Int>()
        let realm = try realm(kind).addMiddleware(Hooks(willSend: { _, _ in connections.record(1) }))
        await #expect {
            for try await _ in TestEndpoint(realm, "no-events").serverSentEvents(
                reconnecting: EventReconnection(delay: 60, maxAttempts: 2))
            {}
        } throws: { error in
            guard case let .transport(_, underlying, _)? = error as? ServiceError else { return false }
            return (underlying as? EventStreamEnded)?.connections == 3
        }
        #expect(
            connections.calls.count == 3, "\(kind): the first and 2 reconnections, after the server's retry")
    }

    @Test(arguments: ConformingBackend.allCases)
    func aReconnectionResumesFromAnIDOnlyBlock(_ kind: ConformingBackend) async throws {
        let sent = CallbackRecorder<String>()
        let realm = try realm(kind).addMiddleware(
            Hooks(willSend: { request, _ in
                sent.record(request.value(forHTTPHeaderField: "Last-Event-ID") ?? "none")
            }))
        var events: [ServerSentEvent] = []
        for try await event in TestEndpoint(realm, "id-only").serverSentEvents(
            reconnecting: EventReconnection(delay: 60))
        {
            events.append(event)
        }
        #expect(events == [ServerSentEvent(data: "one", id: "1", retry: 10)], "\(kind)")
        #expect(sent.calls == ["none", "2"], "\(kind): the blank line after `id: 2` set the last event ID")
    }
}
