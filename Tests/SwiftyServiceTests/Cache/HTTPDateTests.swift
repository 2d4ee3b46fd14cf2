import Foundation
import Testing

@testable import SwiftyService

/// HTTP dates exactly as RFC 9110 §5.6.7 spells them, and the cache's reading of Age, Date and Expires.
@Suite struct HTTPDateTests {
    let sunday = Date(timeIntervalSince1970: 784_111_777)  // Sun, 06 Nov 1994 08:49:37 GMT

    @Test func theThreeFormsReadAsTheSameInstant() {
        for text in [
            "Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994",
        ] {
            #expect(HTTPDate.parse(text, now: sunday) == sunday, "\(text)")
        }
        #expect(HTTPDate.parse("Wed Nov 16 08:49:37 1994") == sunday + 10 * 86_400)
    }

    @Test func anythingElseIsNoDate() {
        let invalid = [
            "Sun, 06 Nov 1994 08:49:37 UTC", "Sun 06 Nov 1994 08:49:37 GMT", "Sun,  06 Nov 1994 08:49:37 GMT",
            "Sun, 06-Nov-1994 08:49:37 GMT", "Sun, 6 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 8:49:37 GMT",
            "sun, 06 nov 1994 08:49:37 gmt", "Sun, 06 Nov 94 08:49:37 GMT", "Sun, 31 Feb 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Nov 1994 08:49:37 +0000", "02.01.18",
            "Sun, 06 Nov 1994",
            "Sunday, 06-Nov-94 08:49:37 UTC", "Sunday 06-Nov-94 08:49:37 GMT", "Sun, 06-Nov-94 08:49:37 GMT",
            "Sun Nov 6 08:49:37 1994", "Sun Nov  6 08:49:37 94", "", "0", "-1",
        ]
        for text in invalid { #expect(HTTPDate.parse(text, now: sunday) == nil, "\(text)") }
    }

    @Test func aCacheReadsTheThreeFormsInAnyCase() {
        // RFC 9111 §4.2: a cache recipient should match dates case-insensitively; the grammar stays strict.
        for text in [
            "sun, 06 nov 1994 08:49:37 gmt", "SUN, 06 NOV 1994 08:49:37 GMT", "Sun, 06 nOV 1994 08:49:37 gMt",
            "SUNDAY, 06-nov-94 08:49:37 gmt", "sun NOV  6 08:49:37 1994",
        ] {
            #expect(HTTPDate.parseForCache(text, now: sunday) == sunday, "\(text)")
        }
        #expect(HTTPDate.parseForCache("Sun, 06 Nov 1994 08:49:37 UTC", now: sunday) == nil)
        #expect(
            HTTPDate.parseForCache("sun,  06 nov 1994 08:49:37 gmt", now: sunday) == nil, "spaces still count"
        )
    }

    @Test func anRFC850YearMoreThanFiftyYearsAheadIsThePastCentury() throws {
        let now = try #require(HTTPDate.parse("Tue, 01 Dec 2026 00:00:00 GMT"))
        let fifty = try #require(HTTPDate.parse("Thursday, 18-Aug-50 07:00:00 GMT", now: now))
        #expect(HTTPDate.format(fifty).dropFirst(5) == "18 Aug 2050 07:00:00 GMT")
        let seventySeven = try #require(HTTPDate.parse("Thursday, 18-Aug-77 07:00:00 GMT", now: now))
        #expect(
            HTTPDate.format(seventySeven).dropFirst(5) == "18 Aug 1977 07:00:00 GMT",
            "2077 is more than 50 years ahead of December 2026")
        let seventySix = try #require(HTTPDate.parse("Tuesday, 18-Aug-76 07:00:00 GMT", now: now))
        #expect(HTTPDate.format(seventySix).dropFirst(5) == "18 Aug 2076 07:00:00 GMT", "2076 is not")
        let later = try #require(HTTPDate.parse("Wed, 01 Dec 2100 00:00:00 GMT"))
        let fifty2100 = try #require(HTTPDate.parse("Friday, 18-Aug-50 07:00:00 GMT", now: later))
        #expect(HTTPDate.format(fifty2100).dropFirst(5) == "18 Aug 2150 07:00:00 GMT")
    }

    @Test func ageIsTheFirstMemberAndAnInvalidOneIsIgnored() {
        #expect(Freshness.ageValue(HeaderFields(["Age": "7200, 0"])) == 7_200)
        #expect(Freshness.ageValue(HeaderFields(["Age": " 15 "])) == 15)
        #expect(Freshness.ageValue(HeaderFields(["Age": "0, 7200"])) == 0)
        #expect(Freshness.ageValue(HeaderFields(["Age": "x"])) == 0)
        #expect(Freshness.ageValue(HeaderFields(["Age": "-5"])) == 0)
        #expect(Freshness.ageValue(HeaderFields(["Age": "7200.0"])) == 0)
        #expect(Freshness.ageValue(HeaderFields()) == 0)
    }

    @Test func anInvalidDateIsTheTimeOfReceiptAndAnInvalidExpiresIsStale() {
        let received = sunday
        let headers = HeaderFields(["Date": "soon", "Expires": "Sun, 06 Nov 1994 08:59:37 GMT"])
        #expect(Freshness.lifetime(status: 200, headers: headers, responseTime: received) == 600)
        let badExpires = HeaderFields([
            "Date": "Sun, 06 Nov 1994 08:49:37 GMT", "Expires": "Sun, 06 Nov 1994 08:59:37 UTC",
        ])
        #expect(Freshness.lifetime(status: 200, headers: badExpires, responseTime: received) == 0)
    }

    @Test func quotedDirectiveValuesMayHoldCommas() {
        let control = CacheControl(#"no-cache="Set-Cookie, X-Secret", max-age=5, stale-while-revalidate=30"#)
        #expect(control.noCacheFields == ["set-cookie", "x-secret"] && !control.noCache)
        #expect(control.maxAge == 5 && control.staleWhileRevalidate == 30)
    }
}
