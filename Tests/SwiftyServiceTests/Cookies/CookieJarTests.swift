import Foundation
import Testing

@testable import SwiftyService

@Suite struct CookieJarTests {
    /// A clock the tests move by hand, so expiry never depends on how fast they run.
    final class Clock: @unchecked Sendable {
        private let lock = NSLock()
        private var current = Date(timeIntervalSince1970: 1_700_000_000)

        var now: Date { lock.withLock { current } }

        func advance(by seconds: TimeInterval) {
            lock.withLock { current += seconds }
        }
    }

    let clock = Clock()

    func makeJar() -> CookieJar {
        let clock = clock
        return CookieJar(now: { clock.now })
    }

    func url(_ text: String) -> URL {
        URL(string: text)!
    }

    /// A fresh directory for one test's files; removed by `removeDirectory`.
    func makeDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "CookieJarTests-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    func removeDirectory(_ directory: URL) {
        try? FileManager.default.removeItem(at: directory)
    }

    /// `name=value` of every cookie `jar` sends to `address`, in sending order.
    func sent(_ jar: CookieJar, to address: String) -> [String] {
        jar.cookies(for: url(address)).map { "\($0.name)=\($0.value)" }
    }

    // MARK: Parsing (RFC 6265 §5.2)

    @Test func theNameAndValueAreTrimmedAndTheValueMayContainEquals() {
        let jar = makeJar()
        jar.store(
            setCookieHeaders: [" sid = a=b ; Path=/", "\tother\t=\t1\t"], from: url("https://example.com/"))
        #expect(Set(sent(jar, to: "https://example.com/")) == ["sid=a=b", "other=1"])
    }

    @Test func aHeaderWithoutEqualsOrWithAnEmptyNameIsIgnoredAsRFC6265Says() {
        let jar = makeJar()
        jar.store(
            setCookieHeaders: ["justtext; Path=/", "=value", " =value", ""], from: url("https://example.com/")
        )
        #expect(jar.cookies.isEmpty)
    }

    @Test func attributesAreCaseInsensitiveAndUnknownOnesAreIgnored() throws {
        let jar = makeJar()
        jar.store(
            setCookieHeaders: ["a=1; pAtH=/x; SECURE; httponly; Foo=bar; DOMAIN=Example.COM; SameSite=Lax"],
            from: url("https://api.example.com/")
        )
        let cookie = try #require(jar.cookies.first)
        #expect(cookie.path == "/x")
        #expect(cookie.isSecure)
        #expect(cookie.isHTTPOnly)
        #expect(cookie.domain == "example.com")
        #expect(!cookie.isHostOnly)
        #expect(cookie.expiresAt == nil)
    }

    @Test func maxAgeWinsOverExpiresWhicheverComesFirst() {
        let jar = makeJar()
        jar.store(
            setCookieHeaders: [
                "a=1; Max-Age=60; Expires=Wed, 09 Jun 2100 10:18:14 GMT",
                "b=2; Expires=Wed, 09 Jun 2100 10:18:14 GMT; Max-Age=60",
            ],
            from: url("https://example.com/")
        )
        let expiries = Set(jar.cookies.map(\.expiresAt))
        #expect(expiries == [clock.now.addingTimeInterval(60)])
    }

    @Test func maxAgeZeroOrNegativeDeletesTheStoredCookie() {
        let jar = makeJar()
        let site = url("https://example.com/")
        jar.store(setCookieHeaders: ["a=1; Max-Age=600", "b=2", "c=3"], from: site)
        jar.store(setCookieHeaders: ["a=; Max-Age=0", "b=; Max-Age=-1"], from: site)
        #expect(sent(jar, to: "https://example.com/") == ["c=3"])
    }

    @Test func aNonNumericMaxAgeIsIgnored() {
        let jar = makeJar()
        jar.store(
            setCookieHeaders: [
                "a=1; Max-Age=soon", "b=2; Max-Age=1.5", "c=3; Max-Age=-", "d=4; Max-Age=0x10",
            ],
            from: url("https://example.com/")
        )
        #expect(jar.cookies.count == 4)
        #expect(jar.cookies.allSatisfy { $0.expiresAt == nil })
    }

    @Test func anExpiresInThePastDeletesTheStoredCookie() {
        let jar = makeJar()
        let site = url("https://example.com/")
        jar.store(setCookieHeaders: ["a=1; Max-Age=600"], from: site)
        jar.store(setCookieHeaders: ["a=1; Expires=Thu, 01 Jan 1970 00:00:00 GMT"], from: site)
        #expect(jar.cookies.isEmpty)
    }

    @Test func anUnparsableExpiresIsIgnoredLeavingASessionCookie() throws {
        let jar = makeJar()
        jar.store(setCookieHeaders: ["a=1; Expires=someday"], from: url("https://example.com/"))
        let cookie = try #require(jar.cookies.first)
        #expect(cookie.expiresAt == nil)
    }

    // MARK: Cookie dates (RFC 6265 §5.1.1)

    @Test(arguments: [
        "Wed, 09 Jun 2021 10:18:14 GMT",
        "Wednesday, 09-Jun-21 10:18:14 GMT",
        "Wed Jun  9 10:18:14 2021",
        "09 JUNE 2021 10:18:14",
        "10:18:14 2021 9 jun",
    ])
    func theCookieDateParserReadsTheRFCsForms(text: String) {
        #expect(CookieDate.parse(text) == Date(timeIntervalSince1970: 1_623_233_894))
    }

    @Test func twoDigitYearsFrom70Are19xxAndBelow70Are20xx() {
        #expect(CookieDate.parse("09 Jun 70 00:00:00") == Date(timeIntervalSince1970: 13_737_600))
        #expect(CookieDate.parse("09 Jun 69 00:00:00") == Date(timeIntervalSince1970: 3_137_961_600))
        #expect(CookieDate.parse("29 Feb 2024 00:00:00") == Date(timeIntervalSince1970: 1_709_164_800))
    }

    @Test(arguments: [
        "",
        "Wed, 09 Jun 2021",
        "Wed, 32 Jun 2021 10:18:14 GMT",
        "Wed, 00 Jun 2021 10:18:14 GMT",
        "Wed, 09 Jun 2021 24:18:14 GMT",
        "Wed, 09 Jun 2021 10:60:14 GMT",
        "Wed, 09 Jun 2021 10:18:60 GMT",
        "Wed, 09 Foo 2021 10:18:14 GMT",
        "Wed, 09 Jun 1600 10:18:14 GMT",
        "Mon, 29 Feb 2021 10:18:14 GMT",
        "Wed, 009 Jun 2021 10:18:14 GMT",
        "Wed, 09 Jun 20211 10:18:14 GMT",
        "Wed, 09 Jun 2021 10:18:145 GMT",
    ])
    func theCookieDateParserRejectsInvalidDates(text: String) {
        #expect(CookieDate.parse(text) == nil)
    }

    // MARK: Domains (RFC 6265 §5.3)

    @Test func aDomainThatDoesNotCoverTheHostIsIgnored() {
        let jar = makeJar()
        let api = url("https://api.example.com/")
        jar.store(
            setCookieHeaders: [
                "a=1; Domain=evil.com", "b=2; Domain=ample.com", "c=3; Domain=x.api.example.com",
            ],
            from: api)
        #expect(jar.cookies.isEmpty)
    }

    @Test func aParentDomainIsAcceptedAndSentToItsSubdomains() {
        let jar = makeJar()
        jar.store(setCookieHeaders: ["a=1; Domain=.Example.com"], from: url("https://api.example.com/"))
        #expect(jar.cookies.first?.domain == "example.com")
        #expect(sent(jar, to: "https://other.example.com/") == ["a=1"])
        #expect(sent(jar, to: "https://example.com/") == ["a=1"])
        #expect(sent(jar, to: "https://notexample.com/").isEmpty)
        #expect(sent(jar, to: "https://example.com.evil.org/").isEmpty)
    }

    @Test func aDotlessDomainIsIgnoredUnlessItIsTheHostItself() throws {
        let jar = makeJar()
        jar.store(setCookieHeaders: ["a=1; Domain=com"], from: url("https://api.example.com/"))
        #expect(jar.cookies.isEmpty)
        jar.store(setCookieHeaders: ["b=2; Domain=localhost"], from: url("http://localhost:8080/"))
        let cookie = try #require(jar.cookies.first)
        #expect(cookie.isHostOnly)
        #expect(cookie.domain == "localhost")
    }

    @Test func withoutADomainTheCookieIsSentOnlyToTheExactHost() {
        let jar = makeJar()
        jar.store(setCookieHeaders: ["a=1"], from: url("https://api.example.com/"))
        #expect(jar.cookies.first?.isHostOnly == true)
        #expect(sent(jar, to: "https://api.example.com/x") == ["a=1"])
        #expect(sent(jar, to: "https://sub.api.example.com/").isEmpty)
        #expect(sent(jar, to: "https://example.com/").isEmpty)
    }

    @Test func ipAddressHostsGetOnlyHostOnlyCookies() {
        let jar = makeJar()
        jar.store(
            setCookieHeaders: ["a=1; Domain=10.0.0.1", "b=2; Domain=0.0.1", "c=3"],
            from: url("http://10.0.0.1/"))
        jar.store(setCookieHeaders: ["d=4", "e=5; Domain=::2"], from: url("http://[::1]:8080/"))
        #expect(jar.cookies.allSatisfy { $0.isHostOnly })
        #expect(Set(sent(jar, to: "http://10.0.0.1/")) == ["a=1", "c=3"])
        #expect(sent(jar, to: "http://[::1]/") == ["d=4"])
        #expect(sent(jar, to: "http://110.0.0.1/").isEmpty)
    }

    @Test func hostsCompareCaseInsensitivelyAndLoseATrailingDot() {
        let jar = makeJar()
        jar.store(setCookieHeaders: ["a=1"], from: url("https://API.Example.COM./"))
        #expect(jar.cookies.first?.domain == "api.example.com")
        #expect(sent(jar, to: "https://api.example.com/") == ["a=1"])
        #expect(sent(jar, to: "https://Api.Example.com./") == ["a=1"])
    }

    // MARK: Paths (RFC 6265 §5.1.4)

    @Test(arguments: [
        ("https://example.com", "/"),
        ("https://example.com/", "/"),
        ("https://example.com/a", "/"),
        ("https://example.com/a/b", "/a"),
        ("https://example.com/a/b/", "/a/b"),
        ("https://example.com/a/b?c=/d/e", "/a"),
    ])
    func theDefaultPathIsTheRequestPathUpToItsLastSlash(address: String, expectedPath: String) {
        let jar = makeJar()
        jar.store(setCookieHeaders: ["a=1"], from: url(address))
        #expect(jar.cookies.first?.path == expectedPath)
    }

    @Test func aPathAttributeNotStartingWithSlashFallsBackToTheDefaultPath() {
        let jar = makeJar()
        jar.store(
            setCookieHeaders: ["a=1; Path=relative", "b=2; Path=", "c=3; Path=/x; Path=y"],
            from: url("https://example.com/docs/page"))
        #expect(jar.cookies.map(\.path) == ["/docs", "/docs", "/docs"])
    }

    @Test func pathsMatchOnlyAtSlashBoundaries() {
        let jar = makeJar()
        jar.store(setCookieHeaders: ["a=1; Path=/foo", "b=2; Path=/foo/"], from: url("https://example.com/"))
        #expect(sent(jar, to: "https://example.com/foo") == ["a=1"])
        #expect(sent(jar, to: "https://example.com/foo/") == ["b=2", "a=1"])
        #expect(sent(jar, to: "https://example.com/foo/bar") == ["b=2", "a=1"])
        #expect(sent(jar, to: "https://example.com/foobar").isEmpty)
        #expect(sent(jar, to: "https://example.com/").isEmpty)
    }

    // MARK: Secure (RFC 6265bis)

    @Test func aSecureCookieFromAnHTTPURLIsIgnored() {
        let jar = makeJar()
        jar.store(setCookieHeaders: ["a=1; Secure"], from: url("http://example.com/"))
        #expect(jar.cookies.isEmpty)
    }

    @Test func secureCookiesAreSentOnlyOverHTTPS() {
        let jar = makeJar()
        jar.store(setCookieHeaders: ["a=1; Secure", "b=2"], from: url("https://example.com/"))
        #expect(sent(jar, to: "http://example.com/") == ["b=2"])
        #expect(Set(sent(jar, to: "https://example.com/")) == ["a=1", "b=2"])
    }

    @Test func anHTTPURLCannotReplaceOrDeleteASecureCookie() {
        let jar = makeJar()
        jar.store(
            setCookieHeaders: ["a=secret; Secure; Domain=example.com; Path=/"],
            from: url("https://example.com/"))
        jar.store(
            setCookieHeaders: ["a=forged; Domain=example.com; Path=/"], from: url("http://example.com/"))
        jar.store(setCookieHeaders: ["a=; Max-Age=0"], from: url("http://example.com/"))
        jar.store(setCookieHeaders: ["a=shadow; Path=/deeper"], from: url("http://www.example.com/"))
        #expect(sent(jar, to: "https://www.example.com/deeper") == ["a=secret"])

        jar.store(setCookieHeaders: ["a=new; Domain=example.com; Path=/"], from: url("https://example.com/"))
        #expect(sent(jar, to: "http://example.com/") == ["a=new"])
    }

    // MARK: Storage

    @Test func aReplacementKeepsTheOriginalCreationTime() throws {
        let jar = makeJar()
        let site = url("https://example.com/")
        jar.store(setCookieHeaders: ["a=1"], from: site)
        let created = clock.now
        clock.advance(by: 100)
        jar.store(setCookieHeaders: ["a=2; Max-Age=600"], from: site)
        let cookie = try #require(jar.cookies.first)
        #expect(jar.cookies.count == 1)
        #expect(cookie.value == "2")
        #expect(cookie.createdAt == created)
        #expect(cookie.expiresAt == clock.now.addingTimeInterval(600))
    }

    @Test func expiredCookiesAreNeverReturned() {
        let jar = makeJar()
        jar.store(
            setCookieHeaders: ["short=1; Max-Age=10", "long=2; Max-Age=1000"],
            from: url("https://example.com/"))
        clock.advance(by: 10)
        #expect(sent(jar, to: "https://example.com/") == ["long=2"])
        #expect(jar.cookies.map(\.name) == ["long"])
        #expect(jar.description == "CookieJar(1 cookie)")
    }

    @Test func aCookieOver4096BytesOfNameAndValueIsIgnored() {
        let jar = makeJar()
        let site = url("https://example.com/")
        jar.store(setCookieHeaders: ["ab=" + String(repeating: "v", count: 4094)], from: site)
        jar.store(setCookieHeaders: ["cd=" + String(repeating: "v", count: 4095)], from: site)
        #expect(jar.cookies.map(\.name) == ["ab"])
    }

    @Test func aFullDomainDropsExpiredCookiesBeforeLiveOnes() {
        let jar = makeJar()
        let site = url("https://example.com/")
        // Stored last, so it is the most recently accessed: only its expiry can make it go first.
        jar.store(setCookieHeaders: (1..<50).map { "c\($0)=1" }, from: site)
        jar.store(setCookieHeaders: ["dying=1; Max-Age=5"], from: site)
        clock.advance(by: 5)
        jar.store(setCookieHeaders: ["newest=1"], from: site)
        let names = Set(jar.cookies.map(\.name))
        #expect(names.count == 50)
        #expect(!names.contains("dying"))
        #expect(names.contains("c1") && names.contains("newest"))
    }

    @Test func aFullDomainDropsTheLeastRecentlyAccessedCookie() {
        let jar = makeJar()
        let site = url("https://example.com/")
        jar.store(setCookieHeaders: ["first=1; Path=/first"], from: site)
        jar.store(setCookieHeaders: ["second=1; Path=/second"], from: site)
        jar.store(setCookieHeaders: (3...50).map { "c\($0)=1" }, from: site)
        _ = jar.cookies(for: url("https://example.com/first"))
        jar.store(setCookieHeaders: ["newest=1"], from: site)
        let names = Set(jar.cookies.map(\.name))
        #expect(names.count == 50)
        #expect(!names.contains("second"))
        #expect(names.contains("first") && names.contains("newest"))
    }

    @Test func theJarHoldsAtMost3000Cookies() {
        let jar = makeJar()
        for domain in 0...60 {
            jar.store(setCookieHeaders: (0..<50).map { "c\($0)=1" }, from: url("https://d\(domain).example/"))
        }
        #expect(jar.cookies.count == 3000)
        #expect(sent(jar, to: "https://d60.example/").count == 50)
        #expect(sent(jar, to: "https://d0.example/").isEmpty)
    }

    @Test func cookiesAreSentLongerPathsFirstThenEarlierCreationFirst() {
        let jar = makeJar()
        let site = url("https://example.com/")
        jar.store(setCookieHeaders: ["late=1"], from: site)
        clock.advance(by: 1)
        jar.store(setCookieHeaders: ["deep=1; Path=/a/b", "mid=1; Path=/a"], from: site)
        clock.advance(by: 1)
        jar.store(setCookieHeaders: ["later=1"], from: site)
        jar.store(setCookieHeaders: ["late=2"], from: site)
        #expect(sent(jar, to: "https://example.com/a/b/c") == ["deep=1", "mid=1", "late=2", "later=1"])
    }

    // MARK: Headers

    @Test func theCookieHeaderJoinsPairsWithSemicolonSpace() {
        let jar = makeJar()
        let site = url("https://example.com/a")
        jar.store(setCookieHeaders: ["a=1; Path=/a", "b=2"], from: site)
        #expect(jar.cookieHeader(for: site, merging: nil) == "a=1; b=2")
        #expect(jar.cookieHeader(for: url("https://elsewhere.com/"), merging: nil) == nil)
        #expect(jar.cookieHeader(for: url("https://elsewhere.com/"), merging: "  ") == nil)
    }

    @Test func anExplicitCookieHeaderComesFirstAndWinsNameClashes() {
        let jar = makeJar()
        let site = url("https://example.com/")
        jar.store(setCookieHeaders: ["session=jar", "theme=dark"], from: site)
        let header = jar.cookieHeader(for: site, merging: "mine=1; session=explicit")
        #expect(header == "mine=1; session=explicit; theme=dark")
        #expect(
            jar.cookieHeader(for: url("https://elsewhere.com/"), merging: "mine=1;other=2")
                == "mine=1; other=2")
    }

    @Test(arguments: [
        ("a=1", ["a=1"]),
        ("a=1, b=2", ["a=1", "b=2"]),
        (
            "a=1; Expires=Wed, 09 Jun 2021 10:18:14 GMT, b=2; Path=/",
            ["a=1; Expires=Wed, 09 Jun 2021 10:18:14 GMT", "b=2; Path=/"]
        ),
        (
            "a=1; Expires=Wed, 09 Jun 2021 10:18:14 GMT; Path=/",
            ["a=1; Expires=Wed, 09 Jun 2021 10:18:14 GMT; Path=/"]
        ),
        ("list=x,y,z; Path=/, next=1", ["list=x,y,z; Path=/", "next=1"]),
        ("a=1,b=2", ["a=1", "b=2"]),
        ("a=1, not a name=2, c=3", ["a=1, not a name=2", "c=3"]),
        ("a=1, ; b=2", ["a=1, ; b=2"]),
        ("a=1, , ", ["a=1, ,"]),
        (", a=1", ["a=1"]),
        ("", []),
    ])
    func combinedSetCookieHeadersSplitOnlyBeforeANewName(combined: String, expected: [String]) {
        #expect(CookieJar.splitCombinedSetCookie(combined) == expected)
    }

    @Test func setCookieEntriesAreFoundInAnyCaseAndSplit() {
        let jar = makeJar()
        jar.storeCookies(
            from: [
                "set-cookie": "a=1; Expires=Wed, 09 Jun 2100 10:18:14 GMT, b=2",
                "Content-Type": "c=3",
            ],
            url: url("https://example.com/")
        )
        #expect(jar.cookies.map(\.name) == ["a", "b"])
        #expect(jar.cookies.first?.expiresAt == CookieDate.parse("Wed, 09 Jun 2100 10:18:14 GMT"))
    }

    // MARK: Persistence

    @Test func aFileJarKeepsPersistentCookiesForTheNextJarButNotSessionOnes() throws {
        let directory = try makeDirectory()
        defer { removeDirectory(directory) }
        let file = directory.appendingPathComponent("cookies.json")
        let clock = clock
        let jar = try CookieJar(file: file, now: { clock.now })
        jar.store(
            setCookieHeaders: ["kept=1; Max-Age=600; Secure; HttpOnly", "session=2"],
            from: url("https://example.com/")
        )

        let reopened = try CookieJar(file: file, now: { clock.now })
        #expect(reopened.cookies == jar.cookies.filter { $0.name == "kept" })
        #expect(reopened.cookies.first?.isHTTPOnly == true)
    }

    @Test func theFileIsReadableJSONWithMode0600AndNoTemporaryFilesRemain() throws {
        let directory = try makeDirectory()
        defer { removeDirectory(directory) }
        let file = directory.appendingPathComponent("cookies.json")
        let jar = try CookieJar(file: file)
        jar.store(
            setCookieHeaders: ["b=1; Max-Age=600", "a=2; Max-Age=600"], from: url("https://example.com/"))

        let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        let text = try String(contentsOf: file, encoding: .utf8)
        #expect(text.contains("\n"))
        let cookiesKey = try #require(text.range(of: "\"cookies\""))
        let versionKey = try #require(text.range(of: "\"version\""))
        #expect(cookiesKey.lowerBound < versionKey.lowerBound)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["cookies.json"])
    }

    @Test func expiredCookiesAreDroppedOnLoad() throws {
        let directory = try makeDirectory()
        defer { removeDirectory(directory) }
        let file = directory.appendingPathComponent("cookies.json")
        let clock = clock
        let jar = try CookieJar(file: file, now: { clock.now })
        jar.store(
            setCookieHeaders: ["short=1; Max-Age=10", "long=2; Max-Age=1000"],
            from: url("https://example.com/"))
        clock.advance(by: 10)
        #expect(try CookieJar(file: file, now: { clock.now }).cookies.map(\.name) == ["long"])
    }

    @Test func aMissingFileStartsEmptyAndIsCreatedOnTheFirstChange() throws {
        let directory = try makeDirectory()
        defer { removeDirectory(directory) }
        let file = directory.appendingPathComponent("cookies.json")
        let jar = try CookieJar(file: file)
        #expect(jar.cookies.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: file.path))
        jar.store(setCookieHeaders: ["a=1; Max-Age=60"], from: url("https://example.com/"))
        #expect(FileManager.default.fileExists(atPath: file.path))
        jar.removeAll()
        #expect(try CookieJar(file: file).cookies.isEmpty)
    }

    @Test func aMalformedFileThrowsAnErrorNamingTheFileButNoValue() throws {
        let directory = try makeDirectory()
        defer { removeDirectory(directory) }
        let file = directory.appendingPathComponent("cookies.json")
        try Data(#"{"version": 1, "cookies": [{"name": "sid", "value": "s3cr3t"#.utf8).write(to: file)
        let error = try #require(throws: CookieJarFileError.self) { try CookieJar(file: file) }
        #expect(error.description.contains(file.path))
        #expect(error.description.contains("not valid JSON"))
        #expect(!error.description.contains("s3cr3t"))
        #expect(error.localizedDescription == error.description)
    }

    @Test func aFileOfTheWrongShapeNamesTheMissingField() throws {
        let directory = try makeDirectory()
        defer { removeDirectory(directory) }
        let file = directory.appendingPathComponent("cookies.json")
        try Data(#"{"version": 1, "cookies": [{"name": "sid", "value": "s3cr3t"}]}"#.utf8).write(to: file)
        let error = try #require(throws: CookieJarFileError.self) { try CookieJar(file: file) }
        #expect(error.description.contains(file.path))
        #expect(error.description.contains("cookies[0]."))
        #expect(!error.description.contains("s3cr3t"))
    }

    @Test func anUnreadableFileOrAMissingDirectoryThrows() throws {
        let directory = try makeDirectory()
        defer { removeDirectory(directory) }
        let notAFile = directory.appendingPathComponent("cookies.json")
        try FileManager.default.createDirectory(at: notAFile, withIntermediateDirectories: false)
        let unreadable = try #require(throws: CookieJarFileError.self) { try CookieJar(file: notAFile) }
        #expect(unreadable.description == "Cookie jar file \(notAFile.path) cannot be read")

        let nowhere = directory.appendingPathComponent("missing/cookies.json")
        let missing = try #require(throws: CookieJarFileError.self) { try CookieJar(file: nowhere) }
        #expect(missing.description.contains(nowhere.path))
        #expect(missing.problem == "is in a directory that does not exist")
    }

    // MARK: Concurrency and secrecy

    @Test func manyTasksStoringAndReadingAtOnceLeaveAConsistentJar() async {
        let jar = makeJar()
        let duplicateSightings = await withTaskGroup(of: Int.self) { group in
            for task in 0..<8 {
                group.addTask {
                    let site = URL(string: "https://t\(task).example.com/")!
                    var duplicates = 0
                    // Few operations, many interleavings: the suite shares two threads with every other suite.
                    for operation in 0..<100 {
                        jar.store(
                            setCookieHeaders: ["c\(operation % 10)=\(operation); Max-Age=600"], from: site)
                        let names = jar.cookies(for: site).map(\.name)
                        if Set(names).count != names.count { duplicates += 1 }
                        _ = jar.cookieHeader(for: site, merging: "mine=1")
                    }
                    return duplicates
                }
            }
            return await group.reduce(0, +)
        }
        #expect(duplicateSightings == 0)
        #expect(jar.cookies.count == 80)
        for task in 0..<8 {
            let values = Set(
                jar.cookies(for: url("https://t\(task).example.com/")).map { "\($0.name)=\($0.value)" })
            #expect(values == Set((90..<100).map { "c\($0 % 10)=\($0)" }))
        }
    }

    @Test func descriptionsNeverShowValues() throws {
        let jar = makeJar()
        jar.store(
            setCookieHeaders: ["sid=s3cr3t; Secure; HttpOnly", "b=also-s3cr3t"],
            from: url("https://a.example/"))
        #expect(jar.description == "CookieJar(2 cookies)")
        let cookie = try #require(jar.cookies.first { $0.name == "sid" })
        #expect(
            cookie.description
                == "sid=<redacted>; domain=a.example; path=/; session; secure; httponly; host-only")
        #expect(!"\(jar) \(jar.cookies)".contains("s3cr3t"))
    }
}
