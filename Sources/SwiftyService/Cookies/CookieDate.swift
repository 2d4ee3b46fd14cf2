import Foundation

/// RFC 6265 §5.1.1's lenient cookie-date parser, for the `Expires` attribute.
///
/// Servers send many date shapes, so instead of matching one format it picks a time, a day, a month and a year out
/// of whatever tokens it finds; text it cannot make sense of yields `nil`, and the attribute is then ignored.
/// Written by hand because `DateFormatter` is locale-sensitive, slow, and stricter than the RFC.
enum CookieDate {
    private typealias Time = (hour: Int, minute: Int, second: Int)
    private static let months = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ]

    /// The moment `text` names (in UTC), or `nil` when it is not a cookie-date.
    static func parse(_ text: String) -> Date? {
        var time: Time?
        var day: Int?
        var month: Int?
        var year: Int?
        // Each token fills the first still-missing field it fits, in the RFC's order.
        for token in tokens(of: text) {
            if time == nil, let found = parseTime(token) {
                time = found
            } else if day == nil, let found = leadingNumber(token, digitCount: 1...2) {
                day = found
            } else if month == nil, let found = parseMonth(token) {
                month = found
            } else if year == nil, let found = leadingNumber(token, digitCount: 2...4) {
                year = found
            }
        }
        guard let time, let day, let month, var year else { return nil }
        if (70...99).contains(year) {
            year += 1900
        } else if (0...69).contains(year) {
            year += 2000
        }
        guard year >= 1601, time.hour <= 23, time.minute <= 59, time.second <= 59,
            (1...daysIn(month: month, year: year)).contains(day)
        else { return nil }
        let days = daysSince1970(year: year, month: month, day: day)
        let seconds = days * 86_400 + time.hour * 3_600 + time.minute * 60 + time.second
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    /// The runs of non-delimiter bytes; the delimiters are §5.1.1's (space, punctuation except `:`, tab).
    private static func tokens(of text: String) -> [ArraySlice<UInt8>] {
        Array(text.utf8).split(whereSeparator: isDelimiter)
    }

    private static func isDelimiter(_ byte: UInt8) -> Bool {
        byte == 0x09 || (0x20...0x2F).contains(byte) || (0x3B...0x40).contains(byte)
            || (0x5B...0x60).contains(byte) || (0x7B...0x7E).contains(byte)
    }

    private static func isDigit(_ byte: UInt8) -> Bool { (0x30...0x39).contains(byte) }

    /// The number a token starts with, when it has an allowed count of digits and no more digits follow.
    private static func leadingNumber(_ token: ArraySlice<UInt8>, digitCount: ClosedRange<Int>) -> Int? {
        let digits = token.prefix(while: isDigit)
        guard digitCount.contains(digits.count) else { return nil }
        return digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
    }

    /// `hh:mm:ss`, each field one or two digits, optionally followed by a non-digit and anything.
    private static func parseTime(_ token: ArraySlice<UInt8>) -> Time? {
        var rest = token[...]
        var fields: [Int] = []
        for index in 0..<3 {
            guard let field = leadingNumber(rest, digitCount: 1...2) else { return nil }
            fields.append(field)
            rest = rest.drop(while: isDigit)
            if index < 2 {
                guard rest.first == UInt8(ascii: ":") else { return nil }
                rest = rest.dropFirst()
            }
        }
        return (fields[0], fields[1], fields[2])
    }

    /// A month from a token's first three letters, in any case ("Jun", "JUNE", "june2021" all mean June).
    private static func parseMonth(_ token: ArraySlice<UInt8>) -> Int? {
        guard token.count >= 3, let prefix = String(bytes: token.prefix(3), encoding: .utf8) else {
            return nil
        }
        return months.firstIndex(of: prefix.lowercased()).map { $0 + 1 }
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2:
            let isLeap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
            return isLeap ? 29 : 28
        case 4, 6, 9, 11:
            return 30
        default:
            return 31
        }
    }

    /// Days from 1970-01-01 in the proleptic Gregorian calendar (Howard Hinnant's `days_from_civil`).
    private static func daysSince1970(year: Int, month: Int, day: Int) -> Int {
        let shiftedYear = month <= 2 ? year - 1 : year  // the year counted from March, so leap days fall last
        let era = shiftedYear / 400  // years here are ≥ 1601, so no negative rounding to correct
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * ((month + 9) % 12) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
