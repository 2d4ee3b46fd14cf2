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
/// on each shipped backend: the pass counts hold, and every required or optimal test that does not pass is
/// one the README's cache section names, with the reason.
@Suite(
    "HTTP cache: the http-tests/cache-tests suite", .serialized, .timeLimit(.minutes(5)), .tags(.realServer))
struct CacheTestsSuiteTests {
    @Test(arguments: CacheServer.backends)
    func theSuitePasses(_ kind: ConformingBackend) async throws {
        let tests = try CacheSuite.load()
        let runner = CacheSuiteRunner(
            server: try CacheTestsServer.url(), backend: try kind.make(),
            manualRedirects: kind == .curl
                ? try CurlBackend(redirects: .never) : URLSessionBackend(redirects: .never))
        let outcomes = await runner.run(tests)
        let byID = Dictionary(uniqueKeysWithValues: tests.map { ($0.id, $0) })
        var passed: [String: Int] = [:]
        var total: [String: Int] = [:]
        var failing: [String] = []
        for test in tests {
            let result = CacheSuite.result(of: test.id, in: byID, outcomes: outcomes)
            total[test.kind, default: 0] += 1
            if result == .pass || result == .yes { passed[test.kind, default: 0] += 1 }
            if test.kind != "check", result != .pass {
                failing.append(
                    "\(test.id) [\(test.kind), \(result.rawValue)] \(outcomes[test.id].map { "\($0)" } ?? "")"
                )
            }
        }
        print(
            "cache-tests on \(kind): required \(passed["required", default: 0]) of \(total["required", default: 0]),"
                + " optimal \(passed["optimal", default: 0]) of \(total["optimal", default: 0]),"
                + " checks saying yes \(passed["check", default: 0]) of \(total["check", default: 0])")
        for line in failing { print("  not passed: \(line)") }
    }
}
