import Foundation
import SwiftyService
import Testing

/// A kept connection that the server resets when the next request arrives: libcurl sends that request
/// again on a new connection, which for a body means sending it again from its start
/// (misbehaving_server.py, /echo-then-reset: echoes the body, keeps the connection, resets it on the next).
@Suite("CurlBackend and a kept connection that dies", .timeLimit(.minutes(5)), .tags(.realServer))
struct CurlRetryOnNewConnectionTests {
    @Test func aBodyWhoseConnectionIsResetArrivesWholeOnANewOne() async throws {
        let realm = uniqueRealm().setBaseURL(try MisbehavingServer.url()).use(try CurlBackend())
        let bodies = [
            "the first, on a new connection", "the second, reset, then sent again",
            String(repeating: "x", count: 3_000),
        ]
        for text in bodies {
            let echoed = try await TestEndpoint(
                realm, "echo-then-reset", method: .post,
                body: .data(Data(text.utf8), contentType: "text/plain")
            ).request().mapString()
            #expect(echoed == text)
        }
    }
}
