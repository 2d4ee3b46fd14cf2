import Foundation
import SwiftyService
import SwiftyServiceCurl
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A server that requires a client certificate and closes the connection at once after its alert
/// (tls_server.py's `client-cert-abrupt` listeners): the reset of the unread request may overtake the alert,
/// and libcurl then reported a lost connection (-1005) that `.retry()` sent twice more. The refusal must be
/// the client-certificate error every time, after one handshake.
///
/// Serialized, and the only user of those listeners: the handshakes are counted in the server's log.
@Suite("A refused client certificate", .serialized, .timeLimit(.minutes(5)), .tags(.realServer))
struct ClientCertificateRefusalTests {
    static let runs = 50

    /// How one request to a listener went: the error's kind and code, and how many attempts it made.
    struct Outcome: Hashable, CustomStringConvertible {
        let kind: TLSFailureKind?
        let code: Int?
        let attempts: Int
        var description: String {
            "\(kind.map { "\($0)" } ?? "no TLS failure") (\(code ?? 0)), \(attempts) attempt(s)"
        }
    }

    /// `runs` GETs to the listener in `variable` from a realm trusting the test CA with `identity`, and how
    /// many handshakes the server saw meanwhile.
    func refusals(
        at variable: String, listener: String, identity: ClientIdentity?, retrying: Bool,
        backend: any NetworkBackend
    ) async throws -> (outcomes: [Outcome: Int], handshakes: Int, refusedHandshakes: Int) {
        let policy = try TLSFixtures.trustingCA { $0.clientIdentity = identity }
        let realm = uniqueRealm("refusal").setBaseURL(try TLSServers.url(variable)).use(backend).setTimeout(
            10
        )
        .setTLSPolicy(policy)
        if retrying {
            // The default policy retries lost connections; no waits, so that a retry costs no time.
            var policy = RetryPolicy.default
            policy.clock = RetryClock(sleep: { _ in }, now: { Date() }, random: { $0.lowerBound })
            realm.addMiddleware(.retry(policy))
        }
        let before = try ServerLogCount(listener: listener)
        var outcomes: [Outcome: Int] = [:]
        for run in 0..<Self.runs {
            do {
                let response = try await TestEndpoint(realm, "refusal-\(run)").request()
                Issue.record("the server answered \(response.statusCode)")
            } catch let error as ServiceError {
                let code = (error.underlyingError as? URLError)?.code.rawValue
                outcomes[Outcome(kind: error.tlsFailure, code: code, attempts: error.attempts), default: 0] +=
                    1
            }
        }
        // Every attempt's connection was accepted before its outcome came back; the settle is for log lines
        // still on their way to the file.
        try await Task.sleep(for: .milliseconds(300))
        let after = try ServerLogCount(listener: listener)
        return (outcomes, after.accepted - before.accepted, after.refused - before.refused)
    }

    @Test(arguments: [false, true])
    func withoutAnIdentityEveryRefusalIsClientCertificateRequiredAfterOneHandshake(retrying: Bool)
        async throws
    {
        let (outcomes, handshakes, refused) = try await refusals(
            at: "TLS_CLIENT_CERT_ABRUPT_URL", listener: "client-cert-abrupt", identity: nil,
            retrying: retrying,
            backend: try CurlBackend())
        #expect(outcomes == [Outcome(kind: .clientCertificateRequired, code: -1206, attempts: 1): Self.runs])
        #expect(handshakes == Self.runs, "one handshake per request")
        #expect(refused == Self.runs)
    }

    @Test(arguments: [false, true])
    func anUnrelatedIdentityIsClientCertificateRejectedEveryTimeAfterOneHandshake(retrying: Bool) async throws
    {
        let (outcomes, handshakes, refused) = try await refusals(
            at: "TLS_CLIENT_CERT_ABRUPT_URL", listener: "client-cert-abrupt", identity: try Self.stranger(),
            retrying: retrying, backend: try CurlBackend())
        #expect(outcomes == [Outcome(kind: .clientCertificateRejected, code: -1205, attempts: 1): Self.runs])
        #expect(handshakes == Self.runs, "one handshake per request")
        #expect(refused == Self.runs)
    }

