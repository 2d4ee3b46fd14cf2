import Foundation

/// Cookies kept between requests, following RFC 6265's storage model; in memory, or persisted to a file.
///
/// Where the RFCs leave room or disagree, the jar chooses:
/// - Secure follows RFC 6265bis: a Secure cookie set from an insecure (`http`) URL is ignored, and a cookie set from
///   an insecure URL may not replace or delete a Secure cookie of the same name whose domain overlaps and whose path
///   it falls under. Secure cookies are only sent over `https` (and `wss`).
/// - There is no public suffix list, so a Domain attribute without an embedded dot (`Domain=com`) is ignored unless
///   it is the request host itself; IP-address hosts only ever get host-only cookies.
/// - A name-value pair without `=`, or with an empty name, makes the whole header ignored (RFC 6265 §5.2); so
///   does a control character other than a tab anywhere in it (RFC 6265bis), and such a cookie in a jar file is
///   not loaded.
/// - Limits: a cookie whose name and value together exceed 4096 bytes is ignored; a domain keeps at most 50
///   cookies and the jar at most 3000. Expired cookies are purged before every store, so when a limit is exceeded
///   the least recently accessed (sent or stored) cookies go.
public final class CookieJar: Sendable, CustomStringConvertible {
    /// The most bytes a cookie's name and value may have together.
    static let maxNameValueBytes = 4096
    /// The most cookies one domain may hold.
    static let maxCookiesPerDomain = 50
    /// The most cookies the jar may hold.
    static let maxCookies = 3000

    private let now: @Sendable () -> Date
    private let state: Locked<State>
    private let file: CookieJarFile?

    /// An empty jar in memory.
    public init(now: @escaping @Sendable () -> Date = { Date() }) {
        self.now = now
        state = .make(State())
        file = nil
    }

    /// A jar persisted to `file` (loaded now if it exists; rewritten atomically with mode 0600 after each change).
    ///
    /// Session cookies (no Expires/Max-Age) are kept in memory only. A failed rewrite leaves the jar working in
    /// memory and is retried with the next change.
    /// - Throws: `CookieJarFileError` when the file exists but cannot be read or parsed, or its directory does not
    ///   exist or cannot be written.
    public init(file: URL, now: @escaping @Sendable () -> Date = { Date() }) throws {
        let jarFile = CookieJarFile(url: file)
        let loaded = try jarFile.load()
        let loadedAt = now()
        var state = State()
        for cookie in loaded.sorted(by: { $0.createdAt < $1.createdAt })
        where cookie.expiresAt != nil && cookie.isSendable {
            _ = state.insert(cookie, fromSecureURL: true, now: loadedAt)
        }
        state.evictBeyondLimits(in: Set(loaded.map(\.domain)))
        self.now = now
        self.state = .make(state)
        self.file = jarFile
    }

    /// Every unexpired cookie, sorted by domain, then path, then name.
    public var cookies: [Cookie] {
        let now = self.now()
        let all = state.withLock { $0.entries.values.map(\.cookie) }
        return all.filter { !$0.isExpired(at: now) }.sorted(by: Cookie.sortsBefore)
    }

    /// The cookies to send to `url` (RFC 6265 §5.4), longer paths first, then earlier creation first.
    ///
    /// A cookie is sent when its domain matches (exactly, for host-only ones), its path matches, it is not Secure
    /// or the URL is https, and it has not expired. Marks them accessed, which keeps them from eviction.
    public func cookies(for url: URL) -> [Cookie] {
        guard let target = Cookie.Target(url) else { return [] }
        let now = self.now()
        let sent = state.withLock { state in
            _ = state.purgeExpired(now: now)
            return state.markAccessed { $0.cookie.isSent(to: target) }
        }
        return sent.sorted(by: Entry.sendsEarlier).map(\.cookie)
    }

    /// Stores what `setCookie` header values (one per Set-Cookie line) say, as received from `url`.
    ///
    /// Invalid ones are ignored, per the RFC; one whose expiry has passed deletes its stored namesake.
    public func store(setCookieHeaders: [String], from url: URL) {
        guard let target = Cookie.Target(url) else { return }
        let now = self.now()
        let received = setCookieHeaders.compactMap { Cookie(setCookie: $0, from: target, now: now) }
        guard !received.isEmpty else { return }
        change { state in
            var changed = state.purgeExpired(now: now)
            for cookie in received {
                changed = state.insert(cookie, fromSecureURL: target.isSecure, now: now) || changed
            }
            state.evictBeyondLimits(in: Set(received.map(\.domain)))
            return changed
        }
    }

