import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The certificates, keys and pins scripts/tls-fixtures made for this run, as `scripts/test` exports them.
enum TLSFixtures {
    static func value(_ variable: String) throws -> String {
        guard let value = ProcessInfo.processInfo.environment[variable], !value.isEmpty else {
            throw SetupError(description: "\(variable) is not set: run the tests with scripts/test")
        }
        return value
    }

    static func file(_ variable: String) throws -> URL { URL(fileURLWithPath: try value(variable)) }

    /// The test CA, the root of every leaf but the self-signed one.
    static func caRoots() throws -> [TLSCertificate] {
        try TLSCertificate.certificates(contentsOf: try file("TLS_CA_FILE"))
    }

    /// The pin of the "valid" leaf (also served by client-cert-required and tls12-only).
    static func validPin() throws -> PublicKeyPin { try PublicKeyPin(sha256: try value("TLS_VALID_PIN")) }

    /// The pin of another key (the self-signed leaf's).
    static func otherPin() throws -> PublicKeyPin { try PublicKeyPin(sha256: try value("TLS_OTHER_PIN")) }

    /// The client certificate and key, PEM.
    static func pemIdentity() throws -> ClientIdentity {
        try .pem(certificateFile: try file("TLS_CLIENT_CERT"), privateKeyFile: try file("TLS_CLIENT_KEY"))
    }

    /// The same certificate and key as PKCS#12.
    static func pkcs12Identity(passphrase: String? = nil) throws -> ClientIdentity {
        try .pkcs12(
            contentsOf: try file("TLS_CLIENT_P12"),
            passphrase: try passphrase ?? value("TLS_CLIENT_P12_PASSPHRASE"))
    }

    /// A policy that trusts the test CA, with whatever `change` adds.
    static func trustingCA(_ change: (inout TLSPolicy) throws -> Void = { _ in }) throws -> TLSPolicy {
        var policy = TLSPolicy(trustedRoots: try caRoots())
        try change(&policy)
        return policy
    }
}

/// What tls_server.py logged (`TLS_SERVER_LOG`): which requests reached it, over which connection.
enum TLSServerLog {
    /// A request the server received: its listener and connection number.
    struct Arrival: Hashable {
        let listener: String
        let connection: Int
    }

    /// Where each of `paths` arrived, if it did; waits `settle` first, so that bytes sent just before a
    /// failure would have been logged.
    static func arrivals(of paths: [String], settle: TimeInterval = 0.3) async throws -> [String: Arrival] {
        try await Task.sleep(for: .seconds(settle))
        let text = try String(contentsOf: try TLSFixtures.file("TLS_SERVER_LOG"), encoding: .utf8)
        var found: [String: Arrival] = [:]
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count == 4, fields[2] == "request", let connection = Int(fields[1]) else { continue }
            let path = String(fields[3])
            if paths.contains(path) {
                found[path] = Arrival(listener: String(fields[0]), connection: connection)
            }
        }
        return found
    }
}

/// A path no other request uses, so that the server's log tells this request apart.
func uniqueTLSPath(_ label: String) -> String { "/\(label)-\(UUID().uuidString)" }

extension ConformingBackend {
    /// Whether this backend carries out `policy` here; if not, a realm with it must be refused unsent.
    func carriesOut(_ policy: TLSPolicy) throws -> Bool {
        try make().supportedTLSFeatures.isSuperset(of: policy.requiredFeatures)
    }
}

/// One GET of a unique path to the TLS listener in `variable` on `kind`, from a realm with `policy`.
///
/// A backend that cannot carry out the policy must refuse it: `.invalidRequest` naming the backend and what
/// it lacks, and nothing reaching the server. That is checked here, and `nil` returned; otherwise the
/// outcome, and whether the request reached the server.
func sendUnderPolicy(
    _ policy: TLSPolicy?, to variable: String, on kind: ConformingBackend,
    backend: (any NetworkBackend)? = nil,
    realm configure: (ServiceRealm) -> Void = { _ in }
) async throws -> (result: Result<Response, ServiceError>, arrived: Bool)? {
    let backend = try backend ?? kind.make()
    let realm = uniqueRealm("tls").setBaseURL(try TLSServers.url(variable)).use(backend).setTimeout(10)
        .setTLSPolicy(policy)
    configure(realm)
    let path = uniqueTLSPath(kind.rawValue)
    let result: Result<Response, ServiceError>
    do {
        result = .success(try await TestEndpoint(realm, path).request())
    } catch let error as ServiceError {
        result = .failure(error)
    }
    let arrived = try await TLSServerLog.arrivals(of: [path])[path] != nil
    guard let policy, !backend.supportedTLSFeatures.isSuperset(of: policy.requiredFeatures) else {
        return (result, arrived)
    }
    let missing = policy.requiredFeatures.subtracting(backend.supportedTLSFeatures)
    let expected = ServiceError.InvalidRequestReason.unsupportedTLSPolicy(
        backend: String(describing: type(of: backend)), missing: missing)
    guard case let .failure(.invalidRequest(reason, _, url)) = result else {
        Issue.record("\(kind): a policy it cannot carry out (\(missing)) must be refused, got \(result)")
        return nil
    }
    #expect(reason == expected, "\(kind)")
    #expect(url.hasSuffix(path), "\(kind): the error names the URL")
    #expect(!arrived, "\(kind): nothing may reach the server")
    return nil
}
