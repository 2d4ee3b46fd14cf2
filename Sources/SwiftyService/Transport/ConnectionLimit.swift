import Foundation

/// A request that waits for a connection to its host: as many as the limit allows are in use by other
/// requests (``RealmConfiguration/maxConnectionsPerHost``, or the backend's own), and it starts when one
/// comes free. Observers see it as ``RequestEvent/Kind/waitingForConnection(_:)``, and
/// ``LoggingMiddleware`` logs it.
public struct ConnectionWait: Sendable, Hashable, CustomStringConvertible {
    /// The host waited for: scheme, name and port, `https://api.example.com:443`.
    public let host: String
    /// The most connections to it, all in use when the wait began.
    public let limit: Int

    /// A wait for one of `limit` connections to `host`.
    public init(host: String, limit: Int) {
        self.host = host
        self.limit = limit
    }

    /// `waiting for a connection to https://api.example.com:443 (all 8 in use)`
    public var description: String { "waiting for a connection to \(host) (all \(limit) in use)" }
}

extension BackendRequest {
    /// Tells the call's observers and its middleware that this request waits for a connection to its host:
    /// the one place a backend reports such a wait.
    func reportWaitingForConnection(_ wait: ConnectionWait) {
        reports?.waitingForConnection(wait)
    }

    /// The key a connection limit counts by: scheme, host name and port, in lower case, the port the scheme's
    /// when the URL names none (`https://api.example.com:443`).
    static func hostKey(of url: URL?) -> String {
        hostKey(ofURL: url?.absoluteString ?? "")
    }

    /// ``hostKey(of:)`` of an absolute URL's text, read on its bytes: a backend takes it for every request,
    /// and Foundation's URL accessors cost a microsecond there.
    static func hostKey(ofURL text: String) -> String {
        var text = text
        return text.withUTF8 { bytes -> String in
            let count = bytes.count
            var index = 0
            while index < count, bytes[index] != UInt8(ascii: ":") { index += 1 }
            let schemeEnd = index
            guard index + 2 < count, bytes[index + 1] == UInt8(ascii: "/"),
                bytes[index + 2] == UInt8(ascii: "/")
            else { return "" }
            var start = index + 3
            var end = start
            var hasPort = false
            var inBrackets = false
            var hasUpperCase = bytes[0..<schemeEnd].contains { (0x41...0x5A).contains($0) }
            while end < count, bytes[end] != UInt8(ascii: "/"), bytes[end] != UInt8(ascii: "?"),
                bytes[end] != UInt8(ascii: "#")
            {
                switch bytes[end] {
                case UInt8(ascii: "@"):
                    // User information is no part of the host.
                    start = end + 1
                    hasPort = false
                case UInt8(ascii: "["): inBrackets = true
                case UInt8(ascii: "]"): inBrackets = false
                case UInt8(ascii: ":") where !inBrackets: hasPort = true
                case 0x41...0x5A: hasUpperCase = true
                default: break
                }
                end += 1
            }
            if !hasUpperCase, hasPort, start == schemeEnd + 3 {
                return String(decoding: UnsafeBufferPointer(rebasing: bytes[0..<end]), as: UTF8.self)
            }
            func lower(_ byte: UInt8) -> UInt8 { (0x41...0x5A).contains(byte) ? byte + 0x20 : byte }
            var key = bytes[0..<schemeEnd].map(lower)
            let secure = key.elementsEqual("https".utf8)
            key.append(contentsOf: "://".utf8)
            key.append(contentsOf: bytes[start..<end].map(lower))
            if !hasPort { key.append(contentsOf: (secure ? ":443" : ":80").utf8) }
            return String(decoding: key, as: UTF8.self)
        }
    }
}

/// Lets a backend's transfers to each host take at most a limit of connections at once, queueing the rest in
/// the order they came: the limit a backend keeps itself, so that it can tell a caller its request waits.
///
/// Each transfer comes with its own limit (its realm's, or the backend's). A host known to multiplex (HTTP/2)
/// takes every transfer at once: they share its connections.
final class HostConnectionGate<Transfer: AnyObject & Sendable>: Sendable {
    private struct Waiting {
        let transfer: Transfer
        let limit: Int
    }