    @Test(arguments: [false, true])
    func overTLS12TheMissingCertificateIsRequiredAndTheUnrelatedOneRejected(retrying: Bool) async throws {
        // TLS 1.2 has no "certificate required" alert: the server says "handshake failure", which read as any
        // other failed handshake (-1200) until the handshake itself was looked at.
        let missing = try await refusals(
            at: "TLS_CLIENT_CERT_ABRUPT_12_URL", listener: "client-cert-abrupt-tls12", identity: nil,
            retrying: retrying, backend: try CurlBackend())
        #expect(
            missing.outcomes == [
                Outcome(kind: .clientCertificateRequired, code: -1206, attempts: 1): Self.runs
            ])
        #expect(missing.handshakes == Self.runs)
        let unrelated = try await refusals(
            at: "TLS_CLIENT_CERT_ABRUPT_12_URL", listener: "client-cert-abrupt-tls12",
            identity: try Self.stranger(),
            retrying: retrying, backend: try CurlBackend())
        #expect(
            unrelated.outcomes == [
                Outcome(kind: .clientCertificateRejected, code: -1205, attempts: 1): Self.runs
            ])
        #expect(unrelated.handshakes == Self.runs)
    }

    @Test func theRightIdentityStillPassesAndReusesItsConnection() async throws {
        // The watch on the handshake must not turn an accepted certificate into a refusal.
        let policy = try TLSFixtures.trustingCA { $0.clientIdentity = try TLSFixtures.pemIdentity() }
        let realm = uniqueRealm("accepted").setBaseURL(try TLSServers.url("TLS_CLIENT_CERT_ABRUPT_URL"))
            .use(try CurlBackend()).setTimeout(10).setTLSPolicy(policy)
        let before = try ServerLogCount(listener: "client-cert-abrupt")
        for run in 0..<5 {
            #expect(try await TestEndpoint(realm, "accepted-\(run)").request().statusCode == 200)
        }
        try await Task.sleep(for: .milliseconds(300))
        let after = try ServerLogCount(listener: "client-cert-abrupt")
        #expect(after.accepted - before.accepted == 1, "one connection, reused")
        #expect(after.refused == before.refused)
    }

    @Test(arguments: ConformingBackend.allCases.filter { $0 != .curl })
    func aBackendThatCannotPresentAnIdentityRefusesThePolicyUnsent(_ kind: ConformingBackend) async throws {
        // Only CurlBackend carries out a client identity here; the others refuse the policy before connecting
        // (sendUnderPolicy checks that), so there is no refusal of theirs to classify.
        let policy = try TLSFixtures.trustingCA { $0.clientIdentity = try Self.stranger() }
        let sent = try await sendUnderPolicy(policy, to: "TLS_CLIENT_CERT_ABRUPT_URL", on: kind)
        #expect(sent == nil, "\(kind) carries out a client identity: hold it to the 50-run tests above")
    }

    /// The self-signed client certificate scripts/tls-fixtures makes, which no listener trusts.
    static func stranger() throws -> ClientIdentity {
        try .pem(
            certificateFile: try TLSFixtures.file("TLS_STRANGER_CERT"),
            privateKeyFile: try TLSFixtures.file("TLS_STRANGER_KEY"))
    }
}

/// How many connections one listener of tls_server.py accepted, and how many handshakes it refused, so far.
struct ServerLogCount {
    let accepted: Int
    let refused: Int

    init(listener: String) throws {
        let text = try String(contentsOf: try TLSFixtures.file("TLS_SERVER_LOG"), encoding: .utf8)
        var accepted = 0
        var refused = 0
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count == 3, fields[0] == listener else { continue }
            if fields[2] == "accepted" { accepted += 1 }
            if fields[2] == "refused" { refused += 1 }
        }
        self.accepted = accepted
        self.refused = refused
    }
}
