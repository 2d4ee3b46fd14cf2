import Foundation

@testable import SwiftyService

// MARK: http-dates: HTTP dates, Age and Cache-Control against RFC 9110 §5.6.7 and RFC 9111 §1.2.2, §5.2

extension FuzzTargets {
    /// The input is a header value, raw or built from parts and then perhaps broken: `HTTPDate.parse`
    /// must accept exactly what the RFC 9110 grammar accepts (the three forms, case and spaces as written,
    /// real calendar days, seconds up to 60), and read the instant a calendar of its own computes; `Age`
    /// must read its first member as delta-seconds, or ignore it (0) when it is not; directives built with known
    /// values must read back as built.
    static func httpDates(_ data: Data) throws {
        var input = FuzzInput(data)
        // "Now" anywhere from 1970 to 2200, so that the RFC 850 century rule meets every boundary.
        let now = Date(timeIntervalSince1970: Double(UInt64(bitPattern: input.integer()) % 7_260_000_000))
        let text = input.choice(3) == 0 ? input.string(upTo: 40) : builtDate(&input)
        let read = HTTPDate.parse(text, now: now)
        let expected = GrammarDate.read(text, now: now)
        guard read == expected else {
            throw FuzzFailure(
                description: "\(text.debugDescription) read as \(String(describing: read)), the grammar says "
                    + String(describing: expected))
        }

        // A cache reads dates in any case (RFC 9111 §4.2): what the grammar accepts, it reads the same; and
        // the case of the letters changes nothing.
        let anyCase = HTTPDate.parseForCache(text, now: now)
        guard expected == nil || anyCase == expected,
            HTTPDate.parseForCache(asciiCase(text, upper: false), now: now) == anyCase,
            HTTPDate.parseForCache(asciiCase(text, upper: true), now: now) == anyCase
        else {
            throw FuzzFailure(
                description: "\(text.debugDescription) read in any case as \(String(describing: anyCase)), "
                    + "strictly as \(String(describing: expected))")
        }

        let age =
            input.choice(2) == 0 ? input.string(upTo: 12) : "\(input.choice(4)), \(input.string(upTo: 6))"
        let first = String(age.split(separator: ",", omittingEmptySubsequences: false).first ?? "")
            .trimmingCharacters(in: CharacterSet(charactersIn: " \t"))  // OWS: spaces and tabs only
        let digits = !first.isEmpty && first.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
        let expectedAge =
            digits ? min(Double(first) ?? Freshness.maxDeltaSeconds, Freshness.maxDeltaSeconds) : 0
        guard Freshness.ageValue(HeaderFields(["Age": age])) == expectedAge else {
            throw FuzzFailure(description: "Age \(age.debugDescription) is not \(expectedAge)")
        }

        let maxAge = Int(input.byte()) * 97
        let window = Int(input.byte())
        let field = ["x-a", "set-cookie", "x-b"][input.choice(3)]
        var directives = [
            "max-age=\(maxAge)", "stale-while-revalidate=\"\(window)\"", "no-cache=\"\(field), X-Other\"",
            "stale-if-error=\(window)", "MUST-REVALIDATE",
        ]
        // In an order the input picks: rotated, perhaps reversed.
        let turn = input.choice(directives.count)
        directives = Array(directives[turn...] + directives[..<turn])
        if input.choice(2) == 0 { directives.reverse() }
        let header = directives.joined(separator: [",", ", ", " ,\t"][input.choice(3)])
        let control = CacheControl(header)
        guard control.maxAge == Double(maxAge), control.staleWhileRevalidate == Double(window),
            control.staleIfError == Double(window), control.noCacheFields == [field, "x-other"],
            !control.noCache,
            control.mustRevalidate
        else { throw FuzzFailure(description: "\(header) read as \(control)") }
    }

