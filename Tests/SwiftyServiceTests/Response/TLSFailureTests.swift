import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The TLS classifier on the exact texts libcurl 7.88.1 with OpenSSL 3.0 wrote in its error buffer
/// against Tests/Servers/tls_server.py (captured with the `curl` CLI, `--cacert` the test CA), which are
/// also what FoundationNetworking puts in its errors' descriptions: the cases the conformance suite cannot
/// reach until a realm can trust a CA of its own.
@Suite struct TLSFailureTests {
    /// libcurl's result code and error buffer for each case, and the code every backend must report.
    static let captured: [(curl: Int32, reason: String, code: URLError.Code)] = [
        // expired.pem, CA trusted
        (60, "SSL certificate problem: certificate has expired", .serverCertificateHasBadDate),
        // OpenSSL's text for a leaf whose notBefore is in the future
        (60, "SSL certificate problem: certificate is not yet valid", .serverCertificateHasBadDate),
        // wrong-host.pem, CA trusted
        (
            60, "SSL: no alternative certificate subject name matches target host name '127.0.0.1'",
            .serverCertificateUntrusted
        ),
        // self-signed.pem
        (60, "SSL certificate problem: self-signed certificate", .serverCertificateUntrusted),
        // client-cert-required, CA not trusted: the server sends the CA along
        (
            60, "SSL certificate problem: self-signed certificate in certificate chain",
            .serverCertificateUntrusted
        ),
        // valid.pem, CA not trusted
        (
            60, "SSL certificate problem: unable to get local issuer certificate",
            .serverCertificateHasUnknownRoot
        ),
        // client-cert-required, CA trusted, no client certificate, TLS 1.3: the verdict comes with the first read
        (
            56,
            "OpenSSL SSL_read: OpenSSL/3.0.19: error:0A00045C:SSL routines::tlsv13 alert certificate required, errno 0",
            .clientCertificateRequired
        ),
        // client-cert-required, CA trusted, a self-signed client certificate, TLS 1.2
        (
            35, "OpenSSL/3.0.19: error:0A000418:SSL routines::tlsv1 alert unknown ca",
            .clientCertificateRejected
        ),
        // client-cert-required, CA trusted, a server certificate presented as the client's, TLS 1.3
        (
            56,
            "OpenSSL SSL_read: OpenSSL/3.0.19: error:0A000413:SSL routines::sslv3 alert unsupported certificate, errno 0",
            .clientCertificateRejected
        ),
        // tls12-only, the client insisting on TLS 1.3
        (
            35, "OpenSSL/3.0.19: error:0A00042E:SSL routines::tlsv1 alert protocol version",
            .secureConnectionFailed
        ),
        // client-cert-required, no client certificate, TLS 1.2: nothing in the text says a certificate was asked for
        (
            35, "OpenSSL/3.0.19: error:0A000410:SSL routines::sslv3 alert handshake failure",
            .secureConnectionFailed
        ),
    ]

    @Test func libcurlsFailuresGetAppleCodesAndKeepTheirReason() {
        for (curl, reason, code) in Self.captured {
            let url = URL(string: "https://127.0.0.1:8443/x")!
            let error = TLSFailure.error(curlCode: curl, reason: reason, url: url)
            #expect(error?.code == code, "curl \(curl): \(reason)")
            #expect(error?.localizedDescription == reason)
        }
    }

    @Test func urlSessionsFailuresGetTheSameCodes() {
        // FoundationNetworking reports libcurl's error buffer as the description, with code -1 for a bad
        // certificate and other codes (-1005 for a failed read) elsewhere.
        for (curl, reason, code) in Self.captured {
            for reported in [-1, -1005, -1200] {
                let linux = NSError(
                    domain: NSURLErrorDomain, code: reported, userInfo: [NSLocalizedDescriptionKey: reason])
                let classified = TLSFailure.classified(linux) as? URLError
                #expect(classified?.code == code, "URLError \(reported) for curl \(curl): \(reason)")
                #expect(classified?.localizedDescription == reason)
            }
        }
    }

    @Test func aHandshakeFailureAfterACertificateRequestMeansTheCertificateWasRequired() {
        let reason = "OpenSSL/3.0.19: error:0A000410:SSL routines::sslv3 alert handshake failure"
        let error = TLSFailure.error(
            curlCode: 35, reason: reason, url: nil, handshake: TLSHandshakeFacts(certificateRequested: true))
        #expect(error?.code == .clientCertificateRequired)
    }

