import Foundation

/// One X.509 certificate, kept in DER: a root a ``TLSPolicy`` trusts.
///
/// Made from PEM text (one or more `BEGIN CERTIFICATE` blocks), DER bytes, or a file of either. The bytes
/// are checked for the shape of a certificate here; the TLS library judges the rest at the handshake.
public struct TLSCertificate: Sendable, Hashable, CustomStringConvertible {
    /// The certificate's DER encoding.
    public let der: Data

    /// The certificate in `der`, a DER-encoded X.509 certificate.
    /// - Throws: ``TLSPolicyError`` when the bytes are not one DER structure.
    public init(der: Data) throws {
        guard DER.isOneSequence(der) else {
            throw TLSPolicyError("the data (\(der.count) bytes) is not a DER-encoded certificate")
        }
        self.der = der
    }

    /// Every certificate in `pem`, in order.
    /// - Throws: ``TLSPolicyError`` when there is none, or a block is not base64 DER.
    public static func certificates(inPEM pem: String) throws -> [TLSCertificate] {
        let blocks = try PEM.blocks(in: pem, labelled: "CERTIFICATE")
        guard !blocks.isEmpty else { throw TLSPolicyError("the PEM text has no BEGIN CERTIFICATE block") }
        return try blocks.map { try TLSCertificate(der: $0) }
    }

    /// Every certificate in `file`, PEM (any number) or DER (one).
    /// - Throws: ``TLSPolicyError`` naming the file when it cannot be read or holds no certificate.
    public static func certificates(contentsOf file: URL) throws -> [TLSCertificate] {
        let data = try TLSPolicyError.reading(file)
        do {
            if let text = String(data: data, encoding: .utf8), text.contains("-----BEGIN") {
                return try certificates(inPEM: text)
            }
            return [try TLSCertificate(der: data)]
        } catch let error as TLSPolicyError {
            throw TLSPolicyError("\(file.path): \(error.reason)")
        }
    }

    /// The certificate's SubjectPublicKeyInfo as encoded in it: the bytes a ``PublicKeyPin`` is the
    /// SHA-256 of. `nil` when the DER is not a certificate after all.
    package var subjectPublicKeyInfo: Data? { DER.subjectPublicKeyInfo(inCertificate: der) }

    /// The certificate as PEM text, what libcurl and OpenSSL read.
    public var pem: String { PEM.encode(der, label: "CERTIFICATE") }

    /// `certificate (612 bytes DER)`: a certificate is public, but its bytes say nothing in a log.
    public var description: String { "certificate (\(der.count) bytes DER)" }
}

/// The SHA-256 of a server's SubjectPublicKeyInfo, as `openssl … | openssl dgst -sha256 -binary | base64`
/// prints it: a key a ``TLSPolicy`` pins.
public struct PublicKeyPin: Sendable, Hashable, CustomStringConvertible {
    /// The 32-byte digest.
    public let sha256: Data

    /// The pin `base64`, with or without libcurl's `sha256//` prefix.
    /// - Throws: ``TLSPolicyError`` when it is not base64 of 32 bytes.
    public init(sha256 base64: String) throws {
        var text = base64.trimmingCharacters(in: .whitespacesAndNewlines)
        if text.hasPrefix("sha256//") { text.removeFirst("sha256//".count) }
        guard let digest = Data(base64Encoded: text), digest.count == 32 else {
            throw TLSPolicyError("the pin '\(base64)' is not the base64 of a 32-byte SHA-256 digest")
        }
        sha256 = digest
    }

    /// The digest in base64, as openssl prints it.
    public var base64: String { sha256.base64EncodedString() }

    /// `sha256//<base64>`: a pin is public (it is a hash of a public key).
    public var description: String { "sha256//\(base64)" }
}

/// The certificate and private key a client shows a server that asks for one (mutual TLS).
///
/// The private key and the passphrase never appear in a description, a dump or an error.
public struct ClientIdentity: Sendable, Hashable, CustomStringConvertible, CustomReflectable {
    /// How the identity is encoded.
    enum Encoding: Hashable {
        /// A PEM certificate (the chain may follow) and a PEM private key.
        case pem(certificate: Data, key: Secret<Data>)
        /// A PKCS#12 bundle of certificate and key.
        case pkcs12(Secret<Data>)
    }

    let encoding: Encoding
    /// The passphrase of an encrypted key or of the PKCS#12 bundle.
    let passphrase: Secret<String>?