    /// `text` with its ASCII letters in one case (and nothing else changed: Foundation's case mapping turns
    /// some other letters into ASCII ones, `ſ` into `S`).
    private static func asciiCase(_ text: String, upper: Bool) -> String {
        String(
            decoding: text.utf8.map { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z") where upper: byte - 0x20
                case UInt8(ascii: "A")...UInt8(ascii: "Z") where !upper: byte + 0x20
                default: byte
                }
            }, as: UTF8.self)
    }

    /// A date in one of the three forms from the input's parts, out-of-range ones included, then perhaps
    /// broken by one edit the grammar does not allow (or that it does: the oracle decides, not this).
    private static func builtDate(_ input: inout FuzzInput) -> String {
        let days = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
        let months = [
            "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec", "Foo",
        ]
        let day = input.choice(33)
        let month = months[input.choice(13)]
        let year = input.choice(2) == 0 ? 1_900 + input.choice(300) : input.choice(10_000)
        let time = String(format: "%02d:%02d:%02d", input.choice(25), input.choice(61), input.choice(62))
        let weekday = days[input.choice(7)]
        var text: String
        switch input.choice(3) {
        case 0: text = String(format: "%@, %02d %@ %04d %@ GMT", weekday, day, month, year, time)
        case 1:
            let long = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"][
                input.choice(7)]
            text = String(format: "%@, %02d-%@-%02d %@ GMT", long, day, month, year % 100, time)
        default: text = String(format: "%@ %@ %2d %@ %04d", weekday, month, day, time, year)
        }
        var bytes = Array(text.utf8)
        switch input.choice(6) {
        case 0 where !bytes.isEmpty: bytes.remove(at: input.choice(bytes.count))
        case 1:
            bytes.insert([0x20, 0x2D, 0x2C, 0x30, 0x09][input.choice(5)], at: input.choice(bytes.count + 1))
        case 2 where !bytes.isEmpty: bytes[input.choice(bytes.count)] = input.byte()
        case 3: text = text.lowercased(); bytes = Array(text.utf8)
        default: break
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// RFC 9110 §5.6.7 read by regular expressions of its grammar, and the instant computed by counting days.
enum GrammarDate {
    static let day = "(Mon|Tue|Wed|Thu|Fri|Sat|Sun)"
    static let longDay = "(Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)"
    static let month = "(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
    static let time = "([0-9]{2}):([0-9]{2}):([0-9]{2})"
    static let fixdate = try! NSRegularExpression(
        pattern: "^\(day), ([0-9]{2}) \(month) ([0-9]{4}) \(time) GMT$")
    static let rfc850 = try! NSRegularExpression(
        pattern: "^\(longDay), ([0-9]{2})-\(month)-([0-9]{2}) \(time) GMT$")
    static let asctime = try! NSRegularExpression(
        pattern: "^\(day) \(month) ([0-9]{2}| [0-9]) \(time) ([0-9]{4})$")
    static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// The date `text` names (surrounding spaces and tabs aside, as a field value's are), or `nil`.
    static func read(_ text: String, now: Date) -> Date? {
        let value = text.trimmingCharacters(in: CharacterSet(charactersIn: " \t"))
        func groups(_ expression: NSRegularExpression) -> [String]? {
            let whole = NSRange(value.startIndex..., in: value)
            guard let match = expression.firstMatch(in: value, range: whole) else { return nil }
            return (1..<match.numberOfRanges).map { String(value[Range(match.range(at: $0), in: value)!]) }
        }
        func number(_ text: String) -> Int { Int(text.trimmingCharacters(in: .whitespaces))! }
        if let parts = groups(fixdate) {
            return instant(
                year: number(parts[3]), month: parts[2], day: number(parts[1]), parts[4], parts[5], parts[6])
        }
        if let parts = groups(asctime) {
            return instant(
                year: number(parts[6]), month: parts[1], day: number(parts[2]), parts[3], parts[4], parts[5])
        }
        guard let parts = groups(rfc850) else { return nil }
        // The year with these two digits in this century, or the century before when that is more than 50
        // years after now (compared field by field: year, month, day, time).
        let seconds = Int(now.timeIntervalSince1970)
        let (nowYear, nowMonth, nowDay) = civil(
            days: seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400)
        let nowTime = ((seconds % 86_400) + 86_400) % 86_400
        var year = nowYear - nowYear % 100 + number(parts[3])
        let monthNumber = (months.firstIndex(of: parts[2]) ?? 0) + 1
        let time = number(parts[4]) * 3_600 + number(parts[5]) * 60 + number(parts[6])
        if (year, monthNumber, number(parts[1]), time) > (nowYear + 50, nowMonth, nowDay, nowTime) {
            year -= 100
        }
        return instant(year: year, month: parts[2], day: number(parts[1]), parts[4], parts[5], parts[6])
    }

    private static func instant(
        year: Int, month: String, day: Int, _ hour: String, _ minute: String, _ second: String
    )
        -> Date?
    {
        guard let monthIndex = months.firstIndex(of: month), let hour = Int(hour), let minute = Int(minute),
            let second = Int(second), hour < 24, minute < 60, second <= 60, day >= 1,
            day <= length(monthIndex + 1, year)
        else { return nil }
        var days = 0
        if year >= 1970 {
            for y in 1970..<year { days += isLeap(y) ? 366 : 365 }
        } else {
            for y in year..<1970 { days -= isLeap(y) ? 366 : 365 }
        }
        for m in 1..<(monthIndex + 1) { days += length(m, year) }
        days += day - 1
        return Date(timeIntervalSince1970: Double(days * 86_400 + hour * 3_600 + minute * 60 + second))
    }

    /// Year, month and day of a count of days since 1970-01-01, by walking years and months.
    private static func civil(days: Int) -> (Int, Int, Int) {
        var rest = days
        var year = 1970
        while rest < 0 {
            year -= 1
            rest += isLeap(year) ? 366 : 365
        }
        while rest >= (isLeap(year) ? 366 : 365) {
            rest -= isLeap(year) ? 366 : 365
            year += 1
        }
        var month = 1
        while rest >= length(month, year) {
            rest -= length(month, year)
            month += 1
        }
        return (year, month, rest + 1)
    }

    private static func isLeap(_ year: Int) -> Bool { year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) }

    private static func length(_ month: Int, _ year: Int) -> Int {
        month == 2 ? (isLeap(year) ? 29 : 28) : [4, 6, 9, 11].contains(month) ? 30 : 31
    }
}
