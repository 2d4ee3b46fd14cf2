import Foundation
import SwiftyService
import SwiftyServiceCurl
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A one-off override changes the TLS policy of one request: another policy, or `setTLSPolicy(nil)` for the
/// system's rules, as documented — not "whatever the realm says". Against tls_server.py's "valid" listener,
/// whose leaf only the test CA vouches for.
@Suite("TLS policy in an override", .timeLimit(.minutes(5)), .tags(.realServer))
struct TLSPolicyOverrideTests {
    func realm(trustingCA: Bool) throws -> ServiceRealm {
        let realm = uniqueRealm("tls-override").setBaseURL(try TLSServers.url("TLS_VALID_URL"))
            .use(try CurlBackend()).setTimeout(10)
        if trustingCA { realm.setTLSPolicy(try TLSFixtures.trustingCA()) }
        return realm
    }

    @Test func setTLSPolicyNilInAnOverrideSendsUnderTheSystemsRules() async throws {
        let realm = try realm(trustingCA: true)
        #expect(try await TestEndpoint(realm, "with-policy").request().statusCode == 200)
        let error = await #expect(throws: ServiceError.self) {
            try await TestEndpoint(realm, "system-rules").override { $0.setTLSPolicy(nil) }.request()
        }
        #expect(
            error?.tlsFailure == .unknownIssuer,
            "the system does not trust the test CA: \(String(describing: error))")
        // The override was for that request alone.
        #expect(try await TestEndpoint(realm, "with-policy-again").request().statusCode == 200)
    }

    @Test func aPolicyInAnOverrideAppliesToThatRequestOnly() async throws {
        let realm = try realm(trustingCA: false)
        let policy = try TLSFixtures.trustingCA()
        let response = try await TestEndpoint(realm, "one-off").override { $0.setTLSPolicy(policy) }.request()
        #expect(response.statusCode == 200)
        let error = await #expect(throws: ServiceError.self) {
            try await TestEndpoint(realm, "realm-rules").request()
        }
        #expect(error?.tlsFailure == .unknownIssuer)
    }

    @Test func aBackendSeesNoPolicyUnderAnOverrideToTheSystemsRules() async throws {
        let stub = StubBackend()
        let realm = uniqueRealm("tls-override").setBaseURL(URL(string: "https://api.example.com")!).use(stub)
            .setTLSPolicy(try TLSFixtures.trustingCA())
        _ = try await TestEndpoint(realm, "a").request()
        _ = try await TestEndpoint(realm, "b").override { $0.setTLSPolicy(nil) }.request()
        #expect(stub.received.map { $0.tlsPolicy == nil } == [false, true])
        #expect(realm.configuration.tlsPolicy != nil)
        var overrides = RealmConfiguration()
        overrides.setTLSPolicy(nil)
        #expect(overrides.tlsPolicy == nil, "read back, the system's rules are no policy")
    }
}