    /// Removes every cookie.
    public func removeAll() {
        change { state in
            state.entries.removeAll()
            return true
        }
    }

    /// "CookieJar(3 cookies)" — never values.
    public var description: String {
        let count = cookies.count
        return "CookieJar(\(count) \(count == 1 ? "cookie" : "cookies"))"
    }

    /// Applies `body` under the lock and, if it changed anything in a file-backed jar, rewrites the file.
    private func change(_ body: (inout State) -> Bool) {
        let snapshot: (generation: UInt64, cookies: [Cookie])? = state.withLock { state in
            guard body(&state), file != nil else { return nil }
            state.generation += 1
            return (state.generation, state.entries.values.map(\.cookie).filter { $0.expiresAt != nil })
        }
        if let snapshot, let file { file.write(snapshot.cookies, generation: snapshot.generation) }
    }
}

extension CookieJar {
    /// The `Cookie` header value for `url`: `explicit` (a value the request already has) first, as given, then the
    /// jar's cookies except those an explicit cookie of the same name overrides; `nil` when there is neither.
    func cookieHeader(for url: URL, merging explicit: String?) -> String? {
        let explicitPairs = (explicit ?? "").split(separator: ";").map(Cookie.trimmed).filter { !$0.isEmpty }
        let explicitNames = Set(
            explicitPairs.map { pair in
                Cookie.trimmed(pair.prefix { $0 != "=" })
            })
        let jarPairs = cookies(for: url).filter { !explicitNames.contains($0.name) }.map {
            "\($0.name)=\($0.value)"
        }
        let pairs = explicitPairs + jarPairs
        return pairs.isEmpty ? nil : pairs.joined(separator: "; ")
    }

    /// Stores the cookies of a response's headers, whose `Set-Cookie` (any case) may join several lines with ", ".
    func storeCookies(from headers: [String: String], url: URL) {
        let lines =
            headers
            .filter { $0.key.lowercased() == "set-cookie" }
            .sorted { $0.key < $1.key }
            .flatMap { CookieJar.splitCombinedSetCookie($0.value) }
        if !lines.isEmpty { store(setCookieHeaders: lines, from: url) }
    }

    /// Splits Set-Cookie lines joined with commas, as Linux's `HTTPURLResponse` and some backends deliver them.
    ///
    /// Dates (`Expires=Wed, 09 Jun 2021 …`) and values may contain commas too, so a comma splits only when the text
    /// after it, up to the next `;`, starts with a token and `=`: the start of another cookie.
    package static func splitCombinedSetCookie(_ value: String) -> [String] {
        var lines: [String] = []
        var lineStart = value.startIndex
        var searchStart = value.startIndex
        while let comma = value[searchStart...].firstIndex(of: ",") {
            let afterComma = value.index(after: comma)
            if startsCookie(value[afterComma...]) {
                lines.append(String(value[lineStart..<comma]))
                lineStart = afterComma
            }
            searchStart = afterComma
        }
        lines.append(String(value[lineStart...]))
        return lines.map { Cookie.trimmed($0[...]) }.filter { !$0.isEmpty }
    }

    private static func startsCookie(_ text: Substring) -> Bool {
        let pair = text.prefix { $0 != ";" }
        guard let equals = pair.firstIndex(of: "=") else { return false }
        let name = Cookie.trimmed(pair[..<equals])
        return !name.isEmpty && name.unicodeScalars.allSatisfy(isTokenCharacter)
    }

    /// RFC 9110's `tchar`: what a header token, and so a cookie name, is made of.
    private static func isTokenCharacter(_ scalar: Unicode.Scalar) -> Bool {
        scalar.isASCII
            && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar)
                || "!#$%&'*+-.^_`|~".unicodeScalars.contains(scalar))
    }
}

