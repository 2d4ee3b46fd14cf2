import Foundation
import SwiftyService
import SwiftyServiceCurl
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// libcurl keeps connections open for the next request to the same host. Under TLS policies, a connection
/// may only be reused by a request under the same policy: a request without the CA, or with a pin the
/// server does not match, must never ride on a connection another realm's policy accepted. Read from
/// tls_server.py's log, which numbers each listener's connections.
@Suite("CurlBackend connection reuse under TLS policies", .timeLimit(.minutes(5)), .tags(.realServer))
struct CurlTLSConnectionReuseTests {
    @Test func connectionsAreReusedUnderTheSamePolicyOnlyAndNeverCarryAnotherPolicysRequest() async throws {
        let backend = try CurlBackend()
        let url = try TLSServers.url("TLS_VALID_URL")
        func realm(_ policy: TLSPolicy?) -> ServiceRealm {
            uniqueRealm("reuse").setBaseURL(url).use(backend).setTimeout(10).setTLSPolicy(policy)
        }
        let caOnly = try TLSFixtures.trustingCA()
        let trusting = realm(caOnly)
        let trustingToo = realm(caOnly)
        let pinned = realm(try TLSFixtures.trustingCA { $0.pinnedPublicKeys = [try TLSFixtures.validPin()] })
        let wronglyPinned = realm(
            try TLSFixtures.trustingCA { $0.pinnedPublicKeys = [try TLSFixtures.otherPin()] })
        let withoutPolicy = realm(nil)

        // One at a time, so that each finds the previous one's connection idle.
        var paths: [String: String] = [:]
        func get(_ realm: ServiceRealm, _ label: String) async -> Result<Response, ServiceError> {
            let path = uniqueTLSPath(label)
            paths[label] = path
            do {
                return .success(try await TestEndpoint(realm, path).request())
            } catch let error as ServiceError {
                return .failure(error)
            } catch {
                Issue.record("\(error)")
                return .failure(.cancelled(URLRequest(url: url)))
            }
        }
        #expect(await get(trusting, "ca-1").statusCode == 200)
        #expect(await get(trusting, "ca-2").statusCode == 200)
        #expect(await get(withoutPolicy, "none").error?.tlsFailure == .unknownIssuer)
        #expect(await get(wronglyPinned, "wrong-pin").error?.tlsFailure == .publicKeyPinMismatch)
        #expect(await get(trustingToo, "ca-other-realm").statusCode == 200)
        #expect(await get(pinned, "pinned-1").statusCode == 200)
        #expect(await get(pinned, "pinned-2").statusCode == 200)
        #expect(await get(trusting, "ca-3").statusCode == 200)

        let arrivals = try await TLSServerLog.arrivals(of: Array(paths.values))
        func connection(_ label: String) -> Int? { paths[label].flatMap { arrivals[$0]?.connection } }
        // The refused requests reached no connection: not the one the CA-trusting realm left open either.
        #expect(connection("none") == nil)
        #expect(connection("wrong-pin") == nil)
        // The same policy (from one realm or another) shares one connection; a different one gets its own.
        let ca = try #require(connection("ca-1"))
        #expect(connection("ca-2") == ca)
        #expect(connection("ca-other-realm") == ca)
        #expect(connection("ca-3") == ca)
        let pin = try #require(connection("pinned-1"))
        #expect(pin != ca)
        #expect(connection("pinned-2") == pin)
    }
}
