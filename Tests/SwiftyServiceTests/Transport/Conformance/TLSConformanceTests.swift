import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The TLS listeners `scripts/test` starts (Tests/Servers/tls_server.py), on certificates that
/// scripts/tls-fixtures makes for the run.
enum TLSServers {
    /// The URL in `variable` (`TLS_SELF_SIGNED_URL`, `TLS_VALID_URL`…).
    static func url(_ variable: String) throws -> URL {
        guard let value = ProcessInfo.processInfo.environment[variable], let url = URL(string: value) else {
            throw SetupError(description: "\(variable) is not set: run the tests with scripts/test")
        }
        return url
    }
}

/// A TLS failure reads the same on every backend: Apple's `URLError` code for the case, the TLS library's
/// reason in the description, and no retry. Without a TLS policy, the servers whose certificates are only
/// wrong for a client that trusts the test CA (expired, wrong host, client certificate required) fail as
/// "unknown issuer"; TLSPolicyConformanceTests trusts the CA and sees their own failures, and
/// TLSFailureTests covers the texts.
@Suite("TLS failures", .timeLimit(.minutes(5)))
struct TLSConformanceTests {
    /// The `URLError` under the transport failure of a GET to `variable`'s server on `kind`.
    func failure(
        at variable: String, _ kind: ConformingBackend, realm configure: (ServiceRealm) -> Void = { _ in }
    )
        async throws -> (URLError?, ServiceError?)
    {
        let realm = uniqueRealm().setBaseURL(try TLSServers.url(variable)).use(try kind.make()).setTimeout(10)
        configure(realm)
        do {
            _ = try await TestEndpoint(realm, "x").request()
            Issue.record("\(kind) \(variable): expected a TLS failure")
            return (nil, nil)
        } catch let error as ServiceError {
            guard case let .transport(_, underlying, _) = error else {
                Issue.record("\(kind) \(variable): expected a transport error, got \(error)")
                return (nil, error)
            }
            return (underlying as? URLError, error)
        }
    }

    @Test(arguments: ConformingBackend.allCases)
    func aSelfSignedCertificateIsUntrustedWithOpenSSLsReason(_ kind: ConformingBackend) async throws {
        // The self-signed listener: libcurl said -1202 with a generic text, URLSession -1 (unknown).
        let (error, serviceError) = try await failure(at: "TLS_SELF_SIGNED_URL", kind)
        #expect(error?.code == .serverCertificateUntrusted, "\(kind): \(String(describing: error))")
        #expect(error?.localizedDescription.contains("self-signed certificate") == true, "\(kind)")
        #expect(serviceError?.description.contains("self-signed certificate") == true, "\(kind)")
    }

    @Test(arguments: ConformingBackend.allCases)
    func aCertificateFromAnUnknownIssuerHasAnUnknownRootWithOpenSSLsReason(_ kind: ConformingBackend)
        async throws
    {
        // The "valid" listener: its leaf is signed by the test CA, which nothing here trusts.
        let (error, serviceError) = try await failure(at: "TLS_VALID_URL", kind)
        #expect(error?.code == .serverCertificateHasUnknownRoot, "\(kind): \(String(describing: error))")
        #expect(
            error?.localizedDescription.contains("unable to get local issuer certificate") == true, "\(kind)")
        #expect(
            serviceError?.description.contains("unable to get local issuer certificate") == true, "\(kind)")
    }

    @Test(arguments: ConformingBackend.allCases)
    func aTLSFailureIsNeverRetried(_ kind: ConformingBackend) async throws {
        // The self-signed listener, under the default retry policy and under one that lists every TLS code
        // (and URLSession's -1) as retryable: the certificate will be refused again, so one attempt.
        let (_, plain) = try await failure(at: "TLS_SELF_SIGNED_URL", kind) { $0.addMiddleware(.retry()) }
        #expect(plain?.attempts == 1, "\(kind): \(String(describing: plain))")

        var eager = RetryPolicy.maxRetries(3)
        eager.retryableErrors.formUnion([
            .serverCertificateUntrusted, .serverCertificateHasUnknownRoot, .serverCertificateHasBadDate,
            .secureConnectionFailed, .clientCertificateRequired, .clientCertificateRejected, .unknown,
        ])
        eager.clock = RetryClock(sleep: { _ in }, now: { Date() }, random: { $0.lowerBound })
        for variable in ["TLS_SELF_SIGNED_URL", "TLS_VALID_URL"] {
            let (_, eagerError) = try await failure(at: variable, kind) { $0.addMiddleware(.retry(eager)) }
            #expect(eagerError?.attempts == 1, "\(kind) \(variable): \(String(describing: eagerError))")
        }
    }
}
