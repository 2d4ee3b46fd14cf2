/// How much SwiftyService sends and reads at most, whatever an endpoint or a server does.
package enum HTTPLimits {
    /// The longest URL sent, in characters: 64 KiB, eight times what RFC 9110 asks servers to accept.
    package static let maxURLLength = 65_536

    /// The most header fields read in one response (repeated names counted each time): ten times what
    /// real APIs send, a small fraction of what a hostile server can.
    package static let maxResponseHeaderFields = 1_000

    /// The most bytes read in one response head, status line and header lines with their line ends:
    /// 256 KiB, four times the 64 KiB that web servers accept in a request head by default.
    package static let maxResponseHeadBytes = 256 << 10

    /// The largest body a buffered request keeps when its realm sets none (``RealmConfiguration``'s
    /// `defaultMaxResponseSize`, which says why): 64 MiB.
    package static let defaultMaxResponseSize = 64 << 20

    /// A buffered request's deadline when its realm sets none, in timeouts (``RealmConfiguration``'s
    /// `defaultResourceTimeoutFactor`): 5.
    package static let defaultResourceTimeoutFactor: Double = 5
}
