import Foundation
import SwiftyService
import Testing

@testable import SwiftyService

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A libcurl older than 7.77 takes no roots in memory (`CURLOPT_CAINFO_BLOB`): CurlBackend then writes the
/// policy's roots to a private temporary file for `CURLOPT_CAINFO`. Debian's libcurl takes blobs, so the
/// path is taken here by telling a backend its libcurl does not.
@Suite(
    "CurlBackend on a libcurl without roots in memory", .serialized, .timeLimit(.minutes(5)),
    .tags(.realServer))
struct CurlTLSFallbackTests {
    static let older = CurlTLSSupport(
        features: CurlTLSSupport.shared.features, takesRootsInMemory: false,
        systemRootDirectory: CurlTLSSupport.shared.systemRootDirectory,
        systemRootFile: CurlTLSSupport.shared.systemRootFile)

    static func rootFiles() throws -> Set<String> {
        let directory = FileManager.default.temporaryDirectory
        return Set(
            try FileManager.default.contentsOfDirectory(atPath: directory.path)
                .filter { $0.hasPrefix("swiftyservice-roots-") }
                .map { directory.appendingPathComponent($0).path })
    }

    @Test func aPrivateCAIsTrustedThroughTheFile() async throws {
        // The backend's roots' file goes with its options, which its realm keeps as long as the process runs:
        // removed here instead, where this libcurl takes roots in memory and so no other test writes one.
        let before = try Self.rootFiles()
        defer {
            if CurlTLSSupport.shared.takesRootsInMemory {
                for file in (try? Self.rootFiles().subtracting(before)) ?? [] {
                    try? FileManager.default.removeItem(atPath: file)
                }
            }
        }
        let backend = try CurlBackend(tlsSupport: Self.older)
        let policy = try TLSFixtures.trustingCA()
        let sent = try #require(
            try await sendUnderPolicy(policy, to: "TLS_VALID_URL", on: .curl, backend: backend))
        #expect(sent.result.statusCode == 200, "\(sent.result)")
        // Only the roots go there: with no roots, no file, and the system's rules.
        let pinsOnly = TLSPolicy(pinnedPublicKeys: [try TLSFixtures.validPin()])
        let unknown = try #require(
            try await sendUnderPolicy(pinsOnly, to: "TLS_VALID_URL", on: .curl, backend: backend))
        #expect(unknown.result.error?.tlsFailure == .unknownIssuer, "\(unknown.result)")
    }

    @Test func theFileIsReadableByThisUserOnlyAndGoesWithItsOptions() throws {
        let before = try Self.rootFiles()
        var options: CurlTLSOptions? = try CurlTLSOptions(try TLSFixtures.trustingCA(), support: Self.older)
        let made = try Self.rootFiles().subtracting(before)
        #expect(made.count == 1)
        for file in made {
            let attributes = try FileManager.default.attributesOfItem(atPath: file)
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
            #expect(try String(contentsOfFile: file, encoding: .utf8).contains("BEGIN CERTIFICATE"))
        }
        withExtendedLifetime(options) {}
        options = nil
        #expect(made.isDisjoint(with: try Self.rootFiles()), "the roots' file outlived its options")
    }
}
