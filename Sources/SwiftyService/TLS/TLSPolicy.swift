import Foundation

/// How a realm's requests judge the servers they talk to and show themselves to them: roots to trust,
/// public keys to pin, a client certificate, a minimum TLS version.
///
/// ```swift
/// let policy = TLSPolicy(
///     trustedRoots: try TLSCertificate.certificates(contentsOf: URL(fileURLWithPath: "/etc/corp/ca.pem")),
///     pinnedPublicKeys: [try PublicKeyPin(sha256: "k2eEB8lkvNhJMVAAqWYZ+TWTwzECLG37C7+OVMZJRGY=")])
/// ServiceRealm.get("billing").setTLSPolicy(policy)
/// ```
/// A policy adds checks and never removes one: the chain, the dates and the host name are verified as
/// always, and a pin is checked on top of them. A backend that cannot carry out every part of a policy
/// (see ``NetworkBackend/supportedTLSFeatures``) refuses the request with
/// ``ServiceError/InvalidRequestReason/unsupportedTLSPolicy(backend:missing:)`` before sending anything.
///
/// Descriptions and dumps of a policy never show a private key or a passphrase.
public struct TLSPolicy: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// Root certificates trusted beside the system's, or instead of them (``trustsSystemRoots``).
    public var trustedRoots: [TLSCertificate]
    /// Whether the system's roots stay trusted (the default); `false` trusts ``trustedRoots`` only.
    public var trustsSystemRoots: Bool
    /// The public keys the server's own (leaf) certificate must have one of; empty pins nothing.
    ///
    /// Give two or more to rotate keys: the one the server has now and the one it will have next.
    public var pinnedPublicKeys: [PublicKeyPin]
    /// The certificate shown to a server that asks for one.
    public var clientIdentity: ClientIdentity?
    /// The oldest TLS version accepted; `nil` leaves the TLS library's default (TLS 1.2 with OpenSSL 3).
    public var minimumVersion: TLSVersion?

    /// A policy; every part is optional, and an empty policy changes nothing.
    public init(
        trustedRoots: [TLSCertificate] = [], trustsSystemRoots: Bool = true,
        pinnedPublicKeys: [PublicKeyPin] = [], clientIdentity: ClientIdentity? = nil,
        minimumVersion: TLSVersion? = nil
    ) {
        self.trustedRoots = trustedRoots
        self.trustsSystemRoots = trustsSystemRoots
        self.pinnedPublicKeys = pinnedPublicKeys
        self.clientIdentity = clientIdentity
        self.minimumVersion = minimumVersion
    }

    /// What a backend must be able to do to carry out this policy.
    public var requiredFeatures: TLSFeatures {
        var features: TLSFeatures = []
        if !trustedRoots.isEmpty { features.insert(.additionalRoots) }
        if !trustsSystemRoots { features.insert(.replacingSystemRoots) }
        if !pinnedPublicKeys.isEmpty { features.insert(.publicKeyPins) }
        if let clientIdentity { features.insert(clientIdentity.isPKCS12 ? .pkcs12Identity : .pemIdentity) }
        if minimumVersion != nil { features.insert(.minimumVersion) }
        return features
    }

    /// `TLSPolicy(2 roots beside the system's, pins [sha256//…], PEM client certificate, private key
    /// <redacted>, TLS 1.3 or later)`
    public var description: String {
        var parts: [String] = []
        if !trustedRoots.isEmpty || !trustsSystemRoots {
            let count = trustedRoots.count == 1 ? "1 root" : "\(trustedRoots.count) roots"
            parts.append(trustsSystemRoots ? "\(count) beside the system's" : "\(count) only")
        }
        if !pinnedPublicKeys.isEmpty {
            parts.append("pins [\(pinnedPublicKeys.map(\.description).joined(separator: ", "))]")
        }
        if let clientIdentity { parts.append(clientIdentity.description) }
        if let minimumVersion { parts.append("\(minimumVersion.rawValue) or later") }
        return "TLSPolicy(\(parts.isEmpty ? "no changes" : parts.joined(separator: ", ")))"
    }

    /// The same as ``description``: no secret in either.
    public var debugDescription: String { description }

    /// The parts a dump may show: everything but the client identity's key material.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "trustedRoots": trustedRoots, "trustsSystemRoots": trustsSystemRoots,
                "pinnedPublicKeys": pinnedPublicKeys, "clientIdentity": clientIdentity?.description as Any,
                "minimumVersion": minimumVersion as Any,
            ], displayStyle: .struct)
    }
}

/// A TLS protocol version a ``TLSPolicy`` can require at least.
public enum TLSVersion: String, Sendable, Hashable, CaseIterable {
    /// TLS 1.2 (RFC 5246).
    case tls1_2 = "TLS 1.2"
    /// TLS 1.3 (RFC 8446).
    case tls1_3 = "TLS 1.3"
}

/// The parts of a ``TLSPolicy`` a backend can carry out; see ``NetworkBackend/supportedTLSFeatures``.
public struct TLSFeatures: OptionSet, Sendable, Hashable, CustomStringConvertible {
    /// The bits.
    public let rawValue: Int

    /// A set of features from its bits.
    public init(rawValue: Int) {
        self.rawValue = rawValue
    }

    /// Trusting roots beside the system's (``TLSPolicy/trustedRoots``).
    public static let additionalRoots = TLSFeatures(rawValue: 1 << 0)
    /// Trusting no system root (``TLSPolicy/trustsSystemRoots`` `false`).
    public static let replacingSystemRoots = TLSFeatures(rawValue: 1 << 1)
    /// Checking the leaf's public key against pins, before any request byte is sent.
    public static let publicKeyPins = TLSFeatures(rawValue: 1 << 2)
    /// Showing a PEM client certificate and key.
    public static let pemIdentity = TLSFeatures(rawValue: 1 << 3)
    /// Showing a PKCS#12 client identity.
    public static let pkcs12Identity = TLSFeatures(rawValue: 1 << 4)
    /// Refusing TLS versions older than ``TLSPolicy/minimumVersion``.
    public static let minimumVersion = TLSFeatures(rawValue: 1 << 5)
    /// Every feature.
    public static let all: TLSFeatures = [
        .additionalRoots, .replacingSystemRoots, .publicKeyPins, .pemIdentity, .pkcs12Identity,
        .minimumVersion,
    ]

    private static let names: [(TLSFeatures, String)] = [
        (.additionalRoots, "trusting additional roots"),
        (.replacingSystemRoots, "replacing the system roots"),
        (.publicKeyPins, "public-key pinning"), (.pemIdentity, "a PEM client identity"),
        (.pkcs12Identity, "a PKCS#12 client identity"), (.minimumVersion, "a minimum TLS version"),
    ]

    /// The features in words: `public-key pinning, a PEM client identity`.
    public var description: String {
        let named = Self.names.filter { contains($0.0) }.map(\.1)
        return named.isEmpty ? "nothing" : named.joined(separator: ", ")
    }
}

/// What one settings layer says about TLS: a policy, or the system's rules (`setTLSPolicy(nil)`), which a
/// one-off override may choose over its realm's policy.
enum TLSChoice: Sendable {
    case system
    case policy(TLSPolicy)

    init(_ policy: TLSPolicy?) {
        self = policy.map { .policy($0) } ?? .system
    }

    /// The policy, or `nil` for the system's rules.
    var policy: TLSPolicy? {
        if case let .policy(policy) = self { return policy }
        return nil
    }
}
