import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A response head of tens of thousands of fields is refused on every backend, and on `CurlBackend` it
/// costs the backend's other requests nothing.
@Suite("Hostile response heads", .timeLimit(.minutes(3)))
struct HostileHeadConformanceTests {
    /// Times `count` GETs of httpbin's /get, one after the other, on `realm`; `pause` seconds before each.
    func timeGETs(_ count: Int, on realm: ServiceRealm, pause: Double = 0) async throws -> [Double] {
        var times: [Double] = []
        for _ in 0..<count {
            if pause > 0 { try await Task.sleep(nanoseconds: UInt64(pause * 1e9)) }
            let start = ContinuousClock.now
            #expect(try await TestEndpoint(realm, "get").request().statusCode == 200)
            times.append(seconds(since: start))
        }
        return times
    }

    /// Sends /many-headers?count=35000 on `backend`, and meanwhile GETs of httpbin's /get on the same
    /// backend; the refusal, and the slowest GET's time next to the slowest of the same GETs before.
    func flood(_ backend: any NetworkBackend, fields: Int = 35_000) async throws
        -> (ServiceError?, during: Double, before: Double)
    {
        let neighbour = try HTTPBin.realm(backend: backend)
        let hostile = uniqueRealm().setBaseURL(try MisbehavingServer.url()).use(backend).setTimeout(60)
        let before = try await timeGETs(5, on: neighbour).max() ?? 0
        let flood = Task { () -> ServiceError? in
            do {
                _ = try await TestEndpoint(hostile, "many-headers", parameters: ["count": fields]).request()
                return nil
            } catch {
                return error as? ServiceError
            }
        }
        // Spread over the first half second: the head arrives within milliseconds, and a backend that
        // chokes on it stalls for seconds, so some of these land while it does.
        let during = try await timeGETs(5, on: neighbour, pause: 0.1).max() ?? 0
        return (await flood.value, during, before)
    }

    func expectRefusal(_ error: ServiceError?, _ kind: ConformingBackend) {
        guard case let .transport(_, underlying, _)? = error else {
            Issue.record("\(kind): expected a transport error, got \(String(describing: error))")
            return
        }
        #expect((underlying as? ResponseHeadTooLarge)?.limit == .fields(1_000), "\(kind): \(underlying)")
    }

    @Test func aHugeHeadIsRefusedOnCurlWithoutHoldingUpTheBackendsOtherRequests() async throws {
        // /many-headers sends 35,000 fields at once (280 KB, under libcurl's own 300 KiB bound). Every
        // transfer of a CurlBackend runs on its one thread: reading such a head in quadratic time held up
        // every other request of the backend for 24 s (idle machine) to 700 s (loaded, debug build).
        try await measuringPromptness {
            let (error, during, before) = try await flood(try ConformingBackend.curl.make())
            expectRefusal(error, .curl)
            // Measured: within a few ms of the GETs before. The slack is for a loaded 2-core machine.
            #expect(during < before + 1.5, "a GET took \(during) s beside the flood, \(before) s before it")
        }
    }

    @Test(arguments: [ConformingBackend.urlSession, .legacy])
    func aHugeHeadIsRefusedOnURLSession(_ kind: ConformingBackend) async throws {
        // /many-headers sends 2,000 fields at once. FoundationNetworking parses a whole head before any
        // delegate sees it, in quadratic time (it copies the list of lines for each line): 35,000 fields
        // take it 7–13 s of CPU, during which every URLSession request of the process waits, so this asks
        // for 2,000 — past the limit all the same. Nothing on our side can stop it reading sooner, so only
        // the refusal is guaranteed here; the GETs' times are measured, not judged.
        try await underLoad {
            let (error, during, before) = try await flood(try kind.make(), fields: 2_000)
            expectRefusal(error, kind)
            print("\(kind): the slowest GET took \(during) s beside the flood, \(before) s before it")
        }
    }
}