    private struct Host {
        var inUse = 0
        var waiting: [Waiting] = []
        var multiplexes = false

        /// Nothing to remember: no connection in use, nobody waiting, not known to multiplex.
        var isIdle: Bool { inUse == 0 && waiting.isEmpty && !multiplexes }
    }

    private let hosts = Locked.make([String: Host]())
    /// How many hosts the gate may know before it forgets each as it turns idle.
    static var hostsKeptIdle: Int { 32 }

    /// Takes a connection to `host` for `transfer` if fewer than `limit` are in use (or the host multiplexes):
    /// `true`, and the transfer may start. Otherwise the transfer waits in line: `false`.
    func enter(_ transfer: Transfer, host: String, limit: Int) -> Bool {
        // The host's state is changed where the dictionary keeps it: its name is hashed once here, not twice.
        hosts.withLock { hosts in Self.enter(transfer, limit: max(limit, 1), into: &hosts[host, default: Host()]) }
    }

    private static func enter(_ transfer: Transfer, limit: Int, into state: inout Host) -> Bool {
        if state.multiplexes || (state.inUse < limit && state.waiting.isEmpty) {
            state.inUse += 1
            return true
        }
        state.waiting.append(Waiting(transfer: transfer, limit: limit))
        return false
    }

    /// A transfer that entered is done with its connection: the waiting transfers that may start now, which
    /// have entered (the caller starts them).
    func leave(_ host: String) -> [Transfer] {
        hosts.withLock { hosts in
            guard let index = hosts.index(forKey: host) else { return [] }
            hosts.values[index].inUse = max(hosts.values[index].inUse - 1, 0)
            let admitted = Self.admit(&hosts.values[index])
            // An idle host stays while the gate knows few: the next request to it, most often within
            // microseconds, then finds it rather than inserting it again (0.4 µs a request one at a time, in a
            // profile). Past that, a host goes as it turns idle, so that a process that talks to many hosts
            // keeps at most that many it is done with.
            if hosts.values[index].isIdle, hosts.count > Self.hostsKeptIdle { hosts.remove(at: index) }
            return admitted
        }
    }

    /// Takes `transfer` out of the line (it was cancelled, or timed out, waiting); whether it was waiting.
    func withdraw(_ transfer: Transfer, host: String) -> Bool {
        hosts.withLock { hosts in
            guard var state = hosts[host],
                let index = state.waiting.firstIndex(where: { $0.transfer === transfer })
            else { return false }
            state.waiting.remove(at: index)
            hosts[host] = state
            return true
        }
    }

    /// The host answered over HTTP/2: its requests share connections from now on, and all that wait may
    /// start (they have entered; the caller starts them).
    func learnMultiplexing(_ host: String) -> [Transfer] {
        hosts.withLock { hosts in
            var state = hosts[host] ?? Host()
            guard !state.multiplexes else { return [] }
            state.multiplexes = true
            let admitted = state.waiting.map(\.transfer)
            state.inUse += admitted.count
            state.waiting = []
            hosts[host] = state
            return admitted
        }
    }

    /// The transfers waiting, for every host (for timeouts and shutdown).
    var waiting: [Transfer] {
        hosts.withLock { hosts in hosts.values.flatMap { $0.waiting.map(\.transfer) } }
    }

    /// How many hosts the gate knows: in use, waited for, multiplexing, or kept idle (for tests).
    var knownHostCount: Int { hosts.withLock { $0.count } }

    /// How many transfers wait, for every host.
    var waitingCount: Int {
        hosts.withLock { hosts in hosts.values.reduce(0) { $0 + $1.waiting.count } }
    }

    /// The first in line while its own limit allows, in order.
    private static func admit(_ state: inout Host) -> [Transfer] {
        var admitted: [Transfer] = []
        while let first = state.waiting.first, state.multiplexes || state.inUse < first.limit {
            state.waiting.removeFirst()
            state.inUse += 1
            admitted.append(first.transfer)
        }
        return admitted
    }
}
