import Foundation

/// How one attempt went over the network, phase by phase: one entry per attempt in ``Response/metrics``,
/// collected when the realm asks for them (``RealmConfiguration/collectMetrics(_:)``, or an observer).
///
/// Durations are seconds. Each phase is `nil` where the backend cannot see it: `CurlBackend` fills every
/// field; URLSession on Linux sees only ``start``, ``firstByte`` and ``total`` (FoundationNetworking reports
/// no task metrics there); the stub reports its delay. A reused connection has no DNS, connect or TLS phase:
/// they are 0, and ``reusedConnection`` is `true`.
public struct TransferMetrics: Sendable, Hashable, CustomStringConvertible {
    /// Which attempt of the call this was: 1, then 2 and on after retries.
    public var attempt = 1
    /// When the attempt was handed to the backend.
    public var start: Date
    /// Waiting before the transfer began, for a connection to the host (the realm's limit of them,
    /// ``RealmConfiguration/setMaxConnectionsPerHost(_:)``, or the backend's); on `CurlBackend` with libcurl
    /// 8.6 and later, also in libcurl's own queue. The phases below count from when it ended.
    public var queued: TimeInterval?
    /// Resolving the host name.
    public var dnsLookup: TimeInterval?
    /// Opening the TCP connection, after the name was resolved.
    public var connect: TimeInterval?
    /// The TLS handshake, after the connection was open (HTTPS only).
    public var tlsHandshake: TimeInterval?
    /// From the start until the request began to go out.
    public var requestSent: TimeInterval?
    /// From the start until the first byte of the response arrived.
    public var firstByte: TimeInterval?
    /// From the start until the response was complete.
    public var total: TimeInterval?
    /// The hops before the last one, when the request was redirected; the other times count from the last hop.
    public var redirectTime: TimeInterval?
    /// How many redirects were followed.
    public var redirects = 0
    /// Whether the attempt went over a connection an earlier request had opened.
    public var reusedConnection: Bool?
    /// The server's address, as connected to.
    public var remoteAddress: String?
    /// The server's port, as connected to.
    public var remotePort: Int?
    /// The protocol the response came in: `"HTTP/1.1"`, `"HTTP/2"`, `"HTTP/3"`.
    public var httpVersion: String?
    /// Bytes sent: request head and body.
    public var bytesSent: Int64?
    /// Bytes received: response heads and body.
    public var bytesReceived: Int64?

    /// Metrics of an attempt that started at `start`, with every phase unknown.
    public init(start: Date) {
        self.start = start
    }

    /// The phases as a log line shows them: `dns 3 ms · connect 1 ms · tls 25 ms · ttfb 80 ms · total 92 ms`.
    public var description: String {
        var parts: [String] = []
        func add(_ name: String, _ seconds: TimeInterval?) {
            guard let seconds else { return }
            parts.append("\(name) \(Self.milliseconds(seconds))")
        }
        add("queued", queued.flatMap { $0 > 0 ? $0 : nil })
        add("redirects", redirectTime)
        if reusedConnection == true {
            parts.append("reused connection")
        } else {
            add("dns", dnsLookup)
            add("connect", connect)
            add("tls", tlsHandshake)
        }
        add("ttfb", firstByte)
        add("total", total)
        return parts.isEmpty ? "no phases measured" : parts.joined(separator: " · ")
    }

    private static func milliseconds(_ seconds: TimeInterval) -> String {
        let milliseconds = seconds * 1_000
        return milliseconds < 10 && milliseconds > 0
            ? "\((milliseconds * 10).rounded() / 10) ms" : "\(Int(milliseconds.rounded())) ms"
    }
}