    @Test func aConnectionEndedAfterACertificateRequestIsTheClientCertificateErrorWhateverItReadsAs() {
        // What libcurl reported when a TLS 1.3 server closed at once after refusing the certificate: the reset
        // overtook the alert. The handshake, not the text, decides.
        let url = URL(string: "https://127.0.0.1:8443/x")!
        for (curl, reason) in [
            (Int32(55), "getpeername() failed with errno 107: Transport endpoint is not connected"),
            (55, "Send failure: Broken pipe"),
            (56, "Recv failure: Connection reset by peer"),
            (52, "Empty reply from server"),
            (35, "OpenSSL SSL_connect: Connection reset by peer in connection to 127.0.0.1:8443 "),
        ] {
            let none = TLSFailure.error(
                curlCode: curl, reason: reason, url: url,
                handshake: TLSHandshakeFacts(certificateRequested: true))
            #expect(none?.code == .clientCertificateRequired, "\(reason)")
            #expect(none?.localizedDescription.contains(reason) == true, "libcurl's reason is kept")
            #expect(none?.localizedDescription.contains("asked for a client certificate") == true)
            let unrelated = TLSFailure.error(
                curlCode: curl, reason: reason, url: url,
                handshake: TLSHandshakeFacts(certificateRequested: true, certificatePresented: true))
            #expect(unrelated?.code == .clientCertificateRejected, "\(reason)")
            // The server took the certificate and went on: a reset after that is a lost connection again.
            let accepted = TLSFailure.error(
                curlCode: curl, reason: reason, url: url,
                handshake: TLSHandshakeFacts(certificateRequested: true, serverWentOn: true))
            #expect(accepted?.code != .clientCertificateRequired, "\(reason)")
            // No certificate asked for: the text decides, as before.
            #expect(
                TLSFailure.error(curlCode: curl, reason: reason, url: url)?.code != .clientCertificateRequired
            )
        }
        // A failure of another kind stays what it was.
        let pin = TLSFailure.error(
            curlCode: 90, reason: "SSL: public key does not match pinned public key", url: url,
            handshake: TLSHandshakeFacts(certificateRequested: true))
        #expect(pin?.code == .serverCertificateUntrusted)
    }

    @Test func aHandshakeCutShortIsASecureConnectionFailure() {
        // libcurl's text (lib/vtls/openssl.c) for a connection reset during the handshake: no alert, and
        // FoundationNetworking may report it under any code.
        let reason = "OpenSSL SSL_connect: Connection reset by peer in connection to 127.0.0.1:8443 "
        #expect(TLSFailure.error(curlCode: 35, reason: reason, url: nil)?.code == .secureConnectionFailed)
        let linux = NSError(domain: NSURLErrorDomain, code: -1, userInfo: [NSLocalizedDescriptionKey: reason])
        #expect((TLSFailure.classified(linux) as? URLError)?.code == .secureConnectionFailed)
    }

    @Test func failuresThatAreNotTLSStayAsTheyAre() {
        // A reset on an established TLS connection is a lost connection, worth a retry; so is plain HTTP's.
        for (curl, reason) in [
            (Int32(56), "OpenSSL SSL_read: Connection reset by peer, errno 104"),
            // A server that closed a TLS connection mid-answer without saying so.
            (
                56,
                "OpenSSL SSL_read: OpenSSL/3.0.19: error:0A000126:SSL routines::unexpected eof while reading, errno 0"
            ),
            (56, "Recv failure: Connection reset by peer"),
            (7, "Failed to connect to 127.0.0.1 port 1 after 0 ms: Couldn't connect to server"),
            (28, "Operation timed out after 1000 milliseconds with 0 bytes received"),
        ] {
            #expect(TLSFailure.error(curlCode: curl, reason: reason, url: nil) == nil, "\(reason)")
            let linux = NSError(
                domain: NSURLErrorDomain, code: -1005, userInfo: [NSLocalizedDescriptionKey: reason])
            #expect((TLSFailure.classified(linux) as NSError).code == -1005, "\(reason)")
        }
        let other = NSError(
            domain: "LegacyHTTPClient", code: -1,
            userInfo: [
                NSLocalizedDescriptionKey:
                    "SSL certificate problem: self-signed certificate"
            ])
        #expect((TLSFailure.classified(other) as NSError).domain == "LegacyHTTPClient")
    }

    @Test func aTLSFailureIsNotRetriedWhateverTheRetryableErrorsSay() async throws {
        for code in TLSFailure.codes.sorted(by: { $0.rawValue < $1.rawValue }) {
            let stub = StubBackend.failing(URLError(code))
            var policy = RetryPolicy.maxRetries(3)
            policy.retryableErrors = TLSFailure.codes
            policy.clock = RetryClock(sleep: { _ in }, now: { Date() }, random: { $0.lowerBound })
            let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!).use(stub)
                .addMiddleware(.retry(policy))
            await #expect {
                try await TestEndpoint(realm, "x").request()
            } throws: { ($0 as? ServiceError)?.attempts == 1 }
            #expect(stub.received.count == 1, "\(code.rawValue)")
        }
    }
}
