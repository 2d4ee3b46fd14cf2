import Foundation

/// HTTP dates (RFC 9110 §5.6.7) and the headers that carry them: the three forms exactly as the grammar
/// spells them (case-sensitive, single spaces, `GMT`), read by hand; anything else is no date at all. A cache
/// reads them ignoring case (``parse(_:now:ignoringCase:)``), as RFC 9111 §4.2 says it should.
enum HTTPDate {
    private static let fixdateFormatter: Locked<DateFormatter> = {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        // Locked: Foundation does not promise a DateFormatter is thread-safe.
        return .make(formatter)
    }()

    /// An HTTP date in any of the three forms; `nil` for anything else. `now` decides the century of an
    /// RFC 850 date's two-digit year; with `ignoringCase`, the names of days and months and `GMT` match in
    /// any case (`thu, 18 AUG 2050 02:01:18 gmt`), as a cache recipient should read dates (RFC 9111 §4.2).
    static func parse(_ text: String, now: Date = Date(), ignoringCase: Bool = false) -> Date? {
        var bytes = Array(
            text.utf8.drop { $0 == space || $0 == tab }.reversed().drop { $0 == space || $0 == tab }
                .reversed())
        if ignoringCase { bytes = bytes.map(Self.canonicalCase(at: bytes)) }
        return imfFixdate(bytes) ?? rfc850(bytes, now: now) ?? asctime(bytes)
    }

    /// A cache's reading of a date field: ``parse(_:now:ignoringCase:)`` ignoring case.
    static func parseForCache(_ text: String, now: Date = Date()) -> Date? {
        parse(text, now: now, ignoringCase: true)
    }

    /// The grammar's case for each letter of `bytes`: upper-case for a letter that starts a word (a day, a
    /// month) and for the letters of `GMT`, lower-case for the rest of a word.
    private static func canonicalCase(at bytes: [UInt8]) -> (UInt8) -> UInt8 {
        var index = 0
        return { byte in
            defer { index += 1 }
            guard let lower = Self.lowerLetter(byte) else { return byte }
            let startsWord = index == 0 || Self.lowerLetter(bytes[index - 1]) == nil
            let inGMT =
                bytes.count - index <= 3 && bytes.count >= 4
                && bytes[(bytes.count - 3)...].allSatisfy {
                    Self.lowerLetter($0) != nil
                } && bytes[bytes.count - 4] == space
            return startsWord || inGMT ? lower - 0x20 : lower
        }
    }

