import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `LoggingMiddleware` against httpbin: what the lines say, that secrets never reach them, and that the
/// cURL command replays the request.
@Suite("Logging against a real server", .timeLimit(.minutes(5)), .tags(.realServer))
struct LoggingRealServerTests {

    /// A realm on httpbin with every kind of secret (Authorization, Cookie, a declared secret header, a
    /// declared secret query key), logging with cURL commands into `lines`.
    private func loggedRealm(lines: CallbackRecorder<String>) throws -> ServiceRealm {
        try HTTPBin.realm(backend: URLSessionBackend())
            .addHeaders([
                "Authorization": "Bearer log-secret-bearer",
                "Cookie": "session=log-secret-cookie",
                "X-Api-Key": "log-secret-api-key",
                "X-Trace": "trace-log",
            ])
            .declareSecrets(headers: ["X-Api-Key"], queryKeys: ["access_token"])
            .addMiddleware(LoggingMiddleware(to: { lines.record($0) }, curl: true))
    }

    private static let logSecrets = [
        "log-secret-bearer", "log-secret-cookie", "log-secret-api-key", "log-secret-query-token",
    ]

    @Test("Logged lines name method, URL, status and attempt, and never a secret value")
    func loggingRedactsSecrets() async throws {
        // httpbin /anything (GET and POST): echoes what arrived; the log must not show it.
        let lines = CallbackRecorder<String>()
        let realm = try loggedRealm(lines: lines)

        _ = try await TestEndpoint(
            realm, "anything/log", parameters: ["access_token": "log-secret-query-token", "page": 2]
        ).request()
        _ = try await TestEndpoint(
            realm, "anything/log", method: .post, parameters: ["access_token": "log-secret-query-token"],
            body: .json([
                "apiKey": "log-secret-api-key", "token": "log-secret-query-token", "name": "visible",
            ])
        ).request()

        let log = lines.calls
        #expect(log.count == 4)
        for line in log {
            for secret in Self.logSecrets {
                #expect(!line.contains(secret), "\(secret) in: \(line)")
            }
        }
        let base = try httpbinURL("anything/log")
        let results = log.filter { !$0.hasPrefix("curl") }
        #expect(results.count == 2)
        #expect(results.first?.hasPrefix("GET \(base)?access_token=REDACTED&page=2 → 200 (") == true)
        #expect(results.last?.hasPrefix("POST \(base)?access_token=REDACTED → 200 (") == true)
        #expect(results.allSatisfy { $0.hasSuffix(", attempt 1)") }, "\(results)")
        let commands = log.filter { $0.hasPrefix("curl ") }
        #expect(commands.count == 2)
        #expect(commands.last?.contains("-X POST") == true)
        #expect(commands.last?.contains("visible") == true)
        #expect(commands.allSatisfy { $0.contains("'Authorization: <redacted>'") }, "\(commands)")
    }

