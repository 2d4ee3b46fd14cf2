import Foundation

/// HTTP dates (RFC 9110 §5.6.7) and the headers that carry them.
enum HTTPDate {
    /// The forms the hand-written reader leaves: IMF-fixdate with another zone name, then the obsolete RFC 850
    /// and asctime forms a recipient must still accept. Made once, since a DateFormatter costs tens of
    /// microseconds to make; locked, as Foundation does not promise they are thread-safe.
    private static let otherFormatters = Locked.make(
        ["EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy"].map(
            formatter))
    private static let fixdateFormatter = Locked.make(formatter("EEE, dd MMM yyyy HH:mm:ss 'GMT'"))

    private static func formatter(_ format: String) -> DateFormatter {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = format
        return formatter
    }

    /// An HTTP date in any of the three forms; `nil` for anything else.
    static func parse(_ text: String) -> Date? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if let date = imfFixdate(Array(trimmed.utf8)) { return date }
        return otherFormatters.withLock { formatters in
            formatters.lazy.compactMap { $0.date(from: trimmed) }.first
        }
    }

    /// `date` as an IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`.
    static func format(_ date: Date) -> String {
        fixdateFormatter.withLock { $0.string(from: date) }
    }

    private static let months = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]
    .map { Array($0.utf8) }
    private static let days = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"].map { Array($0.utf8) }

    /// `Sun, 06 Nov 1994 08:49:37 GMT`, read by hand; `nil` for anything else, including impossible dates.
    private static func imfFixdate(_ bytes: [UInt8]) -> Date? {
        guard bytes.count == 29, days.contains(Array(bytes[0..<3])), bytes[3] == UInt8(ascii: ","),
            bytes[4] == UInt8(ascii: " "), bytes[7] == UInt8(ascii: " "), bytes[11] == UInt8(ascii: " "),
            bytes[16] == UInt8(ascii: " "), bytes[19] == UInt8(ascii: ":"), bytes[22] == UInt8(ascii: ":"),
            bytes[25...].elementsEqual(" GMT".utf8),
            let monthIndex = months.firstIndex(of: Array(bytes[8..<11])),
            let day = number(bytes[5..<7]), let year = number(bytes[12..<16]),
            let hour = number(bytes[17..<19]),
            let minute = number(bytes[20..<22]), let second = number(bytes[23..<25])
        else { return nil }
        let month = monthIndex + 1
        let isLeap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let monthLength = month == 2 ? (isLeap ? 29 : 28) : [4, 6, 9, 11].contains(month) ? 30 : 31
        guard (1...monthLength).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        // Days from 1970-01-01 to the date in the proleptic Gregorian calendar (Howard Hinnant's algorithm).
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = shiftedYear / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let daysSinceEpoch = era * 146_097 + dayOfEra - 719_468
        return Date(
            timeIntervalSince1970: TimeInterval(daysSinceEpoch * 86_400 + hour * 3_600 + minute * 60 + second)
        )
    }

    private static func number(_ digits: ArraySlice<UInt8>) -> Int? {
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
        return parse(trimmed).map { $0.timeIntervalSince(now) }
    }
}
