import Foundation
import SwiftyServiceCurl
import Testing

@testable import SwiftyService

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The HTTP/2 server scripts/test starts (Tests/Servers/http2_server.py), on the test CA's valid leaf.
enum HTTP2Server {
    static func url() throws -> URL {
        guard let value = ProcessInfo.processInfo.environment["HTTP2_URL"], let url = URL(string: value)
        else {
            throw SetupError(
                description: "HTTP2_URL is not set: run the tests with scripts/test, which starts it")
        }
        return url
    }
}

/// A realm's limit of connections to one host, for streams that hold theirs as long as they run: requests
/// past it wait where the caller can see it, and start when a connection comes free; over HTTP/2 they share
/// one and none waits. Against the streaming server's endless /ticks (Tests/Servers/sse_server.py) and the
/// HTTP/2 server's (http2_server.py).
@Suite("Connections per host", .timeLimit(.minutes(5)), .tags(.realServer))
struct ConnectionLimitTests {
    static let backends: [ConformingBackend] = [.curl, .urlSession]

    /// A stream of a tick every 50 ms for 100 s: it holds its connection until the test lets it go.
    func ticks(_ realm: ServiceRealm) -> TestEndpoint {
        TestEndpoint(realm, "ticks", parameters: ["count": 2000, "every": 0.05])
    }

    @Test(arguments: backends)
    func aStreamPastTheLimitWaitsVisiblyAndStartsWhenAConnectionIsFree(_ kind: ConformingBackend) async throws
    {
        let events = EventLog()
        let log = CallbackRecorder<String>()
        let realm = uniqueRealm("limit").setBaseURL(try StreamServer.url()).use(try kind.make())
            .setMaxConnectionsPerHost(2).addObserver(events).addMiddleware(
                LoggingMiddleware(to: { log.record($0) }))
        let first = try await ticks(realm).stream()
        let second = try await ticks(realm).stream()
        let third = Task { try await ticks(realm).stream() }
        let waited = try await waitUntil(for: 10) {
            events.all.contains { if case .waitingForConnection = $0.kind { true } else { false } }
        }
        #expect(waited, "\(kind): the third stream's wait is an event")
        let server = try StreamServer.url()
        let host = "http://\(server.host ?? ""):\(server.port ?? 0)"
        #expect(
            log.calls.contains { $0.hasSuffix("waiting for a connection to \(host) (all 2 in use)") },
            "\(kind): and a log line: \(log.calls)")
        #expect(events.all.filter { if case .responseHead = $0.kind { true } else { false } }.count == 2)
        // The first stream ends (its reader leaves): its connection goes to the third.
        for try await _ in first { break }
        let started = try await third.value
        #expect(started.response.statusCode == 200, "\(kind)")
        for try await _ in started { break }
        for try await _ in second { break }
    }

    @Test(arguments: backends)
    func theRealmsLimitLetsMoreStreamsRunThanTheBackendsOwn(_ kind: ConformingBackend) async throws {
        // Ten at once: more than URLSessionBackend's 4 and CurlBackend's 8.
        let events = EventLog()
        let realm = uniqueRealm("limit").setBaseURL(try StreamServer.url()).use(try kind.make())
            .setMaxConnectionsPerHost(10).addObserver(events)
        let streams = try await withThrowingTaskGroup(of: ResponseStream.self) { group in
            for _ in 0..<10 { group.addTask { try await ticks(realm).stream() } }
            var streams: [ResponseStream] = []
            for try await stream in group { streams.append(stream) }
            return streams
        }
        #expect(streams.count == 10 && streams.allSatisfy { $0.response.statusCode == 200 }, "\(kind)")
        #expect(
            !events.all.contains { if case .waitingForConnection = $0.kind { true } else { false } },
            "\(kind)")
        for stream in streams { for try await _ in stream { break } }
    }

    @Test func overHTTP2StreamsShareAConnectionAndNoneWaits() async throws {
        // URLSession on Linux cannot trust the test CA (no TLS policies there): CurlBackend only.
        let realm = uniqueRealm("h2").setBaseURL(try HTTP2Server.url()).use(try CurlBackend())
            .setTLSPolicy(TLSPolicy(trustedRoots: try TLSFixtures.caRoots())).setMaxConnectionsPerHost(2)
        let streams = try await withThrowingTaskGroup(of: ResponseStream.self) { group in
            for _ in 0..<12 { group.addTask { try await ticks(realm).stream() } }
            var streams: [ResponseStream] = []
            for try await stream in group { streams.append(stream) }
            return streams
        }
        #expect(streams.count == 12)
        #expect(streams.allSatisfy { $0.response.header("X-HTTP-Version") == "2" })
        let connections = Set(streams.compactMap { $0.response.header("X-Client-Port") })
        #expect(connections.count == 1, "twelve streams, one connection: \(connections)")
        for stream in streams { for try await _ in stream { break } }
    }
}

/// What a connection limit counts by: one key for every spelling of one host and port.
@Suite struct ConnectionHostKeyTests {
    @Test func oneHostAndPortIsOneKeyHoweverTheURLSpellsIt() {
        let key = BackendRequest.hostKey(ofURL:)
        #expect(key("https://api.example.com/v1/x?y=1") == "https://api.example.com:443")
        #expect(key("HTTPS://user:secret@API.Example.COM:443#f") == "https://api.example.com:443")
        #expect(key("http://127.0.0.1:8080/a") == "http://127.0.0.1:8080")
        #expect(key("http://127.0.0.1") == "http://127.0.0.1:80")
        #expect(key("http://[::1]/a") == "http://[::1]:80" && key("http://[::1]:81") == "http://[::1]:81")
        #expect(key("http://a.test:80/") != key("http://a.test:81/"))
        #expect(BackendRequest.hostKey(of: URL(string: "https://Example.com/p")) == "https://example.com:443")
    }
}

/// The gate's own bookkeeping, without a server: a host it has seen stays known while it knows few, and its
/// limit holds whether it was kept or forgotten.
@Suite("Connection gate")
struct HostConnectionGateTests {
    final class Transfer: Sendable {}

    @Test func anIdleHostIsKeptAndItsLimitStillHolds() {
        let gate = HostConnectionGate<Transfer>()
        let host = "http://a.example:80"
        for _ in 0..<3 {
            #expect(gate.enter(Transfer(), host: host, limit: 1))
            let second = Transfer()
            #expect(!gate.enter(second, host: host, limit: 1), "past the limit, a transfer waits")
            #expect(gate.leave(host).first === second, "and starts when the first is done")
            #expect(gate.leave(host).isEmpty)
            #expect(gate.knownHostCount == 1, "the idle host is kept")
        }
    }

    @Test func pastItsShareOfHostsTheGateForgetsEachAsItTurnsIdle() {
        let gate = HostConnectionGate<Transfer>()
        let kept = HostConnectionGate<Transfer>.hostsKeptIdle
        let hosts = (0..<(kept + 10)).map { "http://h\($0).example:80" }
        for host in hosts { #expect(gate.enter(Transfer(), host: host, limit: 1)) }
        #expect(gate.knownHostCount == kept + 10)
        for host in hosts { _ = gate.leave(host) }
        #expect(gate.knownHostCount == kept)
        // A forgotten host and a kept one alike take a transfer at once, and count it.
        for host in [hosts.first!, hosts.last!] {
            #expect(gate.enter(Transfer(), host: host, limit: 1))
            #expect(!gate.enter(Transfer(), host: host, limit: 1))
        }
    }
}