    /// The lower-case form of an ASCII letter; `nil` for anything else.
    private static func lowerLetter(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"): byte
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): byte + 0x20
        default: nil
        }
    }

    /// `date` as an IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`.
    static func format(_ date: Date) -> String {
        fixdateFormatter.withLock { $0.string(from: date) }
    }

    private static let space = UInt8(ascii: " ")
    private static let tab = UInt8(ascii: "\t")
    private static let months = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]
    .map { Array($0.utf8) }
    private static let days = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"].map { Array($0.utf8) }
    private static let longDays = [
        "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday",
    ]
    .map { Array($0.utf8) }

    /// `Sun, 06 Nov 1994 08:49:37 GMT`.
    private static func imfFixdate(_ bytes: [UInt8]) -> Date? {
        guard bytes.count == 29, days.contains(Array(bytes[0..<3])), bytes[3...4].elementsEqual(", ".utf8),
            bytes[7] == space, bytes[11] == space, bytes[16] == space,
            bytes[25...].elementsEqual(" GMT".utf8),
            let month = months.firstIndex(of: Array(bytes[8..<11])),
            let day = number(bytes[5..<7]), let year = number(bytes[12..<16])
        else { return nil }
        return date(year: year, month: month + 1, day: day, time: bytes[17..<25])
    }

    /// `Sunday, 06-Nov-94 08:49:37 GMT`: a two-digit year more than 50 years in the future is the most
    /// recent past year with those digits (RFC 9110 §5.6.7).
    private static func rfc850(_ bytes: [UInt8], now: Date) -> Date? {
        guard let comma = bytes.firstIndex(of: UInt8(ascii: ",")), longDays.contains(Array(bytes[..<comma]))
        else { return nil }
        let rest = bytes[(comma + 1)...]
        let start = rest.startIndex
        guard rest.count == 23, rest[start] == space, rest[start + 3] == UInt8(ascii: "-"),
            rest[start + 7] == UInt8(ascii: "-"), rest[start + 10] == space,
            rest[(start + 19)...].elementsEqual(" GMT".utf8),
            let month = months.firstIndex(of: Array(rest[(start + 4)..<(start + 7)])),
            let day = number(rest[(start + 1)..<(start + 3)]),
            let twoDigits = number(rest[(start + 8)..<(start + 10)])
        else { return nil }
        let time = rest[(start + 11)..<(start + 19)]
        let calendar = Calendar(identifier: .gregorian)
        let today = calendar.dateComponents(in: TimeZone(identifier: "GMT")!, from: now)
        let thisYear = today.year ?? 2000
        var year = thisYear - thisYear % 100 + twoDigits
        guard let hour = number(time.prefix(2)), let minute = number(time.dropFirst(3).prefix(2)),
            let second = number(time.suffix(2))
        else { return nil }
        // "More than 50 years in the future": later than this moment of the year 50 years on.
        let fiftyYearsOn = (
            thisYear + 50, today.month ?? 1, today.day ?? 1,
            (today.hour ?? 0) * 3_600 + (today.minute ?? 0) * 60 + (today.second ?? 0)
        )
        if (year, month + 1, day, hour * 3_600 + minute * 60 + second) > fiftyYearsOn { year -= 100 }
        return date(year: year, month: month + 1, day: day, time: time)
    }

    /// `Sun Nov  6 08:49:37 1994`: the day is two digits or a space and one digit.
    private static func asctime(_ bytes: [UInt8]) -> Date? {
        guard bytes.count == 24, days.contains(Array(bytes[0..<3])), bytes[3] == space, bytes[7] == space,
            bytes[10] == space, bytes[19] == space,
            let month = months.firstIndex(of: Array(bytes[4..<7])),
            let day = bytes[8] == space ? number(bytes[9..<10]) : number(bytes[8..<10]),
            let year = number(bytes[20..<24])
        else { return nil }
        return date(year: year, month: month + 1, day: day, time: bytes[11..<19])
    }

    /// The date of these parts, with `HH:MM:SS` in `time`; `nil` for impossible dates and times.
    private static func date(year: Int, month: Int, day: Int, time: ArraySlice<UInt8>) -> Date? {
        let start = time.startIndex
        guard time.count == 8, time[start + 2] == UInt8(ascii: ":"), time[start + 5] == UInt8(ascii: ":"),
            let hour = number(time[start..<(start + 2)]),
            let minute = number(time[(start + 3)..<(start + 5)]),
            let second = number(time[(start + 6)..<(start + 8)])
        else { return nil }
        let isLeap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let monthLength = month == 2 ? (isLeap ? 29 : 28) : [4, 6, 9, 11].contains(month) ? 30 : 31
        guard (1...monthLength).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        // Days from 1970-01-01 to the date in the proleptic Gregorian calendar (Howard Hinnant's algorithm).
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let daysSinceEpoch = era * 146_097 + dayOfEra - 719_468
        return Date(
            timeIntervalSince1970: TimeInterval(daysSinceEpoch * 86_400 + hour * 3_600 + minute * 60 + second)
        )
    }

    /// The decimal value of `digits`, which must all be ASCII digits.
    private static func number(_ digits: ArraySlice<UInt8>) -> Int? {
        guard !digits.isEmpty else { return nil }
        var value = 0
        for digit in digits {
            guard digit >= UInt8(ascii: "0"), digit <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(digit - UInt8(ascii: "0"))
        }
        return value
    }

    /// `Retry-After` as seconds from `now`: either delay-seconds or an HTTP date; `nil` when it is neither.
    static func retryAfter(_ value: String, now: Date) -> TimeInterval? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if !trimmed.isEmpty, trimmed.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            return TimeInterval(trimmed) ?? .infinity
        }
        return parse(trimmed, now: now).map { $0.timeIntervalSince(now) }
    }
}
