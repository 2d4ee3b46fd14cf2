/// A set of HTTP status codes, written as classes, ranges or single codes:
/// `.successful`, `[200, 304]`, `StatusCodes(200..<400)`, `.successful.union([304])`.
public struct StatusCodes: Sendable, Hashable, ExpressibleByArrayLiteral {
    private var ranges: [ClosedRange<Int>]
    /// Set on an endpoint's default only: the realm's codes apply.
    var isInherited = false

    /// The codes in `ranges`.
    public init(_ ranges: ClosedRange<Int>...) { self.ranges = ranges }

    /// The codes in `range`.
    public init(_ range: Range<Int>) {
        ranges = range.isEmpty ? [] : [range.lowerBound...(range.upperBound - 1)]
    }

    /// The listed codes.
    public init(arrayLiteral codes: Int...) { ranges = codes.map { $0...$0 } }

    /// `200...299`
    public static let successful = StatusCodes(200...299)
    /// `300...399`
    public static let redirection = StatusCodes(300...399)
    /// `400...499`
    public static let clientError = StatusCodes(400...499)
    /// `500...599`
    public static let serverError = StatusCodes(500...599)
    /// What an endpoint that does not declare its codes gets: its realm's (200–299 unless the realm says).
    public static let realmDefault: StatusCodes = {
        var codes = StatusCodes.successful
        codes.isInherited = true
        return codes
    }()
    /// Every status: nothing is refused for its status.
    public static let all = StatusCodes(0...Int.max)

    /// Whether `statusCode` is in the set.
    public func contains(_ statusCode: Int) -> Bool {
        ranges.contains { $0.contains(statusCode) }
    }

    /// The codes in either set.
    public func union(_ other: StatusCodes) -> StatusCodes {
        var result = self
        result.isInherited = false
        result.ranges += other.ranges
        return result
    }
}
