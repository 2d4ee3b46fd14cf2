import Foundation
import LegacyNetworking
import SwiftyService
import SwiftyServiceCurl
import SwiftyServiceTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A realm's TLS policy on every backend, against tls_server.py: a backend either carries the policy out
/// (CurlBackend: all of it) or refuses the request before anything is sent (URLSession on Linux, the
/// legacy example). Each test runs on every ``ConformingBackend``; `sendUnderPolicy` checks the refusal for
/// backends that cannot, so a new backend is held to one or the other.
@Suite("TLS policies", .timeLimit(.minutes(5)), .tags(.realServer))
struct TLSPolicyConformanceTests {
    @Test func everyShippedBackendSaysWhatItDoesWithAPolicy() throws {
        #expect(try CurlBackend().supportedTLSFeatures == .all, "Debian's libcurl is built on OpenSSL")
        #if canImport(FoundationNetworking)
        // FoundationNetworking offers no hook for roots, pins or client certificates.
        #expect(URLSessionBackend().supportedTLSFeatures == [])
        #endif
        // The legacy example says nothing, and so fails closed.
        #expect(LegacyBackend(client: LegacyHTTPClient()).supportedTLSFeatures == [])
        // A stub connects to nothing, so it has nothing to refuse; a recorder is its backend's.
        #expect(StubBackend().supportedTLSFeatures == .all)
        let cassette = FileManager.default.temporaryDirectory.appendingPathComponent("\(UUID()).json")
        #expect(try RecordingBackend(recording: URLSessionBackend(), to: cassette).supportedTLSFeatures == [])
        #expect(try RecordingBackend(recording: CurlBackend(), to: cassette).supportedTLSFeatures == .all)
    }

    @Test(arguments: ConformingBackend.allCases)
    func aPrivateCATrustedByThePolicyIsTrusted(_ kind: ConformingBackend) async throws {
        // The "valid" listener's leaf is signed by the test CA: refused without the policy, 200 with it.
        let without = try await sendUnderPolicy(nil, to: "TLS_VALID_URL", on: kind)
        #expect(without?.result.error?.tlsFailure == .unknownIssuer, "\(kind)")
        guard
            let with = try await sendUnderPolicy(try TLSFixtures.trustingCA(), to: "TLS_VALID_URL", on: kind)
        else { return }
        #expect(with.result.statusCode == 200, "\(kind): \(with.result)")
        #expect(with.arrived)
    }

    @Test(arguments: ConformingBackend.allCases)
    func rootsReplacingTheSystemsStillTrustThePrivateCAAndNothingElse(_ kind: ConformingBackend) async throws
    {
        let onlyCA = try TLSFixtures.trustingCA { $0.trustsSystemRoots = false }
        if let result = try await sendUnderPolicy(onlyCA, to: "TLS_VALID_URL", on: kind) {
            #expect(result.result.statusCode == 200, "\(kind): \(result.result)")
        }
        // Only an unrelated certificate trusted: the CA-signed leaf has no root.
        let unrelated = TLSPolicy(
            trustedRoots: try TLSCertificate.certificates(contentsOf: try caSibling("self-signed.pem")),
            trustsSystemRoots: false)
        if let result = try await sendUnderPolicy(unrelated, to: "TLS_VALID_URL", on: kind) {
            #expect(result.result.error?.tlsFailure == .unknownIssuer, "\(kind): \(result.result)")
            #expect(!result.arrived)
        }
    }

    @Test(arguments: ConformingBackend.allCases)
    func theRightPinConnects(_ kind: ConformingBackend) async throws {
        let policy = try TLSFixtures.trustingCA { $0.pinnedPublicKeys = [try TLSFixtures.validPin()] }
        guard let sent = try await sendUnderPolicy(policy, to: "TLS_VALID_URL", on: kind) else { return }
        #expect(sent.result.statusCode == 200, "\(kind): \(sent.result)")
    }

    @Test(arguments: ConformingBackend.allCases)
    func aWrongPinFailsTheHandshakeBeforeAnyRequestByteAndIsNotRetried(_ kind: ConformingBackend)
        async throws
    {
        let policy = try TLSFixtures.trustingCA { $0.pinnedPublicKeys = [try TLSFixtures.otherPin()] }
        guard
            let sent = try await sendUnderPolicy(
                policy, to: "TLS_VALID_URL", on: kind, realm: { $0.addMiddleware(.retry(.maxRetries(3))) })
        else { return }
        let error = try #require(sent.result.error, "\(kind)")
        #expect(error.tlsFailure == .publicKeyPinMismatch, "\(kind): \(error)")
        #expect((error.underlyingError as? URLError)?.code == .serverCertificateUntrusted)
        #expect(error.description.contains("pinned public key"), "\(error)")
        #expect(error.attempts == 1, "a pin mismatch is never retried")
        #expect(!sent.arrived, "\(kind): the server's log shows the request; the pin is checked too late")
    }

    @Test(arguments: ConformingBackend.allCases)
    func twoPinsOneMatchingConnectsForKeyRotation(_ kind: ConformingBackend) async throws {
        let policy = try TLSFixtures.trustingCA {
            $0.pinnedPublicKeys = [try TLSFixtures.otherPin(), try TLSFixtures.validPin()]
        }
        guard let sent = try await sendUnderPolicy(policy, to: "TLS_VALID_URL", on: kind) else { return }
        #expect(sent.result.statusCode == 200, "\(kind): \(sent.result)")
    }

