import Foundation
import SwiftyService
import SwiftyServiceCurl
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Server-sent events across reconnections: Last-Event-ID, the server's retry, 204, and when to give up.
@Suite("Reconnecting server-sent events", .timeLimit(.minutes(5)))
struct ReconnectingEventsTests {
    @Test(.tags(.realServer))
    func aDroppedStreamResumesAfterTheLastEventThroughTheMiddleware() async throws {
        // /resumable drops the connection after every 2 events and answers 204 after the 6th.
        let sent = CallbackRecorder<String>()
        let realm = uniqueRealm("sse").setBaseURL(try StreamServer.url()).use(try CurlBackend())
            .addMiddleware(
                Hooks(willSend: { request, _ in
                    sent.record(request.value(forHTTPHeaderField: "Last-Event-ID") ?? "none")
                }))
        var events: [ServerSentEvent] = []
        let start = Date()
        for try await event in TestEndpoint(realm, "resumable", parameters: ["total": 6, "per": 2])
            .serverSentEvents(reconnecting: EventReconnection(delay: 60))
        {
            events.append(event)
        }
        #expect(events.map(\.id) == ["1", "2", "3", "4", "5", "6"], "none lost, none twice")
        #expect(events.map(\.data).filter { $0.hasSuffix("after 2") }.count == 2)
        #expect(sent.calls == ["none", "2", "4", "6"], "the 204 after the last one ends it")
        #expect(Date().timeIntervalSince(start) < 30, "the server's retry (50 ms), not the 60 s given")
    }

    func realm(_ stub: StubBackend) -> ServiceRealm {
        uniqueRealm("sse").setBaseURL(URL(string: "https://sse.test")!).use(stub)
    }

    @Test func aRefusedStatusIsNotRetried() async throws {
        let stub = StubBackend().on(.any, answer: .status(401))
        await #expect {
            for try await _ in TestEndpoint(realm(stub), "events").serverSentEvents(
                reconnecting: .init(delay: 0))
            {}
        } throws: { ($0 as? ServiceError)?.kind == .unacceptableStatusCode }
        #expect(stub.received.count == 1)
    }

    @Test func itGivesUpAfterMaxAttemptsWithoutAnEvent() async throws {
        let stub = StubBackend().on(.any, answer: .connectionRefused)
        await #expect {
            for try await _ in TestEndpoint(realm(stub), "events")
                .serverSentEvents(reconnecting: .init(delay: 0.01, maxAttempts: 3))
            {}
        } throws: { ($0 as? ServiceError)?.kind == .transport }
        #expect(stub.received.count == 4, "the first try and 3 reconnections")
    }

    @Test func streamsEndedWithoutAnEventThrowAfterMaxAttempts() async throws {
        // Every connection: a comment and a retry, then a clean end; never an event.
        let stub = StubBackend().on(.any, answer: .streamed([Data(": nothing yet\nretry: 1\n\n".utf8)]))
        await #expect {
            for try await _ in TestEndpoint(realm(stub), "events")
                .serverSentEvents(reconnecting: .init(delay: 0.01, maxAttempts: 3))
            {}
        } throws: { error in
            guard case let .transport(request, underlying, _)? = error as? ServiceError else { return false }
            return (underlying as? EventStreamEnded)?.connections == 4 && request.url?.path == "/events"
        }
        #expect(stub.received.count == 4, "the first connection and 3 reconnections")
    }

    @Test func anIDOnlyBlockIsResumedFrom() async throws {
        // WHATWG: the blank line after `id: 2` sets the last event ID, though no event is dispatched.
        let stub = StubBackend().on(
            .any, answer: .streamed([Data("id: 1\ndata: a\n\nid: 2\n\n".utf8)]), .status(204))
        var events: [ServerSentEvent] = []
        for try await event in TestEndpoint(realm(stub), "events").serverSentEvents(
            reconnecting: .init(delay: 0))
        {
            events.append(event)
        }
        #expect(events == [ServerSentEvent(data: "a", id: "1")])
        #expect(stub.received.map { $0.urlRequest.value(forHTTPHeaderField: "Last-Event-ID") } == [nil, "2"])
    }

    @Test func aCleanEndReconnectsAndA204Stops() async throws {
        let stub = StubBackend().on(
            .any, answer: .streamed([Data("id: a\ndata: 1\n\n".utf8)]), .streamed([Data("data: 2\n\n".utf8)]),
            .status(204))
        var events: [ServerSentEvent] = []
        for try await event in TestEndpoint(realm(stub), "events").serverSentEvents(
            reconnecting: .init(delay: 0))
        {
            events.append(event)
        }
        // The id carries over the reconnection, as EventSource's last event ID does.
        #expect(events == [ServerSentEvent(data: "1", id: "a"), ServerSentEvent(data: "2", id: "a")])
        #expect(
            stub.received.map { $0.urlRequest.value(forHTTPHeaderField: "Last-Event-ID") } == [nil, "a", "a"])
    }

    @Test func cancellingDuringTheWaitEndsAsCancelled() async throws {
        let stub = StubBackend().on(.any, answer: .streamed([Data("data: 1\n\n".utf8)]))
        let realm = realm(stub)
        let task = Task {
            for try await _ in TestEndpoint(realm, "events").serverSentEvents(reconnecting: .init(delay: 30))
            {}
        }
        try await Task.sleep(nanoseconds: 200_000_000)
        task.cancel()
        await #expect { try await task.value } throws: { ($0 as? ServiceError)?.kind == .cancelled }
    }
}
