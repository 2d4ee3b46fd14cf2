import Foundation
import ProcessProbes
import Testing

@testable import SwiftyService

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `CurlBackend(threads:)`: each host's requests go to one of the backend's threads, whose connections
/// they reuse; every thread ends with the backend.
@Suite("CurlBackend with several threads", .timeLimit(.minutes(5)), .tags(.realServer))
struct CurlThreadsTests {
    @Test func eachHostIsServedByTheOneThreadItMapsToAndEveryThreadEndsWithTheBackend() async throws {
        // Two servers, each under two names: four hosts as the backend tells them apart. A path each
        // server answers with 200: httpbin's echo, the cache server's counter.
        let servers = [(try HTTPBin.url(), "anything"), (try CacheServer.url(), "count")]
        var hosts: [(url: URL, path: String)] = []
        for (server, path) in servers {
            for name in ["127.0.0.1", "localhost"] {
                var parts = try #require(URLComponents(url: server, resolvingAgainstBaseURL: false))
                parts.host = name
                parts.path = ""
                hosts.append((try #require(parts.url), path))
            }
        }
        var backend: CurlBackend? = try CurlBackend(maxConnectionsPerHost: 2, threads: 3)
        let names = try #require(backend?.threadNames)
        #expect(names.count == 3)
        #expect(Set(names).count == 3, "each thread has a name of its own: \(names)")
        // A thread names itself as it starts, which may be a moment after the backend is made.
        try await waitUntil(for: 10) { names.allSatisfy { threads(named: $0) == 1 } }
        #expect(names.allSatisfy { threads(named: $0) == 1 }, "one thread per name: \(names)")

        var realms: [ServiceRealm] = []
        for (host, path) in hosts {
            let expected = try #require(backend?.loop(for: host).threadName)
            let realm = uniqueRealm().setBaseURL(host).use(backend!)
            realms.append(realm)
            let answeredOn = CallbackRecorder<String>()
            for index in 0..<6 {
                TestEndpoint(realm, "\(path)/threads-\(index)").request { _ in
                    answeredOn.record(currentThreadName())
                }
            }
            try await waitUntil(for: 20) { answeredOn.calls.count == 6 }
            #expect(answeredOn.calls.count == 6, "every request to \(host) was answered")
            #expect(
                Set(answeredOn.calls) == [String(expected.prefix(15))],
                "\(host)'s answers all come from the thread it maps to")
            // Awaited requests take the same thread's connections (or the caller's own turn at them).
            #expect(try await TestEndpoint(realm, "\(path)/threads-awaited").request().statusCode == 200)
        }
        try await waitUntil(for: 30) { backend?.transfersInFlight == 0 }
        #expect(backend?.transfersInFlight == 0)

        // Realms outlive their tests (they are named): they let go of the backend.
        for realm in realms { realm.use(.stub) }
        backend = nil
        try await waitUntil(every: 50_000_000, for: 10) { names.allSatisfy { threads(named: $0) == 0 } }
        #expect(names.allSatisfy { threads(named: $0) == 0 }, "every thread of the backend ended with it")
    }

    @Test func hostsSpreadEvenlyOverTheThreadsAndTheSpreadIgnoresTheCaseOfTheirNames() throws {
        var counts = [0, 0, 0, 0]
        for index in 0..<2_000 {
            let url = try #require(URL(string: "https://api-\(index).example.com:8443/v1"))
            counts[CurlBackend.hostKey(of: url) % 4] += 1
        }
        #expect(counts.allSatisfy { (400...600).contains($0) }, "2,000 hosts over 4 threads: \(counts)")

        let lower = CurlBackend.hostKey(of: URL(string: "https://api.example.com/a"))
        #expect(lower == CurlBackend.hostKey(of: URL(string: "https://API.Example.COM/b?c=d")))
        #expect(lower != CurlBackend.hostKey(of: URL(string: "http://api.example.com/a")))
        #expect(lower != CurlBackend.hostKey(of: URL(string: "https://api.example.com:444/a")))
    }

    @Test func aThreadCountOutsideOneToSixtyFourIsBroughtInsideIt() throws {
        #expect(try CurlBackend(threads: 0).threadNames.count == 1)
        #expect(try CurlBackend(threads: -3).threadNames.count == 1)
        #expect(try CurlBackend(threads: 1_000).threadNames.count == 64)
    }
}
