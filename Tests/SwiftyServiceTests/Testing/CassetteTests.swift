import Foundation
import SwiftyService
import SwiftyServiceTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension TemporaryFiles {
    /// A cassette named after the test, in a directory of its own that writing the cassette makes.
    func cassette(_ name: String = #function) -> URL {
        uniquePath("cassette").appendingPathComponent("\(name.filter(\.isLetter)).json")
    }
}

/// Recording and replaying cassettes without a server: the recorded backend is a stub.
@Suite struct CassetteTests {
    let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com/v1")!)
    let temporaryFiles = TemporaryFiles()

    @Test func aRecordedSessionReplaysIdenticallyWithoutTheBackend() async throws {
        let file = temporaryFiles.cassette()
        let stub = StubBackend()
            .on(.path("/v1/json"), answer: .json(#"{"a": 1}"#))
            .on(
                .path("/v1/bytes"),
                answer: .init(
                    statusCode: 200, headers: ["Content-Type": "image/png"], data: Data([0, 255, 1]))
            )
            .on(.path("/v1/gone"), answer: .status(410, data: Data("gone".utf8)))
            .on(.path("/v1/down"), answer: .connectionRefused)
        realm.use(try RecordingBackend(recording: stub, to: file))
        let endpoints = ["json", "bytes", "gone", "down"].map {
            TestEndpoint(realm, $0, validStatusCodes: .all)
        }
        var recorded: [String] = []
        for endpoint in endpoints { recorded.append(await outcome(endpoint)) }

        realm.use(try ReplayBackend(cassette: file))
        var replayed: [String] = []
        for endpoint in endpoints { replayed.append(await outcome(endpoint)) }
        #expect(replayed == recorded)
        #expect(recorded[1].contains("00ff01"))

        let text = try String(contentsOf: file, encoding: .utf8)
        #expect(text.contains(#""base64" : "AP8B""#))
        #expect(text.contains(#""text" : "{\"a\": 1}""#))
    }

    func outcome(_ endpoint: TestEndpoint) async -> String {
        do {
            let response = try await endpoint.request()
            let type = response.header("Content-Type") ?? "-"
            return
                "\(response.statusCode) \(type) \(response.data.map { String(format: "%02x", $0) }.joined())"
        } catch {
            return "\(error)"
        }
    }

    @Test func queryOrderDoesNotMatterAndIdenticalRequestsReplayInOrder() async throws {
        var cassette = Cassette()
        for body in ["first", "second"] {
            cassette.interactions.append(
                .init(
                    request: .init(
                        method: "GET", url: "https://api.example.com/v1/q?b=2&a=1", headers: [:], body: nil),
                    response: .init(status: 200, headers: [:], body: .text(body)), error: nil))
        }
        let file = temporaryFiles.cassette()
        try cassette.write(to: file)
        realm.use(try ReplayBackend(cassette: file))
        let endpoint = TestEndpoint(realm, "q", parameters: ["a": 1, "b": 2])
        #expect(try endpoint.urlRequest().url?.query == "a=1&b=2")
        #expect(try await endpoint.request().mapString() == "first")
        #expect(try await endpoint.request().mapString() == "second")
        #expect(try await endpoint.request().mapString() == "second")
    }

    @Test func anUnmatchedRequestNamesItselfAndTheClosestRecordedOne() async throws {
        let file = temporaryFiles.cassette()
        realm.use(try RecordingBackend(recording: StubBackend(), to: file))
        _ = try await TestEndpoint(realm, "users/1").request()
        _ = try await TestEndpoint(realm, "posts/1", method: .post).request()

        realm.use(try ReplayBackend(cassette: file))
        do {
            _ = try await TestEndpoint(realm, "users/2").request()
            Issue.record("expected no match")
        } catch let ServiceError.transport(_, underlying, _) {
            let unmatched = try #require(underlying as? UnmatchedInteraction)
            #expect(unmatched.request == "GET https://api.example.com/v1/users/2")
            #expect(unmatched.closest == "GET https://api.example.com/v1/users/1")
            #expect("\(unmatched)".contains(file.lastPathComponent))
        }
    }

    @Test func bodiesCanBePartOfTheMatch() async throws {
        let file = temporaryFiles.cassette()
        realm.use(
            try RecordingBackend(
                recording: StubBackend { request in
                    .init(data: request.urlRequest.httpBody)
                }, to: file))
        _ = try await TestEndpoint(realm, "echo", method: .post, parameters: ["n": 1]).request()
        _ = try await TestEndpoint(realm, "echo", method: .post, parameters: ["n": 2]).request()

        realm.use(try ReplayBackend(cassette: file, matchingBody: true))
        #expect(
            try await TestEndpoint(realm, "echo", method: .post, parameters: ["n": 2]).request().mapString()
                == #"{"n":2}"#)
        await #expect(throws: ServiceError.self) {
            try await TestEndpoint(realm, "echo", method: .post, parameters: ["n": 3]).request()
        }
    }

    @Test func recordWhenMissingSendsAndAddsWhatTheCassetteLacks() async throws {
        let file = temporaryFiles.cassette()
        let spy = SpyBackend(StubBackend { _ in .json(#"{"fresh": true}"#) })
        realm.use(try ReplayBackend(cassette: file, mode: .recordWhenMissing(spy)))
        #expect(try await TestEndpoint(realm, "new").request().mapString() == #"{"fresh": true}"#)
        #expect(try await TestEndpoint(realm, "new").request().mapString() == #"{"fresh": true}"#)
        #expect(spy.requests.count == 1)
        #expect(try Cassette.load(from: file).interactions.count == 1)
    }

    @Test func secretsNeverReachTheCassette() async throws {
        let file = temporaryFiles.cassette()
        realm.addHeaders([
            "Authorization": "Bearer top-secret-1", "X-Api-Key": "top-secret-2", "Cookie": "s=top-secret-3",
        ])
        .declareSecrets(headers: ["x-api-key"], queryKeys: ["token"])
        let stub = StubBackend { _ in .init(headers: ["Set-Cookie": "s=top-secret-4"], data: Data("ok".utf8))
        }
        realm.use(try RecordingBackend(recording: stub, to: file, redaction: Redaction(headers: ["X-Extra"])))
        _ = try await TestEndpoint(
            realm, "x", parameters: ["token": "top-secret-5", "page": 1],
            headers: ["X-Extra": "top-secret-6"]
        ).request()
        let text = try String(contentsOf: file, encoding: .utf8)
        #expect(!text.contains("top-secret"))
        #expect(text.contains("page=1&token=REDACTED"))
        #expect(text.contains("<redacted>"))

        realm.use(try ReplayBackend(cassette: file))
        let replayed = try await TestEndpoint(realm, "x", parameters: ["token": "another", "page": 1])
            .request()
        #expect(try replayed.mapString() == "ok")
    }

    @Test func malformedOrTruncatedCassettesGiveAClearError() throws {
        let file = temporaryFiles.cassette()
        try FileManager.default.createDirectory(
            at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        var cassette = Cassette()
        cassette.interactions.append(
            .init(
                request: .init(method: "GET", url: "https://a/b", headers: [:], body: nil),
                response: .init(status: 200, headers: [:], body: .text("ok")), error: nil))
        try cassette.write(to: file)
        let whole = try Data(contentsOf: file)
        let cases: [(Data, String)] = [
            (whole.prefix(whole.count / 2), "cut short"),
            (Data("not json at all".utf8), "not valid JSON"),
            (
                Data(#"{"version": 1, "interactions": [{"response": {"status": 200, "headers": {}}}]}"#.utf8),
                "request"
            ),
            (
                Data(
                    #"{"version": 1, "interactions": [{"request": {"method": 1, "url": "x", "headers": {}}}]}"#
                        .utf8), "wrong value"
            ),
            (Data(), "not valid JSON"),
        ]
        for (bytes, problem) in cases {
            try bytes.write(to: file)
            do {
                _ = try ReplayBackend(cassette: file)
                Issue.record("expected \(problem)")
            } catch let error as CassetteError {
                #expect(error.file == file)
                #expect(error.description.contains(file.path))
                #expect(error.description.contains(problem), "\(error)")
            }
        }
        let missing = file.deletingLastPathComponent().appendingPathComponent("missing.json")
        #expect(throws: CassetteError.self) { try ReplayBackend(cassette: missing) }
    }

    @Test func theCassetteOnDiskIsAlwaysWholeWhileItIsBeingWritten() async throws {
        let file = temporaryFiles.cassette()
        realm.use(
            try RecordingBackend(
                recording: StubBackend { _ in .init(data: Data(repeating: 65, count: 512)) }, to: file))
        _ = try await TestEndpoint(realm, "0").request()
        // The reader runs on a thread of its own, reading the file over and over while it is rewritten; a
        // file written in place would sooner or later be read half-written. It rests 100 µs between reads:
        // a reader spinning flat out fed ThreadSanitizer so many events that its runtime crashed in CI.
        let reads = CallbackRecorder<Result<Int, CassetteError>>()
        let stop = CallbackRecorder<Bool>()
        Thread.detachNewThread {
            var count = 0
            while stop.calls.isEmpty {
                do {
                    _ = try Cassette.load(from: file)
                    count += 1
                } catch let error as CassetteError {
                    reads.record(.failure(error))
                    return
                } catch {}
                usleep(100)
            }
            reads.record(.success(count))
        }
        var written = 1
        while written < 80 {
            _ = try await TestEndpoint(realm, "\(written)").request()
            written += 1
            await Task.yield()
        }
        try await Task.sleep(nanoseconds: 50_000_000)
        stop.record(true)
        let outcome = try await reads.first()
        #expect(try outcome.get() > 0)
        #expect(try Cassette.load(from: file).interactions.count == 80)
    }
}
