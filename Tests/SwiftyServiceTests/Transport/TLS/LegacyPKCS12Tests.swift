import Foundation
import SwiftyService
import SwiftyServiceCurl
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A PKCS#12 bundle as OpenSSL 1.x wrote it (RC2/3DES under a SHA-1 MAC) fails on OpenSSL 3 with the right
/// passphrase; exported again as the Security and TLS article says, it passes. scripts/tls-fixtures makes both
/// with the article's own commands.
@Suite("Legacy PKCS#12", .timeLimit(.minutes(5)), .tags(.realServer))
struct LegacyPKCS12Tests {
    func send(with bundle: String) async throws -> Result<Response, ServiceError> {
        let identity = try ClientIdentity.pkcs12(
            contentsOf: try TLSFixtures.file(bundle),
            passphrase: try TLSFixtures.value("TLS_CLIENT_P12_PASSPHRASE"))
        let realm = uniqueRealm("p12").setBaseURL(try TLSServers.url("TLS_CLIENT_CERT_REQUIRED_URL"))
            .use(try CurlBackend()).setTimeout(10)
            .setTLSPolicy(try TLSFixtures.trustingCA { $0.clientIdentity = identity })
        do {
            return .success(try await TestEndpoint(realm, "p12").request())
        } catch let error as ServiceError {
            return .failure(error)
        }
    }

    @Test func aLegacyBundleFailsWithTheRightPassphraseAsTheTLSArticleSays() async throws {
        let error = try #require(try await send(with: "TLS_CLIENT_LEGACY_P12").error)
        #expect(error.tlsFailure == .handshakeFailed, "\(error)")
        #expect(error.description.contains("could not parse PKCS12 file"), "\(error)")
        #expect(error.description.localizedCaseInsensitiveContains("unsupported"), "\(error)")
    }

    @Test func theSameBundleExportedAgainPasses() async throws {
        #expect(try await send(with: "TLS_CLIENT_REEXPORTED_P12").statusCode == 200)
    }
}