    /// A PEM certificate (its chain may follow it) and its PEM private key, encrypted with `passphrase`
    /// when one is given.
    /// - Throws: ``TLSPolicyError`` when `certificate` has no `BEGIN CERTIFICATE` block or `privateKey` no
    ///   `BEGIN … PRIVATE KEY` block.
    public static func pem(certificate: String, privateKey: String, passphrase: String? = nil) throws
        -> ClientIdentity
    {
        _ = try TLSCertificate.certificates(inPEM: certificate)
        guard privateKey.range(of: "-----BEGIN [A-Z ]*PRIVATE KEY-----", options: .regularExpression) != nil
        else { throw TLSPolicyError("the private key has no BEGIN … PRIVATE KEY block (PEM is expected)") }
        return ClientIdentity(
            encoding: .pem(certificate: Data(certificate.utf8), key: Secret(Data(privateKey.utf8))),
            passphrase: passphrase.map(Secret.init))
    }

    /// The PEM certificate in `certificateFile` and the PEM private key in `privateKeyFile`, read now.
    /// - Throws: ``TLSPolicyError`` naming the file that cannot be read or is not PEM.
    public static func pem(certificateFile: URL, privateKeyFile: URL, passphrase: String? = nil) throws
        -> ClientIdentity
    {
        let certificate = String(decoding: try TLSPolicyError.reading(certificateFile), as: UTF8.self)
        let key = String(decoding: try TLSPolicyError.reading(privateKeyFile), as: UTF8.self)
        do {
            return try pem(certificate: certificate, privateKey: key, passphrase: passphrase)
        } catch let error as TLSPolicyError {
            throw TLSPolicyError("\(certificateFile.path), \(privateKeyFile.path): \(error.reason)")
        }
    }

    /// A PKCS#12 bundle (`.p12`, `.pfx`) and its passphrase; the platform's TLS library decrypts it when a
    /// request needs it.
    public static func pkcs12(_ bundle: Data, passphrase: String) -> ClientIdentity {
        ClientIdentity(encoding: .pkcs12(Secret(bundle)), passphrase: Secret(passphrase))
    }

    /// The PKCS#12 bundle in `file`, read now, and its passphrase.
    /// - Throws: ``TLSPolicyError`` naming the file when it cannot be read.
    public static func pkcs12(contentsOf file: URL, passphrase: String) throws -> ClientIdentity {
        pkcs12(try TLSPolicyError.reading(file), passphrase: passphrase)
    }

    /// The identity's bytes, as a backend hands them to its TLS library.
    package enum Material {
        /// The PEM certificate (its chain may follow) and the PEM private key.
        case pem(certificate: Data, key: Data)
        /// The PKCS#12 bundle.
        case pkcs12(Data)
    }

    /// The identity's bytes, for a backend; never for a log.
    package var material: Material {
        switch encoding {
        case let .pem(certificate, key): .pem(certificate: certificate, key: key.value)
        case let .pkcs12(bundle): .pkcs12(bundle.value)
        }
    }

    /// The passphrase, for a backend; never for a log.
    package var passphraseText: String? { passphrase?.value }

    /// Whether this is a PKCS#12 bundle rather than PEM certificate and key.
    public var isPKCS12: Bool {
        if case .pkcs12 = encoding { return true }
        return false
    }

    /// `PEM client certificate, private key <redacted>`: never the key or the passphrase.
    public var description: String {
        let passphrase = passphrase == nil ? "" : ", passphrase \(Redaction.headerPlaceholder)"
        switch encoding {
        case .pem:
            return "PEM client certificate, private key \(Redaction.headerPlaceholder)\(passphrase)"
        case .pkcs12:
            return "PKCS#12 client identity \(Redaction.headerPlaceholder)\(passphrase)"
        }
    }

    /// No children: `dump` shows the description and nothing of the key.
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}

/// A ``TLSPolicy`` input that cannot be used: the file and the cause. It never holds key material.
public struct TLSPolicyError: Error, Sendable, CustomStringConvertible, LocalizedError {
    /// What is wrong, naming the file where there is one.
    public let reason: String

    init(_ reason: String) {
        self.reason = reason
    }

    /// `TLS policy: <reason>`
    public var description: String { "TLS policy: \(reason)" }

    /// The same as ``description``.
    public var errorDescription: String? { description }

    /// The bytes of `file`, or the error naming it.
    static func reading(_ file: URL) throws -> Data {
        do {
            return try Data(contentsOf: file)
        } catch {
            throw TLSPolicyError("\(file.path) cannot be read: \((error as NSError).localizedDescription)")
        }
    }
}

