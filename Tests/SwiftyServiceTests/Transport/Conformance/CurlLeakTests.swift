import Foundation
import ProcessProbes
import SwiftyService
import SwiftyServiceCurl
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite struct CurlLeakTests {
    @Test func tenThousandRequestsWithRandomCancellationsLeaveNoHandlesThreadsOrSockets() async throws {
        try await underLoad { try await tenThousandRequests() }
    }

    @Test func transfersInFlightCanBeReadFromAnyThreadWhileTransfersRun() async throws {
        try await underLoad {
            let backend = try CurlBackend(maxConnectionsPerHost: 8)
            let realm = try HTTPBin.realm(backend: backend)
            // A reader on a thread of its own, as a metrics exporter would be; it once read the loop thread's own
            // table of transfers while that thread changed it (a crash, or a race under ThreadSanitizer).
            let counts = CallbackRecorder<Int>()
            let stop = CallbackRecorder<Bool>()
            Thread.detachNewThread {
                var highest = 0
                while stop.calls.isEmpty {
                    highest = max(highest, backend.transfersInFlight)
                    usleep(50)
                }
                counts.record(highest)
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        for _ in 0..<100 { _ = try await TestEndpoint(realm, "status/204").request() }
                    }
                }
                try await group.waitForAll()
            }
            stop.record(true)
            let highest = try await counts.first()
            #expect((1...8).contains(highest), "8 callers keep at most 8 transfers in flight; saw \(highest)")
            #expect(backend.transfersInFlight == 0)
        }
    }

    private func tenThousandRequests() async throws {
        // An httpbin of the test's own, so that every socket to its port is this test's; /status/204 is
        // its cheapest answer.
        let server = try await OwnHTTPBin.start()
        defer { Task { try? await server.stop() } }
        let port = try #require(server.url.port)
        // Other suites run curl backends of their own meanwhile: only this backend's thread counts.
        var backend: CurlBackend? = try CurlBackend(maxConnectionsPerHost: 8)
        let threadName = try #require(backend?.threadName)
        let realm = uniqueRealm().setBaseURL(server.url).use(backend!)
        let outcomes = try await withThrowingTaskGroup(of: (Int, Int).self) { group in
            for worker in 0..<16 {
                group.addTask {
                    var (answered, cancelled) = (0, 0)
                    for index in 0..<625 {
                        let request = Task { try await TestEndpoint(realm, "status/204").request() }
                        if (worker + index).isMultiple(of: 7) {
                            try await Task.sleep(nanoseconds: UInt64.random(in: 0...2_000_000))
                            request.cancel()
                        }
                        switch await request.result {
                        case .success: answered += 1
                        case let .failure(error) where (error as? ServiceError)?.kind == .cancelled:
                            cancelled += 1
                        case let .failure(error): throw error
                        }
                    }
                    return (answered, cancelled)
                }
            }
            return try await group.reduce((0, 0)) { ($0.0 + $1.0, $0.1 + $1.1) }
        }
        #expect(outcomes.0 + outcomes.1 == 10_000)
        #expect(outcomes.1 > 0, "some requests were cancelled in flight")
        // A cancelled caller has its answer at once; the loop drops the transfer a moment later.
        try await waitUntil(every: 10_000_000, for: 5) { backend?.transfersInFlight == 0 }
        #expect(backend?.transfersInFlight == 0)
        #expect(openSockets(toPort: port) <= 8, "connections are reused, at most 8 per host")
        #expect(threads(named: threadName) == 1)

        realm.use(.stub)
        backend = nil
        try await waitUntil(every: 50_000_000, for: 5) {
            openSockets(toPort: port) == 0 && threads(named: threadName) == 0
        }
        #expect(openSockets(toPort: port) == 0, "the backend's connections closed with it")
        #expect(threads(named: threadName) == 0, "its thread ended")
    }
}
