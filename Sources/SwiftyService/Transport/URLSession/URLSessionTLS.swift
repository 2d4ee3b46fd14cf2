// A realm's TLSPolicy on URLSession, Apple platforms only: FoundationNetworking on Linux has no hook for
// roots, pins or client certificates, so there URLSessionBackend declares no TLS feature and refuses
// policies. This file cannot be compiled on the Linux machine the package is developed on: it is kept
// small, and everything it relies on that can be tested on Linux (the key a pin hashes, the policy, the
// refusal) lives and is tested elsewhere.
#if canImport(Security)
import CryptoKit
import Foundation
import Security

extension URLSessionBackend {
    /// What URLSession carries out on Apple platforms: a PEM identity would need the keychain, so only a
    /// PKCS#12 one is taken; the minimum version goes on the policy's own session.
    static let appleTLSFeatures: TLSFeatures = [
        .additionalRoots, .replacingSystemRoots, .publicKeyPins, .pkcs12Identity, .minimumVersion,
    ]
}

/// One session per TLS policy, each with its own delegate: URLSession evaluates a server once per
/// connection and reuses connections across its tasks, so requests under different policies must never
/// share a session.
final class PolicySessions: Sendable {
    private let sessions = Locked<[TLSPolicy: (URLSession, SessionDelegate)]>.make([:])

    /// The session and delegate for `policy`, made like `base` on first use.
    func route(for policy: TLSPolicy, like base: URLSession, redirects: RedirectPolicy)
        -> (URLSession, SessionDelegate)
    {
        if let made = sessions.withLock({ $0[policy] }) { return made }
        let configuration = base.configuration
        if let minimum = policy.minimumVersion {
            configuration.tlsMinimumSupportedProtocolVersion = minimum == .tls1_3 ? .TLSv13 : .TLSv12
        }
        let delegate = SessionDelegate(redirects)
        let made = (
            URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil), delegate
        )
        let kept = sessions.withLock { table in
            if let raced = table[policy] { return raced }
            table[policy] = made
            return made
        }
        if kept.0 !== made.0 { made.0.finishTasksAndInvalidate() }
        return kept
    }

    /// Lets every session finish its tasks, then invalidates it.
    func finishAll() {
        for (session, _) in sessions.withLock({ $0.values }) { session.finishTasksAndInvalidate() }
    }
}

extension SessionDelegate {
    /// Answers a server-trust or client-certificate challenge under `policy`; `false` leaves it to the
    /// default handling.
    func answer(
        _ challenge: URLAuthenticationChallenge, for task: URLSessionTask, under policy: TLSPolicy,
        _ completion: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) -> Bool {
        let space = challenge.protectionSpace
        switch space.authenticationMethod {
        case NSURLAuthenticationMethodServerTrust:
            guard
                !policy.trustedRoots.isEmpty || !policy.trustsSystemRoots || !policy.pinnedPublicKeys.isEmpty,
                let trust = space.serverTrust
            else { return false }
            if let failure = Self.evaluate(trust, host: space.host, under: policy) {
                refuse(task, with: failure)
                completion(.cancelAuthenticationChallenge, nil)
            } else {
                completion(.useCredential, URLCredential(trust: trust))
            }
            return true
        case NSURLAuthenticationMethodClientCertificate:
            guard let identity = policy.clientIdentity, case let .pkcs12(bundle) = identity.material else {
                return false
            }
            var items: CFArray?
            let options =
                [kSecImportExportPassphrase as String: identity.passphraseText ?? ""] as CFDictionary
            let status = SecPKCS12Import(bundle as CFData, options, &items)
            guard status == errSecSuccess,
                let first = (items as? [[String: Any]])?.first?[kSecImportItemIdentity as String],
                CFGetTypeID(first as CFTypeRef) == SecIdentityGetTypeID()
            else {
                let reason = "the PKCS#12 client identity could not be read (OSStatus \(status))"
                refuse(
                    task,
                    with: TLSFailure.error(
                        .secureConnectionFailed, reason: reason, url: task.originalRequest?.url))
                completion(.cancelAuthenticationChallenge, nil)
                return true
            }
            let secIdentity = first as! SecIdentity  // the type ID was checked above
            completion(
                .useCredential,
                URLCredential(identity: secIdentity, certificates: nil, persistence: .forSession))
            return true
        default:
            return false
        }
    }

    /// The failure of `trust` under `policy` (anchors, then the leaf's key against the pins), or `nil`.
    private static func evaluate(_ trust: SecTrust, host: String, under policy: TLSPolicy) -> URLError? {
        let anchors = policy.trustedRoots.compactMap { SecCertificateCreateWithData(nil, $0.der as CFData) }
        if !anchors.isEmpty || !policy.trustsSystemRoots {
            SecTrustSetAnchorCertificates(trust, anchors as CFArray)
            SecTrustSetAnchorCertificatesOnly(trust, !policy.trustsSystemRoots)
        }
        SecTrustSetPolicies(trust, SecPolicyCreateSSL(true, host as CFString))
        let chain = (SecTrustCopyCertificateChain(trust) as? [SecCertificate]) ?? []
        var error: CFError?
        if !SecTrustEvaluateWithError(trust, &error) {
            let reason = error.map { CFErrorCopyDescription($0) as String } ?? "the server is not trusted"
            let code: URLError.Code =
                switch error.map({ Int32(CFErrorGetCode($0)) }) {
                case errSecCertificateExpired?: .serverCertificateHasBadDate
                case errSecCertificateNotValidYet?: .serverCertificateNotYetValid
                // A chain that reaches no anchor; a lone self-signed certificate is untrusted, as on libcurl.
                case errSecNotTrusted? where chain.count > 1: .serverCertificateHasUnknownRoot
                default: .serverCertificateUntrusted
                }
            return TLSFailure.error(code, reason: reason, url: nil)
        }
        guard !policy.pinnedPublicKeys.isEmpty else { return nil }
        // The leaf, as libcurl pins it, so that a policy means the same on every backend.
        let key = chain.first.flatMap {
            DER.subjectPublicKeyInfo(inCertificate: SecCertificateCopyData($0) as Data)
        }
        let digest = key.map { Data(SHA256.hash(data: $0)) }
        guard let digest, policy.pinnedPublicKeys.contains(where: { $0.sha256 == digest }) else {
            return TLSFailure.pinMismatch(
                reason: "SSL: public key does not match pinned public key", url: nil)
        }
        return nil
    }
}
#endif