/// A secret value: compared and hashed as itself, shown as `<redacted>` everywhere.
struct Secret<Value: Hashable & Sendable>: Hashable, Sendable, CustomStringConvertible,
    CustomDebugStringConvertible, CustomReflectable
{
    let value: Value

    init(_ value: Value) {
        self.value = value
    }

    var description: String { Redaction.headerPlaceholder }
    var debugDescription: String { Redaction.headerPlaceholder }
    var customMirror: Mirror { Mirror(self, children: []) }
}

/// PEM blocks (RFC 7468), read and written.
enum PEM {
    /// The DER bytes of every `label` block in `text`.
    static func blocks(in text: String, labelled label: String) throws -> [Data] {
        let begin = "-----BEGIN \(label)-----"
        let end = "-----END \(label)-----"
        var blocks: [Data] = []
        var rest = Substring(text)
        while let start = rest.range(of: begin) {
            guard let stop = rest.range(of: end, range: start.upperBound..<rest.endIndex) else {
                throw TLSPolicyError("a BEGIN \(label) block has no END line")
            }
            let base64 = rest[start.upperBound..<stop.lowerBound].filter { !$0.isWhitespace }
            guard let der = Data(base64Encoded: String(base64)) else {
                throw TLSPolicyError("a \(label) block is not valid base64")
            }
            blocks.append(der)
            rest = rest[stop.upperBound...]
        }
        return blocks
    }

    /// `der` as a PEM block with 64-character lines.
    static func encode(_ der: Data, label: String) -> String {
        let base64 = der.base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        return "-----BEGIN \(label)-----\n\(base64)\n-----END \(label)-----\n"
    }
}

/// Just enough DER to tell a certificate's bytes from something else, and to find the key a pin hashes.
enum DER {
    /// The SubjectPublicKeyInfo of a DER certificate, as it is encoded there: what a pin is the SHA-256 of
    /// (RFC 7469). `nil` when the bytes are not a certificate.
    ///
    /// Certificate ::= SEQUENCE { tbsCertificate SEQUENCE { [0] version OPTIONAL, serialNumber, signature,
    /// issuer, validity, subject, subjectPublicKeyInfo, … }, … }
    static func subjectPublicKeyInfo(inCertificate certificate: Data) -> Data? {
        let bytes = [UInt8](certificate)
        guard let outer = element(in: bytes, at: 0), bytes[0] == 0x30,
            let tbs = element(in: bytes, at: outer.content.lowerBound),
            bytes[outer.content.lowerBound] == 0x30
        else { return nil }
        var offset = tbs.content.lowerBound
        // The version is the only context-specific [0] element before the key; it may be absent (v1).
        if offset < bytes.count, bytes[offset] == 0xA0, let version = element(in: bytes, at: offset) {
            offset = version.whole.upperBound
        }
        // serialNumber, signature, issuer, validity, subject, then the key.
        for _ in 0..<5 {
            guard let skipped = element(in: bytes, at: offset) else { return nil }
            offset = skipped.whole.upperBound
        }
        guard let key = element(in: bytes, at: offset), bytes[offset] == 0x30,
            key.whole.upperBound <= tbs.content.upperBound
        else { return nil }
        return Data(bytes[key.whole])
    }

    /// The element at `offset`: its whole encoding and its content, or `nil` when it runs past the end.
    private static func element(in bytes: [UInt8], at offset: Int) -> (
        whole: Range<Int>, content: Range<Int>
    )? {
        guard offset + 2 <= bytes.count else { return nil }
        var length = Int(bytes[offset + 1])
        var header = 2
        if length & 0x80 != 0 {
            let count = length & 0x7F
            guard (1...4).contains(count), offset + 2 + count <= bytes.count else { return nil }
            length = bytes[offset + 2..<offset + 2 + count].reduce(0) { $0 << 8 | Int($1) }
            header += count
        }
        let end = offset + header + length
        guard end <= bytes.count else { return nil }
        return (offset..<end, offset + header..<end)
    }

    /// Whether `data` is exactly one SEQUENCE with a definite length, as every certificate is.
    static func isOneSequence(_ data: Data) -> Bool {
        let bytes = [UInt8](data)
        guard bytes.count >= 2, bytes[0] == 0x30 else { return false }
        var length = Int(bytes[1])
        var header = 2
        if length & 0x80 != 0 {
            let count = length & 0x7F
            guard (1...4).contains(count), bytes.count >= 2 + count else { return false }
            length = bytes[2..<2 + count].reduce(0) { $0 << 8 | Int($1) }
            header += count
        }
        return header + length == bytes.count
    }
}
