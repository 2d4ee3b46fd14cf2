import Foundation

/// What the loaded libcurl can do with a ``TLSPolicy``, found once by setting each option on a handle that
/// never sends: an option its TLS library lacks is refused there (`CURLE_NOT_BUILT_IN`,
/// `CURLE_UNKNOWN_OPTION`), so a policy that needs it fails closed instead of being half applied.
struct CurlTLSSupport: Sendable {
    /// The policy features this libcurl carries out.
    let features: TLSFeatures
    /// Whether it takes roots in memory (`CURLOPT_CAINFO_BLOB`, 7.77); if not, they go through a file.
    let takesRootsInMemory: Bool
    /// libcurl's default CA directory and file (`CURLINFO_CAPATH`, `CURLINFO_CAINFO`, 7.84), if known.
    let systemRootDirectory: String?
    let systemRootFile: String?

    /// The support of the libcurl this process loaded.
    static let shared: CurlTLSSupport =
        (try? LibCurl.shared.get()).map(probe)
        ?? CurlTLSSupport(
            features: [], takesRootsInMemory: false, systemRootDirectory: nil, systemRootFile: nil)

    private static func probe(_ curl: LibCurl) -> CurlTLSSupport {
        guard let handle = curl.easyInit() else {
            return CurlTLSSupport(
                features: [], takesRootsInMemory: false, systemRootDirectory: nil, systemRootFile: nil)
        }
        defer { curl.easyCleanup(handle) }
        typealias O = LibCurl.Option
        let sample = Data("-".utf8)
        let inMemory = curl.set(handle, O.caInfoBlob, blob: sample) == 0
        let pins = curl.set(
            handle, O.pinnedPublicKey, string: "sha256//" + String(repeating: "A", count: 43) + "=")
        let certificate = curl.set(handle, O.sslCertBlob, blob: sample)
        let key = curl.set(handle, O.sslKeyBlob, blob: sample)
        let version = curl.set(handle, O.sslVersion, O.sslVersionTLS13)
        // Only the OpenSSL family reads a PKCS#12 bundle from memory.
        let tls = curl.version.tls
        let readsPKCS12 = ["OpenSSL", "LibreSSL", "BoringSSL", "quictls"].contains { tls.hasPrefix($0) }

        var features: TLSFeatures = [.additionalRoots, .replacingSystemRoots]
        if pins == 0 { features.insert(.publicKeyPins) }
        if certificate == 0, key == 0 { features.insert(.pemIdentity) }
        if certificate == 0, readsPKCS12 { features.insert(.pkcs12Identity) }
        if version == 0 { features.insert(.minimumVersion) }
        return CurlTLSSupport(
            features: features, takesRootsInMemory: inMemory,
            systemRootDirectory: curl.string(handle, LibCurl.Info.caPath),
            systemRootFile: curl.string(handle, LibCurl.Info.caInfo))
    }
}

/// One ``TLSPolicy`` as libcurl options: made once per policy (by the loop's driver) and set on every handle
/// of every transfer under it. libcurl reuses a connection only for a handle whose TLS options match the
/// connection's (roots, client certificate, pins, version), so requests under different policies never
/// share one; TLSPolicyRealServerTests checks that on the server's side.
final class CurlTLSOptions {
    /// The roots as PEM, in memory, or in `rootFile` where libcurl takes no roots in memory.
    private let roots: Data?
    private let rootFile: URL?
    private let trustsSystemRoots: Bool
    /// `sha256//a;sha256//b`
    private let pins: String?
    private let identity: ClientIdentity?
    private let version: Int?