    @Test("The logged cURL command, run by a shell, sends the same request with the secrets redacted")
    func curlCommandReplays() async throws {
        // httpbin /anything: echoes the POST the cURL command sends.
        let lines = CallbackRecorder<String>()
        let realm = try loggedRealm(lines: lines)
        let endpoint = TestEndpoint(
            realm, "anything/replay", method: .post, parameters: ["access_token": "log-secret-query-token"],
            body: .json(["apiKey": "log-secret-api-key", "name": "it's visible"]))
        let original = try await endpoint.request().echo()
        let command = try #require(lines.calls.first { $0.hasPrefix("curl ") })

        let output = try await runShell(command + " --silent --show-error --max-time 10")
        let replayed = try JSONDecoder().decode(Echo.self, from: output)

        #expect(replayed.method == "POST")
        #expect(replayed.url == (try httpbinURL("anything/replay?access_token=REDACTED")))
        #expect(original.url == (try httpbinURL("anything/replay?access_token=log-secret-query-token")))
        #expect(replayed.header("Authorization") == "<redacted>")
        #expect(replayed.header("Cookie") == "<redacted>")
        #expect(replayed.header("X-Api-Key") == "<redacted>")
        #expect(replayed.header("X-Trace") == "trace-log")
        #expect(replayed.header("Content-Type") == "application/json")
        #expect(replayed.json == .object(["apiKey": .string("<redacted>"), "name": .string("it's visible")]))
        #expect(
            original.json
                == .object(["apiKey": .string("log-secret-api-key"), "name": .string("it's visible")]))
    }

    @Test("A bearer token that also appears bare in a body never reaches the log")
    func bareBearerTokenInBodyIsScrubbed() async throws {
        // httpbin /anything: a token-revocation-like POST whose body names the token the header carries.
        let lines = CallbackRecorder<String>()
        let realm = try loggedRealm(lines: lines)

        _ = try await TestEndpoint(
            realm, "anything/revoke", method: .post, parameters: ["token": "log-secret-bearer"]
        ).request()

        let leaking = lines.calls.filter { $0.contains("log-secret-bearer") }
        #expect(leaking.isEmpty, "\(leaking)")
    }

    @Test("A secret with slashes (as base64 keys have) inside an Encodable JSON body never reaches the log")
    func slashedSecretInJSONBodyIsScrubbed() async throws {
        // httpbin /anything: the body holds the declared secret header's value; JSONEncoder writes "/" as "\/".
        let lines = CallbackRecorder<String>()
        let secret = "c2VjcmV0/a2V5+dmFsdWU="
        let realm = try HTTPBin.realm(backend: URLSessionBackend())
            .addHeader("X-Api-Key", withValue: secret)
            .declareSecrets(headers: ["X-Api-Key"])
            .addMiddleware(LoggingMiddleware(to: { lines.record($0) }, curl: true))

        let echo = try await TestEndpoint(
            realm, "anything/keys", method: .post, body: .json(["apiKey": secret])
        ).request().echo()
        #expect(echo.json == .object(["apiKey": .string(secret)]))

        let escaped = secret.replacingOccurrences(of: "/", with: #"\/"#)
        let leaking = lines.calls.filter { $0.contains(secret) || $0.contains(escaped) }
        #expect(leaking.isEmpty, "\(leaking)")
    }

    @Test(
        "Logging added before retries logs each call once with its final attempt; added after, every attempt")
    func loggingAroundRetries() async throws {
        // httpbin /status/503: always 503, so the call takes 3 attempts.
        let waits = CallbackRecorder<TimeInterval>()
        let outer = CallbackRecorder<String>()
        let outerRealm = try HTTPBin.realm(backend: URLSessionBackend())
            .addMiddleware(LoggingMiddleware(to: { outer.record($0) }))
            .addMiddleware(.retry(.instant(recordingWaitsIn: waits)))
        _ = try? await TestEndpoint(outerRealm, "status/503").request()
        #expect(outer.calls.count == 1)
        #expect(outer.calls.first?.contains("→ 503 (") == true)
        #expect(outer.calls.first?.hasSuffix(", attempt 3)") == true, "\(outer.calls)")

        let inner = CallbackRecorder<String>()
        let innerRealm = try HTTPBin.realm(backend: URLSessionBackend())
            .addMiddleware(.retry(.instant(recordingWaitsIn: waits)))
            .addMiddleware(LoggingMiddleware(to: { inner.record($0) }))
        _ = try? await TestEndpoint(innerRealm, "status/503").request()
        #expect(inner.calls.count == 3)
        #expect(
            inner.calls.map { $0.components(separatedBy: ", ").last ?? "" }
                == ["attempt 1)", "attempt 2)", "attempt 3)"])
    }

    /// Runs `command` with `/bin/sh -c` and returns its standard output.
    private func runShell(_ command: String) async throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command]
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        let finished = CallbackRecorder<Int32>()
        process.terminationHandler = { finished.record($0.terminationStatus) }
        try process.run()
        // Wait without blocking a thread of the cooperative pool; the echo is far smaller than a pipe's
        // buffer, so curl never waits for it to be read.
        let status = try await finished.first(within: 15)
        let data = output.fileHandleForReading.readDataToEndOfFile()
        guard status == 0 else {
            let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            throw SetupError(description: "`\(command)` exited with \(status): \(message)")
        }
        return data
    }
}
