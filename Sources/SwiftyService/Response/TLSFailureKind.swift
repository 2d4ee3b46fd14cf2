import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Why a TLS connection failed, the same on every backend; read it with ``ServiceError/tlsFailure``.
///
/// Each kind arrives as ``ServiceError/transport(_:underlying:attempts:)`` with a `URLError` of the code
/// listed, and is never retried by ``RetryPolicy``: the server would be refused again.
public enum TLSFailureKind: String, Sendable, Hashable, CaseIterable {
    /// The server's leaf key matches none of the realm's ``TLSPolicy/pinnedPublicKeys``; no request byte
    /// was sent. `URLError.serverCertificateUntrusted` (-1202), as Apple reports a failed trust evaluation,
    /// told apart from ``untrustedCertificate`` by this kind.
    case publicKeyPinMismatch
    /// No trusted root above the server's chain (a private CA the realm does not trust):
    /// `URLError.serverCertificateHasUnknownRoot` (-1203).
    case unknownIssuer
    /// A self-signed certificate, a name that does not match the host, or another verdict against the
    /// server's certificate: `URLError.serverCertificateUntrusted` (-1202).
    case untrustedCertificate
    /// The server's certificate has expired or is not valid yet: `URLError.serverCertificateHasBadDate`
    /// (-1201) or `.serverCertificateNotYetValid` (-1204).
    case certificateOutOfDate
    /// The server wants a client certificate and the realm has none: `URLError.clientCertificateRequired`
    /// (-1206).
    case clientCertificateRequired
    /// The server refused the realm's client certificate: `URLError.clientCertificateRejected` (-1205).
    case clientCertificateRejected
    /// The handshake failed otherwise (no common TLS version, such as a minimum the server cannot meet, or
    /// no common cipher): `URLError.secureConnectionFailed` (-1200).
    case handshakeFailed

    /// The kind of `error`, or `nil` when it is no TLS failure.
    public init?(_ error: URLError) {
        switch error.code {
        case .serverCertificateUntrusted:
            self =
                error.userInfo[TLSFailure.pinMismatchKey] as? Bool == true
                ? .publicKeyPinMismatch : .untrustedCertificate
        case .serverCertificateHasUnknownRoot: self = .unknownIssuer
        case .serverCertificateHasBadDate, .serverCertificateNotYetValid: self = .certificateOutOfDate
        case .clientCertificateRequired: self = .clientCertificateRequired
        case .clientCertificateRejected: self = .clientCertificateRejected
        case .secureConnectionFailed: self = .handshakeFailed
        default: return nil
        }
    }
}

extension ServiceError {
    /// Why the TLS connection failed, when that is what ended the request.
    ///
    /// ```swift
    /// catch let error as ServiceError where error.tlsFailure == .publicKeyPinMismatch { … }
    /// ```
    public var tlsFailure: TLSFailureKind? {
        guard case let .transport(_, underlying, _) = self, let error = underlying as? URLError else {
            return nil
        }
        return TLSFailureKind(error)
    }
}