    @Test(arguments: ConformingBackend.allCases)
    func aPEMClientIdentityPassesMutualTLSAndItsAbsenceIsTheClientCertificateError(_ kind: ConformingBackend)
        async throws
    {
        if let without = try await sendUnderPolicy(
            try TLSFixtures.trustingCA(), to: "TLS_CLIENT_CERT_REQUIRED_URL", on: kind)
        {
            #expect(
                without.result.error?.tlsFailure == .clientCertificateRequired, "\(kind): \(without.result)")
            #expect(
                (without.result.error?.underlyingError as? URLError)?.code == .clientCertificateRequired)
            #expect(!without.arrived)
        }
        let policy = try TLSFixtures.trustingCA { $0.clientIdentity = try TLSFixtures.pemIdentity() }
        guard let with = try await sendUnderPolicy(policy, to: "TLS_CLIENT_CERT_REQUIRED_URL", on: kind)
        else { return }
        #expect(with.result.statusCode == 200, "\(kind): \(with.result)")
        #expect(with.arrived)
    }

    @Test(arguments: ConformingBackend.allCases)
    func anEncryptedPEMKeyWithItsPassphrasePassesMutualTLS(_ kind: ConformingBackend) async throws {
        let identity = try ClientIdentity.pem(
            certificateFile: try TLSFixtures.file("TLS_CLIENT_CERT"),
            privateKeyFile: try TLSFixtures.file("TLS_CLIENT_ENCRYPTED_KEY"),
            passphrase: try TLSFixtures.value("TLS_CLIENT_P12_PASSPHRASE"))
        let policy = try TLSFixtures.trustingCA { $0.clientIdentity = identity }
        guard let with = try await sendUnderPolicy(policy, to: "TLS_CLIENT_CERT_REQUIRED_URL", on: kind)
        else { return }
        #expect(with.result.statusCode == 200, "\(kind): \(with.result)")
    }

    @Test(arguments: ConformingBackend.allCases)
    func aPKCS12ClientIdentityPassesMutualTLS(_ kind: ConformingBackend) async throws {
        let policy = try TLSFixtures.trustingCA { $0.clientIdentity = try TLSFixtures.pkcs12Identity() }
        guard let with = try await sendUnderPolicy(policy, to: "TLS_CLIENT_CERT_REQUIRED_URL", on: kind)
        else { return }
        #expect(with.result.statusCode == 200, "\(kind): \(with.result)")
    }

    @Test(arguments: ConformingBackend.allCases)
    func aWrongPKCS12PassphraseFailsWithoutSayingThePassphrase(_ kind: ConformingBackend) async throws {
        let wrong = "not-the-passphrase-\(UUID().uuidString)"
        let policy = try TLSFixtures.trustingCA {
            $0.clientIdentity = try TLSFixtures.pkcs12Identity(passphrase: wrong)
        }
        guard let sent = try await sendUnderPolicy(policy, to: "TLS_CLIENT_CERT_REQUIRED_URL", on: kind)
        else { return }
        let error = try #require(sent.result.error, "\(kind)")
        #expect(error.tlsFailure == .handshakeFailed, "\(kind): \(error)")
        #expect(error.description.localizedCaseInsensitiveContains("PKCS12"), "\(error)")
        #expect(!error.description.contains(wrong))
        #expect(!sent.arrived)
    }

    @Test(arguments: ConformingBackend.allCases)
    func expiredAndWrongHostCertificatesAreRefusedWithTheCATrusted(_ kind: ConformingBackend) async throws {
        let policy = try TLSFixtures.trustingCA()
        if let expired = try await sendUnderPolicy(policy, to: "TLS_EXPIRED_URL", on: kind) {
            #expect(expired.result.error?.tlsFailure == .certificateOutOfDate, "\(kind): \(expired.result)")
            #expect(!expired.arrived)
        }
        if let wrongHost = try await sendUnderPolicy(policy, to: "TLS_WRONG_HOST_URL", on: kind) {
            #expect(
                wrongHost.result.error?.tlsFailure == .untrustedCertificate, "\(kind): \(wrongHost.result)")
            #expect(!wrongHost.arrived)
        }
    }

    @Test(arguments: ConformingBackend.allCases)
    func aMinimumOfTLS13RefusesATLS12OnlyServer(_ kind: ConformingBackend) async throws {
        let tls13 = try TLSFixtures.trustingCA { $0.minimumVersion = .tls1_3 }
        if let refused = try await sendUnderPolicy(tls13, to: "TLS_12_ONLY_URL", on: kind) {
            #expect(refused.result.error?.tlsFailure == .handshakeFailed, "\(kind): \(refused.result)")
            #expect(!refused.arrived)
        }
        // The same server under a minimum of 1.2: the version, not the certificate, was the refusal.
        let tls12 = try TLSFixtures.trustingCA { $0.minimumVersion = .tls1_2 }
        if let accepted = try await sendUnderPolicy(tls12, to: "TLS_12_ONLY_URL", on: kind) {
            #expect(accepted.result.statusCode == 200, "\(kind): \(accepted.result)")
        }
    }

    /// A file beside the test CA (scripts/tls-fixtures writes them all to one directory).
    func caSibling(_ name: String) throws -> URL {
        try TLSFixtures.file("TLS_CA_FILE").deletingLastPathComponent().appendingPathComponent(name)
    }
}

extension Result where Success == Response, Failure == ServiceError {
    /// The status of the response, or `nil` for a failure.
    var statusCode: Int? { (try? get())?.statusCode }
    /// The failure, or `nil` for a response.
    var error: ServiceError? {
        if case let .failure(error) = self { return error }
        return nil
    }
}
