import Foundation
import SwiftyService
import SwiftyServiceTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An httpbin of the test's own, started and stopped with the project's `scripts/httpbin`.
struct OwnHTTPBin {
    let url: URL
    let pid: String
    /// The server's log, which the script leaves to its caller to remove.
    let log: URL?
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    static func start() async throws -> OwnHTTPBin {
        let output = try await run(["start"])
        var values: [String: String] = [:]
        for pair in output.replacingOccurrences(of: "export ", with: "").split(whereSeparator: \.isWhitespace)
        {
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { values[String(parts[0])] = String(parts[1]) }
        }
        guard let url = values["HTTPBIN_URL"].flatMap(URL.init(string:)), let pid = values["HTTPBIN_PID"]
        else {
            throw SetupError(description: "scripts/httpbin start printed no URL: \(output)")
        }
        return OwnHTTPBin(url: url, pid: pid, log: values["HTTPBIN_LOG"].map { URL(fileURLWithPath: $0) })
    }

    func stop() async throws {
        // Removed first (the server writes on to the open file unharmed): a test that stops its server in a
        // task from its defer may be the process's last, and the process does not wait for that task.
        if let log { try? FileManager.default.removeItem(at: log) }
        _ = try await Self.run(["stop", pid])
    }

    /// Runs the script on a thread of its own: it takes seconds, which must not block the small
    /// cooperative thread pool that every other test shares.
    private static func run(_ arguments: [String]) async throws -> String {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try runBlocking(arguments) })
            }
        }
    }

    private static func runBlocking(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = root.appendingPathComponent("scripts/httpbin")
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw SetupError(description: "scripts/httpbin \(arguments.joined(separator: " ")) failed")
        }
        return String(decoding: output, as: UTF8.self)
    }
}

/// Record against a real httpbin, stop it, replay: the same answers, and no secret in the file.
/// Relies on httpbin's `/anything`, `/status/418`, `/bytes/64` and `/response-headers`.
@Suite struct RecordReplayRealServerTests {
    let temporaryFiles = TemporaryFiles()

    @Test func aSessionRecordedAgainstHttpbinReplaysIdenticallyAfterTheServerStops() async throws {
        let server = try await OwnHTTPBin.start()
        var stopped = false
        defer { if !stopped { Task { try? await server.stop() } } }
        let file = temporaryFiles.cassette()
        let realm = uniqueRealm().setBaseURL(server.url)
            .addHeaders(["Authorization": "Bearer secret-bearer-token", "X-Api-Key": "secret-api-key"])
            .declareSecrets(headers: ["X-Api-Key"], queryKeys: ["access_token"])
        // No cookie store: the cookie /response-headers sets would go to URLSession's shared one, and from
        // there with every later request to 127.0.0.1 — any port, any test (it once replaced the redirect
        // suite's own Cookie header).
        let configuration = URLSessionBackend.defaultConfiguration()
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        realm.use(try RecordingBackend(recording: URLSessionBackend(configuration: configuration), to: file))

        let endpoints = [
            TestEndpoint(
                realm, "anything/users", parameters: ["page": 2, "access_token": "secret-query-token"]),
            TestEndpoint(realm, "anything/users", method: .post, parameters: ["name": "Ann", "admin": true]),
            TestEndpoint(realm, "status/418", validStatusCodes: .all),
            TestEndpoint(realm, "bytes/64"),
            TestEndpoint(
                realm, "response-headers",
                parameters: ["X-Trace": "abc", "Set-Cookie": "session=secret-cookie"]),
        ]
        var recorded: [Response] = []
        for endpoint in endpoints { recorded.append(try await endpoint.request()) }
        #expect(
            recorded[0].statusCode == 200 && recorded[2].statusCode == 418 && recorded[3].data.count == 64)

        try await server.stop()
        stopped = true
        await #expect(throws: ServiceError.self) {
            try await endpoints[0].override { $0.use(URLSessionBackend()) }.request()
        }

        // httpbin echoes the secrets it was sent, and the cookie /response-headers set; the cassette holds them
        // scrubbed, so the replayed bodies are the recorded ones with each secret value replaced.
        let secrets = ["Bearer secret-bearer-token", "secret-api-key", "secret-query-token", "secret-cookie"]
        func scrubbed(_ data: Data) -> Data {
            var text = String(decoding: data, as: UTF8.self)
            for secret in secrets {
                text = text.replacingOccurrences(of: secret, with: Redaction.headerPlaceholder)
            }
            return Data(text.utf8)
        }
        realm.use(try ReplayBackend(cassette: file))
        for (endpoint, original) in zip(endpoints, recorded) {
            let replayed = try await endpoint.request()
            let expected = endpoint.path == "bytes/64" ? original.data : scrubbed(original.data)
            #expect(replayed.statusCode == original.statusCode)
            #expect(replayed.data == expected, "\(endpoint.path)")
            #expect(replayed.header("Content-Type") == original.header("Content-Type"))
            #expect(replayed.header("X-Trace") == original.header("X-Trace"))
        }

        let text = try String(contentsOf: file, encoding: .utf8)
        #expect(
            recorded[0].data != scrubbed(recorded[0].data),
            "httpbin echoed the secrets, so scrubbing mattered")
        for secret in ["secret-bearer-token", "secret-api-key", "secret-query-token"] {
            #expect(!text.contains(secret), "\(secret) is in the cassette")
        }
        #expect(try Cassette.load(from: file).interactions.count == endpoints.count)

        do {
            _ = try await TestEndpoint(realm, "anything/users", parameters: ["page": 3]).request()
            Issue.record("expected no match")
        } catch let ServiceError.transport(_, underlying, _) {
            let unmatched = try #require(underlying as? UnmatchedInteraction)
            #expect(unmatched.request.hasSuffix("/anything/users?page=3"))
            #expect(unmatched.closest?.contains("/anything/users?access_token=REDACTED&page=2") == true)
        }
    }
}