    init(_ policy: TLSPolicy, support: CurlTLSSupport) throws {
        var bundle = ""
        if !policy.trustedRoots.isEmpty {
            // libcurl's roots in memory replace its CA file (its directory stays): where it has no directory,
            // the file's roots go in front of ours, or "beside the system's" would not hold.
            if policy.trustsSystemRoots, support.systemRootDirectory == nil,
                let file = support.systemRootFile,
                let system = try? String(contentsOfFile: file, encoding: .utf8)
            {
                bundle = system + "\n"
            }
            bundle += policy.trustedRoots.map(\.pem).joined()
        }
        if bundle.isEmpty {
            roots = nil
            rootFile = nil
        } else if support.takesRootsInMemory {
            roots = Data(bundle.utf8)
            rootFile = nil
        } else {
            // Roots are public: a file readable by this user only is still the private one the issue asks for.
            let file = FileManager.default.temporaryDirectory
                .appendingPathComponent("swiftyservice-roots-\(UUID().uuidString).pem")
            guard
                FileManager.default.createFile(
                    atPath: file.path, contents: Data(bundle.utf8), attributes: [.posixPermissions: 0o600])
            else {
                throw URLError(
                    .secureConnectionFailed,
                    userInfo: [
                        NSLocalizedDescriptionKey:
                            "the TLS policy's roots could not be written to \(file.path)"
                    ])
            }
            roots = nil
            rootFile = file
        }
        trustsSystemRoots = policy.trustsSystemRoots
        pins =
            policy.pinnedPublicKeys.isEmpty
            ? nil : policy.pinnedPublicKeys.map { "sha256//\($0.base64)" }.joined(separator: ";")
        identity = policy.clientIdentity
        version = policy.minimumVersion.map {
            switch $0 {
            case .tls1_2: LibCurl.Option.sslVersionTLS12
            case .tls1_3: LibCurl.Option.sslVersionTLS13
            }
        }
    }

    deinit {
        if let rootFile { try? FileManager.default.removeItem(at: rootFile) }
    }

    /// Sets the options on `handle`; the error names the option libcurl refused, never a value.
    func apply(to handle: LibCurl.Handle, _ curl: LibCurl) -> URLError? {
        typealias O = LibCurl.Option
        var refused: [String] = []
        func check(_ code: Int32, _ name: String) { if code != 0 { refused.append("\(name) (\(code))") } }
        if let roots { check(curl.set(handle, O.caInfoBlob, blob: roots), "CURLOPT_CAINFO_BLOB") }
        if let rootFile { check(curl.set(handle, O.caInfo, string: rootFile.path), "CURLOPT_CAINFO") }
        if !trustsSystemRoots {
            check(curl.set(handle, O.caPath, pointer: nil), "CURLOPT_CAPATH")
            if rootFile == nil { check(curl.set(handle, O.caInfo, pointer: nil), "CURLOPT_CAINFO") }
        }
        if let pins { check(curl.set(handle, O.pinnedPublicKey, string: pins), "CURLOPT_PINNEDPUBLICKEY") }
        if let identity {
            switch identity.material {
            case let .pem(certificate, key):
                check(curl.set(handle, O.sslCertType, string: "PEM"), "CURLOPT_SSLCERTTYPE")
                check(curl.set(handle, O.sslCertBlob, blob: certificate), "CURLOPT_SSLCERT_BLOB")
                check(curl.set(handle, O.sslKeyType, string: "PEM"), "CURLOPT_SSLKEYTYPE")
                check(curl.set(handle, O.sslKeyBlob, blob: key), "CURLOPT_SSLKEY_BLOB")
            case let .pkcs12(bundle):
                check(curl.set(handle, O.sslCertType, string: "P12"), "CURLOPT_SSLCERTTYPE")
                check(curl.set(handle, O.sslCertBlob, blob: bundle), "CURLOPT_SSLCERT_BLOB")
            }
            if let passphrase = identity.passphraseText {
                check(curl.set(handle, O.keyPassword, string: passphrase), "CURLOPT_KEYPASSWD")
            }
        }
        if let version { check(curl.set(handle, O.sslVersion, version), "CURLOPT_SSLVERSION") }
        guard !refused.isEmpty else { return nil }
        return URLError(
            .secureConnectionFailed,
            userInfo: [
                NSLocalizedDescriptionKey:
                    "libcurl refused the TLS policy's \(refused.joined(separator: ", ")), so nothing was sent"
            ])
    }
}

/// The options of the policies the loop has seen, so that each is made once (the loop's driver only).
struct CurlTLSCache {
    let support: CurlTLSSupport
    private var options: [TLSPolicy: CurlTLSOptions] = [:]
    /// Realms have one policy each: past this many, someone makes a policy per request, and the cache
    /// starts over rather than grow.
    private static let limit = 64

    init(support: CurlTLSSupport) {
        self.support = support
    }

    /// The options for `policy`, made now if they are new.
    mutating func options(for policy: TLSPolicy) throws -> CurlTLSOptions {
        if let made = options[policy] { return made }
        if options.count >= Self.limit { options.removeAll() }
        let made = try CurlTLSOptions(policy, support: support)
        options[policy] = made
        return made
    }
}
