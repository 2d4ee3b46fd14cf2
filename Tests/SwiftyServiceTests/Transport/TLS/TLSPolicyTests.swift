import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A TLS policy as a value: its inputs checked with errors that name the file, its secrets never shown,
/// and its way to the backend (or its refusal before one is reached). No server needed.
@Suite("TLS policy values")
struct TLSPolicyTests {
    static let privateKey = """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgSECRETKEYMATERIAL
        -----END PRIVATE KEY-----
        """
    /// A DER SEQUENCE: the shape of a certificate, all these checks look at.
    static let der = Data([0x30, 0x03, 0x02, 0x01, 0x00])
    static var certificatePEM: String {
        "-----BEGIN CERTIFICATE-----\n\(der.base64EncodedString())\n-----END CERTIFICATE-----\n"
    }

    @Test func descriptionsAndDumpsNeverShowTheKeyOrThePassphrase() throws {
        let passphrase = "hunter2-passphrase"
        for identity in [
            try ClientIdentity.pem(
                certificate: Self.certificatePEM, privateKey: Self.privateKey, passphrase: passphrase),
            ClientIdentity.pkcs12(Data("PKCS12SECRETBYTES".utf8), passphrase: passphrase),
        ] {
            let policy = TLSPolicy(clientIdentity: identity, minimumVersion: .tls1_3)
            var dumped = ""
            dump(policy, to: &dumped)
            var dumpedIdentity = ""
            dump(identity, to: &dumpedIdentity)
            for text in [
                policy.description, policy.debugDescription, String(reflecting: policy), "\(policy)", dumped,
                identity.description, String(reflecting: identity), dumpedIdentity,
            ] {
                #expect(!text.contains(passphrase), "\(text)")
                #expect(!text.contains("SECRETKEYMATERIAL") && !text.contains("PKCS12SECRET"), "\(text)")
                #expect(!text.contains(Data("PKCS12SECRETBYTES".utf8).base64EncodedString()), "\(text)")
            }
            #expect(policy.description.contains("<redacted>"))
            #expect(policy.description.contains("TLS 1.3 or later"))
        }
    }

    @Test func pinsAreBase64OfThirtyTwoBytesWithOrWithoutLibcurlsPrefix() throws {
        let digest = Data(repeating: 7, count: 32).base64EncodedString()
        #expect(try PublicKeyPin(sha256: digest).base64 == digest)
        #expect(try PublicKeyPin(sha256: "sha256//\(digest)") == PublicKeyPin(sha256: digest))
        #expect(try PublicKeyPin(sha256: digest).description == "sha256//\(digest)")
        for bad in ["", "not base64!", Data(repeating: 7, count: 20).base64EncodedString()] {
            let error = #expect(throws: TLSPolicyError.self) { try PublicKeyPin(sha256: bad) }
            #expect(error?.description.contains("32-byte SHA-256") == true)
        }
    }

    @Test func certificateInputsAreCheckedAndFilesNamedInTheirErrors() throws {
        #expect(try TLSCertificate.certificates(inPEM: Self.certificatePEM + Self.certificatePEM).count == 2)
        #expect(try TLSCertificate(der: Self.der).pem == Self.certificatePEM)

        let missing = URL(fileURLWithPath: "/nonexistent/\(UUID().uuidString)/ca.pem")
        let unreadable = #expect(throws: TLSPolicyError.self) {
            try TLSCertificate.certificates(contentsOf: missing)
        }
        #expect(unreadable?.description.contains(missing.path) == true)

