import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a failed connection's TLS handshake showed, where the backend watched it (CurlBackend on OpenSSL).
package struct TLSHandshakeFacts: Sendable, Equatable {
    /// The server asked for a client certificate (a CertificateRequest message).
    package var certificateRequested = false
    /// The server went on after the client's certificate, and so accepted it: a session ticket, its TLS 1.2
    /// Finished, or a byte of the response.
    package var serverWentOn = false
    /// The request presented a client certificate (the realm's policy has an identity).
    package var certificatePresented = false

    package init(
        certificateRequested: Bool = false, serverWentOn: Bool = false, certificatePresented: Bool = false
    ) {
        self.certificateRequested = certificateRequested
        self.serverWentOn = serverWentOn
        self.certificatePresented = certificatePresented
    }
}

/// TLS failures told apart the same way on every backend: Apple's `URLError` code for the case, and the
/// TLS library's own reason as the description.
///
/// On Linux both shipped backends end on libcurl, which reports a failure as a result code and, in its
/// error buffer, OpenSSL's reason. URLSession there keeps the reason but reports code -1 (unknown) for a
/// bad certificate; libcurl's result codes lump an expired, a self-signed and a wrongly named certificate
/// together, and report a client certificate the server wanted as a lost connection, which a retry would
/// send again. The reason is what tells the cases apart, so it is read here, once, for all of them.
package enum TLSFailure {
    /// The codes that mean a TLS handshake or a certificate failed: sending again cannot help.
    package static let codes: Set<URLError.Code> = [
        .secureConnectionFailed, .serverCertificateHasBadDate, .serverCertificateUntrusted,
        .serverCertificateHasUnknownRoot, .serverCertificateNotYetValid, .clientCertificateRejected,
        .clientCertificateRequired,
    ]

    /// The error for a failed libcurl transfer, or `nil` when `curlCode` is no TLS failure.
    /// - Parameters:
    ///   - curlCode: libcurl's result code (`CURLcode`).
    ///   - reason: the transfer's error buffer, or libcurl's text for the code when that is empty.
    ///   - handshake: what the connection's TLS handshake showed, as far as the backend could watch it.
    package static func error(
        curlCode: Int32, reason: String, url: URL?, handshake: TLSHandshakeFacts = .init()
    ) -> URLError? {
        if let refusal = clientCertificateRefusal(curlCode: curlCode, reason: reason, url: url, handshake) {
            return refusal
        }
        let certificateRequested = handshake.certificateRequested
        let code: URLError.Code?
        switch curlCode {
        // CURLE_PEER_FAILED_VERIFICATION (60; 51 before 7.62): the server's certificate.
        case 51, 60: code = serverCertificateCode(reason) ?? .serverCertificateUntrusted
        // CURLE_SSL_CONNECT_ERROR: the handshake, whatever the reason.
        case 35:
            code =
                handshakeCode(reason, certificateRequested: certificateRequested) ?? .secureConnectionFailed
        // CURLE_SEND_ERROR, CURLE_RECV_ERROR: TLS 1.3 sends its verdict on the client certificate after the
        // handshake, so an alert may arrive with the first read; a plain reset stays a lost connection.
        case 55, 56: code = handshakeCode(reason, certificateRequested: certificateRequested)
        // CURLE_SSL_PINNEDPUBKEYNOTMATCH: checked during the handshake, before any request byte.
        case 90: return pinMismatch(reason: reason, url: url)
        // CURLE_SSL_ISSUER_ERROR, CURLE_SSL_INVALIDCERTSTATUS.
        case 83, 91: code = .serverCertificateUntrusted
        // CURLE_SSL_CLIENTCERT: the server wants a client certificate.
        case 98: code = .clientCertificateRequired
        // The TLS library itself: engines, ciphers, the CA file, a local client certificate, shutdown.
        case 53, 54, 58, 59, 64, 66, 77, 80, 82: code = .secureConnectionFailed
        default: code = nil
        }
        return code.map { error($0, reason: reason, url: url) }
    }

    /// A connection that a server asking for a client certificate ended before it went on: the certificate (or
    /// its absence) was refused, whatever libcurl read the end as.
    ///
    /// Under TLS 1.3 the server judges the client's certificate after the client has finished its side of the
    /// handshake and sent its request. A server that closes at once after its alert, with the request unread,
    /// resets the connection, and the reset may overtake the alert: libcurl then reports a lost connection
    /// ("Connection reset by peer", "Send failure: Broken pipe", "getpeername() failed with errno 107"),
    /// which a retry would send again, into the same refusal. The alert's text is not there to read, so the
    /// handshake itself decides: the server asked for a certificate and never went on (no session ticket, no
    /// TLS 1.2 Finished after the client's certificate, no byte of a response).
    static func clientCertificateRefusal(
        curlCode: Int32, reason: String, url: URL?, _ handshake: TLSHandshakeFacts
    ) -> URLError? {
        // CURLE_SSL_CONNECT_ERROR, CURLE_GOT_NOTHING, CURLE_SEND_ERROR, CURLE_RECV_ERROR: the connection
        // ended during the handshake or before any answer.
        guard handshake.certificateRequested, !handshake.serverWentOn, [35, 52, 55, 56].contains(curlCode)
        else { return nil }
        let presented = handshake.certificatePresented
        let verdict =
            presented
            ? "the server asked for a client certificate and refused the one sent"
            : "the server asked for a client certificate, none was sent, and it refused to go on"
        return error(
            presented ? .clientCertificateRejected : .clientCertificateRequired,
            reason: "\(verdict) (\(reason))",
            url: url)
    }

    /// `error` with Apple's code when it is a TLS failure URLSession reported by its reason only (Linux:
    /// code -1 and OpenSSL's text); any other error as it is.
    package static func classified(_ error: any Error) -> any Error {
        let nsError = error as NSError
        guard nsError.domain == NSURLErrorDomain,
            let reason = nsError.userInfo[NSLocalizedDescriptionKey] as? String
        else { return error }
        let known = URLError.Code(rawValue: nsError.code)
        // A verdict on the client certificate comes from what the handshake showed; the alert's text, when
        // there is one, may name another reason for the same refusal (TLS 1.2's "handshake failure").
        if error is URLError, known == .clientCertificateRequired || known == .clientCertificateRejected {
            return error
        }
        guard
            let code = serverCertificateCode(reason) ?? handshakeCode(reason, certificateRequested: false)
                ?? (isHandshake(reason) ? .secureConnectionFailed : nil)
        else { return error }
        guard code != known || !(error is URLError) else { return error }
        return Self.error(code, reason: reason, url: nsError.userInfo[NSURLErrorFailingURLErrorKey] as? URL)
    }

    /// The code for a reason that names a problem with the server's certificate, if it names one.
    package static func serverCertificateCode(_ reason: String) -> URLError.Code? {
        let text = reason.lowercased()
        let aboutCertificate =
            text.contains("ssl certificate problem") || text.contains("certificate verification failed")
            || text.contains("does not match target host name") || text.contains("matches target host name")
            || text.contains("ssl peer certificate")
        guard aboutCertificate else { return nil }
        if text.contains("has expired") || text.contains("not yet valid")
            || text.contains("certificate expired")
        {
            return .serverCertificateHasBadDate
        }
        // OpenSSL's "unable to get local issuer certificate", "unable to get issuer certificate", "unable to
        // verify the first certificate": no trusted root above the chain the server sent.
        if text.contains("unable to get") && text.contains("issuer certificate")
            || text.contains("unable to verify the first certificate")
        {
            return .serverCertificateHasUnknownRoot
        }
        // Self-signed certificates, a chain ending in an untrusted self-signed root, a host name that does
        // not match, and every other verdict on the server's certificate.
        return .serverCertificateUntrusted
    }

    /// Whether `reason` is libcurl's for a failed handshake (`OpenSSL/3.0.19: error:…`, `OpenSSL
    /// SSL_connect: …`), as opposed to a failed read or write on an established connection (`OpenSSL
    /// SSL_read: …`), which is a lost connection like any other.
    static func isHandshake(_ reason: String) -> Bool {
        let text = reason.lowercased()
        return (text.contains("ssl routines") || text.contains("ssl_connect"))
            && !text.contains("ssl_read") && !text.contains("ssl_write")
    }

    /// The code for a reason that names a TLS alert the server sent, if it names one: its verdict on the
    /// client certificate, or another handshake failure.
    package static func handshakeCode(_ reason: String, certificateRequested: Bool) -> URLError.Code? {
        let text = reason.lowercased()
        // OpenSSL names a received alert "sslv3 alert …", "tlsv1 alert …" or "tlsv13 alert …".
        let received = ["tlsv13 alert ", "tlsv1 alert ", "sslv3 alert "]
        guard let alert = received.lazy.compactMap({ text.range(of: $0) }).first else { return nil }
        let name = text[alert.upperBound...]
        if name.hasPrefix("certificate required") { return .clientCertificateRequired }
        // TLS 1.2 has no "certificate required": a server that asked for one and got none fails the handshake.
        if name.hasPrefix("handshake failure") {
            return certificateRequested ? .clientCertificateRequired : .secureConnectionFailed
        }
        // Alerts about a certificate, sent by the server: they can only be about ours.
        let aboutOurCertificate = [
            "bad certificate", "unsupported certificate", "certificate revoked", "certificate expired",
            "certificate unknown", "unknown ca",
        ]
        if aboutOurCertificate.contains(where: { name.hasPrefix($0) }) { return .clientCertificateRejected }
        return .secureConnectionFailed
    }

    /// The `userInfo` key (value `true`) that tells a pin mismatch from the other untrusted certificates.
    package static let pinMismatchKey = "SwiftyServicePublicKeyPinMismatch"

    /// A server whose leaf key matches none of the policy's pins: `serverCertificateUntrusted`, as Apple
    /// reports a failed trust evaluation, marked with ``pinMismatchKey``.
    package static func pinMismatch(reason: String, url: URL?) -> URLError {
        var info: [String: Any] = [NSLocalizedDescriptionKey: reason, pinMismatchKey: true]
        if let url { info[NSURLErrorFailingURLErrorKey] = url }
        return URLError(.serverCertificateUntrusted, userInfo: info)
    }

    /// A TLS failure: `code`, with `reason` as its description.
    package static func error(_ code: URLError.Code, reason: String, url: URL?) -> URLError {
        var info: [String: Any] = [NSLocalizedDescriptionKey: reason]
        if let url { info[NSURLErrorFailingURLErrorKey] = url }
        return URLError(code, userInfo: info)
    }
}