extension CookieJar {
    /// What the jar knows of a cookie besides the cookie itself.
    private struct Entry {
        var cookie: Cookie
        /// When it was last stored or sent, on the jar's tick counter, which unlike the clock never ties.
        var lastAccess: UInt64
        /// Breaks ties between equal creation times; kept by replacements, like the creation time.
        let creationOrder: UInt64

        static func sendsEarlier(_ first: Entry, _ second: Entry) -> Bool {
            let firstPath = first.cookie.path.utf8.count
            let secondPath = second.cookie.path.utf8.count
            if firstPath != secondPath { return firstPath > secondPath }
            if first.cookie.createdAt != second.cookie.createdAt {
                return first.cookie.createdAt < second.cookie.createdAt
            }
            return first.creationOrder < second.creationOrder
        }
    }

    /// RFC 6265 §5.3 step 11: a cookie is identified by its name, domain and path.
    private struct Key: Hashable {
        let name: String
        let domain: String
        let path: String

        init(_ cookie: Cookie) {
            (name, domain, path) = (cookie.name, cookie.domain, cookie.path)
        }
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        var tick: UInt64 = 0
        /// Counts changes, so file writes can tell a newer snapshot from an older one.
        var generation: UInt64 = 0

        /// Removes expired cookies; whether there were any.
        mutating func purgeExpired(now: Date) -> Bool {
            guard entries.values.contains(where: { $0.cookie.isExpired(at: now) }) else { return false }
            entries = entries.filter { !$0.value.cookie.isExpired(at: now) }
            return true
        }

        /// Marks the cookies that `isIncluded` picks as accessed now, and returns them.
        mutating func markAccessed(where isIncluded: (Entry) -> Bool) -> [Entry] {
            tick += 1
            var accessed: [Entry] = []
            for (key, entry) in entries where isIncluded(entry) {
                entries[key]?.lastAccess = tick
                accessed.append(entry)
            }
            return accessed
        }

        /// Stores `cookie` per RFC 6265 §5.3 steps 11–12 and the 6265bis Secure rule; whether anything changed.
        mutating func insert(_ cookie: Cookie, fromSecureURL: Bool, now: Date) -> Bool {
            if !fromSecureURL && entries.values.contains(where: { cookie.wouldShadow($0.cookie) }) {
                return false
            }
            let key = Key(cookie)
            let replaced = entries.removeValue(forKey: key)
            if cookie.isExpired(at: now) { return replaced != nil }
            tick += 1
            entries[key] = Entry(
                cookie: replaced.map { cookie.created(at: $0.cookie.createdAt) } ?? cookie,
                lastAccess: tick,
                creationOrder: replaced?.creationOrder ?? tick
            )
            return true
        }

        /// Enforces the jar's limits after storing cookies for `domains`, dropping the least recently accessed.
        mutating func evictBeyondLimits(in domains: Set<String>) {
            for domain in domains {
                evictLeastRecentlyAccessed(
                    among: { $0.cookie.domain == domain }, beyond: CookieJar.maxCookiesPerDomain)
            }
            evictLeastRecentlyAccessed(among: { _ in true }, beyond: CookieJar.maxCookies)
        }

        private mutating func evictLeastRecentlyAccessed(
            among isCandidate: (Entry) -> Bool, beyond limit: Int
        ) {
            let excess = entries.values.count(where: isCandidate) - limit
            guard excess > 0 else { return }
            let leastRecentFirst = entries.filter { isCandidate($0.value) }
                .sorted { $0.value.lastAccess < $1.value.lastAccess }
            for victim in leastRecentFirst.prefix(excess) { entries[victim.key] = nil }
        }
    }
}

extension Cookie {
    /// The order of `CookieJar.cookies`: by domain, then path, then name.
    static func sortsBefore(_ first: Cookie, _ second: Cookie) -> Bool {
        (first.domain, first.path, first.name) < (second.domain, second.path, second.name)
    }

    /// RFC 6265bis §5.7 step 16: whether this (insecure-URL) cookie would replace or shadow Secure `existing`.
    fileprivate func wouldShadow(_ existing: Cookie) -> Bool {
        existing.isSecure && existing.name == name
            && (Cookie.domain(domain, matches: existing.domain)
                || Cookie.domain(existing.domain, matches: domain))
            && Cookie.path(path, matches: existing.path)
    }
}
