import Foundation
import SwiftyService
import Testing

/// Age and dates as the cache reads and generates them, against the cache server; the cache's clock is
/// moved by hand from the real time, the server's dates are real.
@Suite(.tags(.realServer), .timeLimit(.minutes(5)))
struct CacheAgeAndDateTests {
    @Test(arguments: CacheServer.backends)
    func aServedResponseCarriesItsStoredAgePlusItsTimeInTheCache(_ kind: ConformingBackend) async throws {
        let resource = try ScriptedResource(kind, headers: ["Cache-Control: max-age=600", "Age: 30"])
        _ = try await resource.get()
        resource.clock.advance(100)
        let hit = try await resource.get()
        #expect(hit.source == .cache)
        let age = try #require(hit.header("Age").flatMap { Int($0) })
        // 30 on arrival, 100 in the cache; the server's one-second Date and the loopback add a little.
        #expect((130...140).contains(age), "Age \(age)")
    }

    @Test(arguments: CacheServer.backends)
    func anAgeListOrTwoAgeLinesCountTheFirstAndAnInvalidAgeIsIgnored(_ kind: ConformingBackend) async throws {
        let cases: [([String], Bool)] = [
            (["Age: 7200, 0"], false), (["Age: 7200", "Age: 0"], false), (["Age: 0, 7200"], true),
            (["Age: 0", "Age: 7200"], true), (["Age: soon"], true), (["Age: -7200"], true),
            (["Age: 7200.0"], true),
            (["Age: 10"], true),
        ]
        for (age, reused) in cases {
            let resource = try ScriptedResource(kind, headers: ["Cache-Control: max-age=3600"] + age)
            _ = try await resource.get()
            #expect(try await resource.get().source == (reused ? .cache : .network), "\(age)")
        }
    }

    @Test(arguments: CacheServer.backends)
    func onlyTheThreeHTTPDateFormsMakeAnExpiresThatKeepsAResponseFresh(_ kind: ConformingBackend)
        async throws
    {
        let now = Date()
        func formatted(_ format: String, at date: Date = now + 3_600) -> String {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = format
            return formatter.string(from: date)
        }
        // A one-digit hour is only malformed before 10 o'clock (an hour from now may be 22:00, which "H"
        // writes as two digits): so 09:00 GMT the day after tomorrow, always ahead.
        var gmt = Calendar(identifier: .gregorian)
        gmt.timeZone = try #require(TimeZone(identifier: "GMT"))
        let nineOClock = try #require(gmt.date(bySettingHour: 9, minute: 0, second: 0, of: now + 2 * 86_400))
        let valid = [
            formatted("EEE, dd MMM yyyy HH:mm:ss 'GMT'"), formatted("EEEE, dd-MMM-yy HH:mm:ss 'GMT'"),
            formatted("EEE MMM d HH:mm:ss yyyy").replacingOccurrences(
                of: #" (\d) "#, with: "  $1 ", options: .regularExpression),
        ]
        let invalid = [
            formatted("EEE, dd MMM yyyy HH:mm:ss 'UTC'"), formatted("EEE dd MMM yyyy HH:mm:ss 'GMT'"),
            formatted("EEE,  dd MMM yyyy HH:mm:ss 'GMT'"), formatted("EEE, dd-MMM-yyyy HH:mm:ss 'GMT'"),
            formatted("EEE, dd MMM yyyy H:mm:ss 'GMT'", at: nineOClock), formatted("dd.MM.yy"), "0", "-1",
        ]
        for (expires, reused) in valid.map({ ($0, true) }) + invalid.map({ ($0, false) }) {
            let resource = try ScriptedResource(kind, headers: ["Expires: \(expires)"])
            _ = try await resource.get()
            #expect(try await resource.get().source == (reused ? .cache : .network), "Expires: \(expires)")
        }
    }

    @Test(arguments: CacheServer.backends)
    func anInvalidDateLetsTheTimeOfReceiptStandIn(_ kind: ConformingBackend) async throws {
        for headers in [
            ["Date: yesterday-ish", "Cache-Control: max-age=600"], ["Date: 0", "Expires: @now+600"],
        ] {
            let resource = try ScriptedResource(kind, headers: headers)
            _ = try await resource.get()
            resource.clock.advance(300)
            #expect(try await resource.get().source == .cache, "\(headers)")
            // To 1,300 s, well past 600: the server writes @now+600 by the real clock, while the time of
            // receipt is the cache's clock, which started at the real time when the resource was made; so
            // the Expires case stays fresh for 600 s plus however long the machine took to send the first
            // GET, which a loaded machine can make tens of seconds.
            resource.clock.advance(1_000)
            #expect(try await resource.get().source == .network, "\(headers)")
        }
    }
}
