import Foundation
import SwiftyService
import SwiftyServiceCurl
import Testing

/// The suite's server that scripts/test starts (Tests/Servers/cache_tests_server.py).
enum CacheTestsServer {
    static func url() throws -> URL {
        guard let value = ProcessInfo.processInfo.environment["CACHE_TESTS_URL"], let url = URL(string: value)
        else {
            throw SetupError(
                description: "CACHE_TESTS_URL is not set: run the tests with scripts/test, which starts it")
        }
        return url
    }
}

/// The http-tests/cache-tests suite, run as for a browser's (private) cache, through a realm's ``HTTPCache``
/// on each shipped backend: every required or optimal test passes but those the Caching article
/// (Sources/SwiftyService/SwiftyService.docc/Caching.md) names, with the reason, for that backend.
///
/// The suite's tests measure time in seconds (a response two seconds old, a pause of three): a test that
/// does not pass is run once more, so that a machine busy with other work does not make a cache's answer
/// late enough to count as another answer. One that fails twice fails.
@Suite(
    "HTTP cache: the http-tests/cache-tests suite", .serialized, .timeLimit(.minutes(5)), .tags(.realServer))
struct CacheTestsSuiteTests {
    @Test(arguments: CacheServer.backends)
    func everyTestPassesButThoseTheCachingArticleNames(_ kind: ConformingBackend) async throws {
        let tests = try CacheSuite.load()
        let byID = Dictionary(uniqueKeysWithValues: tests.map { ($0.id, $0) })
        let runner = CacheSuiteRunner(
            server: try CacheTestsServer.url(), backend: try kind.make(),
            manualRedirects: kind == .curl
                ? try CurlBackend(redirects: .never) : URLSessionBackend(redirects: .never))
        var outcomes = await runner.run(tests)
        func passes(_ id: String) -> Bool {
            [.pass, .yes].contains(CacheSuite.result(of: id, in: byID, outcomes: outcomes))
        }
        let again = tests.filter { !passes($0.id) }
        for (id, outcome) in await runner.run(again) where outcome == .passed { outcomes[id] = outcome }

        var passed: [String: Int] = [:]
        var total: [String: Int] = [:]
        var failing: [String: String] = [:]
        for test in tests {
            total[test.kind, default: 0] += 1
            if passes(test.id) {
                passed[test.kind, default: 0] += 1
            } else if test.kind != "check" {
                let result = CacheSuite.result(of: test.id, in: byID, outcomes: outcomes)
                failing[test.id] =
                    "[\(test.kind), \(result.rawValue)] \(outcomes[test.id].map { "\($0)" } ?? "")"
            }
        }
        print(
            "cache-tests on \(kind): required \(passed["required", default: 0]) of \(total["required", default: 0]),"
                + " optimal \(passed["optimal", default: 0]) of \(total["optimal", default: 0]),"
                + " checks saying yes \(passed["check", default: 0]) of \(total["check", default: 0])")
        for (id, why) in failing.sorted(by: { $0.key < $1.key }) { print("  not passed: \(id) \(why)") }

        let documented = try Self.documentedFailures(
            for: kind, among: Set(tests.filter { $0.kind != "check" }.map(\.id)))
        for (id, why) in failing where !documented.contains(id) {
            Issue.record("\(kind): \(id) does not pass, and the Caching article does not say why: \(why)")
        }
        for id in documented.subtracting(failing.keys) {
            Issue.record("\(kind): \(id) passes now: take it off the Caching article's list")
        }
    }

    /// The tests the Caching article lists as not passing on `kind`: the test ids of `ids` in the
    /// bullets after the paragraph on the suite, those marked "`URLSessionBackend` only" or "`CurlBackend`
    /// only" for that backend alone.
    static func documentedFailures(for kind: ConformingBackend, among ids: Set<String>) throws -> Set<String>
    {
        let article = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/SwiftyService/SwiftyService.docc/Caching.md")
        let text = try String(contentsOf: article, encoding: .utf8)
        // Found with line ends read as spaces (one character for one, so the offsets hold): wrapping may move.
        let marker = "the run disagree):"
        let flat = text.replacingOccurrences(of: "\n", with: " ")
        guard let found = flat.range(of: marker) else {
            throw CacheSuiteError(description: "the Caching article has no list of failing tests")
        }
        let end = text.index(
            text.startIndex, offsetBy: flat.distance(from: flat.startIndex, to: found.upperBound))
        // The bullets, each with its continuation lines, up to the first line that is neither after them.
        var bullets: [String] = []
        for line in text[end...].split(separator: "\n", omittingEmptySubsequences: false)
            .dropFirst()
        {
            if line.isEmpty, bullets.isEmpty { continue }
            if line.hasPrefix("- ") {
                bullets.append(String(line))
            } else if line.hasPrefix("  "), !bullets.isEmpty {
                bullets[bullets.count - 1] += " " + line
            } else {
                break
            }
        }
        var documented: Set<String> = []
        for bullet in bullets {
            if bullet.contains("`URLSessionBackend` only"), kind != .urlSession { continue }
            if bullet.contains("`CurlBackend` only"), kind != .curl { continue }
            let quoted = bullet.split(separator: "`", omittingEmptySubsequences: false).enumerated()
                .filter { $0.offset % 2 == 1 }.map { String($0.element) }
            documented.formUnion(quoted.filter(ids.contains))
        }
        return documented
    }
}