        let notACertificate = FileManager.default.temporaryDirectory.appendingPathComponent("\(UUID()).pem")
        try Data("hello".utf8).write(to: notACertificate)
        defer { try? FileManager.default.removeItem(at: notACertificate) }
        let garbage = #expect(throws: TLSPolicyError.self) {
            try TLSCertificate.certificates(contentsOf: notACertificate)
        }
        #expect(garbage?.description.contains(notACertificate.path) == true)
        #expect(garbage?.description.contains("DER") == true)

        #expect(throws: TLSPolicyError.self) { try TLSCertificate.certificates(inPEM: "no blocks") }
        let noKey = #expect(throws: TLSPolicyError.self) {
            try ClientIdentity.pem(certificate: Self.certificatePEM, privateKey: "not a key")
        }
        #expect(noKey?.description.contains("PRIVATE KEY") == true)
    }

    @Test func theKeyAPinHashesIsFoundInTheCertificateAsOpenSSLPrintsIt() throws {
        // What URLSession on Apple platforms hashes to check pins (CryptoKit does the hash there); here, the
        // bytes against `openssl x509 -pubkey | openssl pkey -pubin -outform der` from scripts/tls-fixtures.
        let directory = try TLSFixtures.file("TLS_CA_FILE").deletingLastPathComponent()
        let leaf = try #require(
            try TLSCertificate.certificates(contentsOf: directory.appendingPathComponent("valid.pem")).first)
        let expected = try #require(Data(base64Encoded: try TLSFixtures.value("TLS_VALID_SPKI")))
        #expect(leaf.subjectPublicKeyInfo == expected)
        #expect(try TLSCertificate(der: Self.der).subjectPublicKeyInfo == nil)
    }

    @Test func aPolicyNeedsTheFeaturesItsPartsName() throws {
        #expect(TLSPolicy().requiredFeatures == [])
        let full = TLSPolicy(
            trustedRoots: [try TLSCertificate(der: Self.der)], trustsSystemRoots: false,
            pinnedPublicKeys: [try PublicKeyPin(sha256: Data(count: 32).base64EncodedString())],
            clientIdentity: .pkcs12(Data(), passphrase: ""), minimumVersion: .tls1_2)
        #expect(full.requiredFeatures == TLSFeatures.all.subtracting(.pemIdentity))
        #expect(TLSFeatures.publicKeyPins.description == "public-key pinning")
    }

    @Test func aStubTakesAPolicyAndShowsItToTestsWithoutItsSecrets() async throws {
        let stub = StubBackend()
        let policy = TLSPolicy(
            clientIdentity: .pkcs12(Data("PKCS12SECRETBYTES".utf8), passphrase: "hunter2-passphrase"),
            minimumVersion: .tls1_3)
        let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!).use(stub)
            .setTLSPolicy(policy)
        #expect(realm.configuration.tlsPolicy == policy)
        _ = try await TestEndpoint(realm, "x").request()
        #expect(stub.received.map(\.tlsPolicy) == [policy])
        // What a test or a log might print of the request the backend got.
        let request = try #require(stub.received.first)
        var dumped = ""
        dump(request, to: &dumped)
        for text in [String(describing: request), String(reflecting: request), dumped] {
            #expect(!text.contains("hunter2-passphrase"), "\(text)")
            #expect(!text.contains(Data("PKCS12SECRETBYTES".utf8).base64EncodedString()), "\(text)")
        }
    }

    @Test func aBackendThatSaysNothingRefusesAPolicyBeforeSendingWithOrWithoutMiddleware() async throws {
        let backend = CountingBackend()
        let policy = TLSPolicy(pinnedPublicKeys: [
            try PublicKeyPin(sha256: Data(count: 32).base64EncodedString())
        ])
        for withMiddleware in [false, true] {
            let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com/v1")!).use(backend)
                .setTLSPolicy(policy)
            if withMiddleware { realm.addMiddleware(.retry()) }
            let error = await #expect(throws: ServiceError.self) {
                try await TestEndpoint(realm, "pinned").request()
            }
            guard case let .invalidRequest(reason, _, url)? = error else {
                Issue.record("expected .invalidRequest, got \(String(describing: error))")
                continue
            }
            #expect(reason == .unsupportedTLSPolicy(backend: "CountingBackend", missing: .publicKeyPins))
            #expect(url == "https://api.example.com/v1/pinned")
            #expect(
                error?.description.contains("CountingBackend cannot do") == true,
                "\(String(describing: error))")
            #expect(error?.description.contains("public-key pinning") == true)
        }
        #expect(backend.sends.value == 0)
        // Without the policy the same backend is used as always.
        let plain = uniqueRealm().setBaseURL(URL(string: "https://api.example.com/v1")!).use(backend)
        _ = try? await TestEndpoint(plain, "x").request()
        #expect(backend.sends.value == 1)
    }
}

/// A backend that declares no TLS feature (the default) and counts what it is asked to send.
private final class CountingBackend: NetworkBackend {
    let sends = Locked(0)

    func send(
        _ request: BackendRequest, completion: @escaping @Sendable (Result<Response, any Error>) -> Void
    ) -> BackendTask {
        sends.withLock { $0 += 1 }
        completion(.failure(URLError(.cannotConnectToHost)))
        return .uncancellable
    }
}

/// A value behind a lock.
private final class Locked<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value { lock.withLock { stored } }
    func withLock<T>(_ body: (inout Value) -> T) -> T { lock.withLock { body(&stored) } }
}
