import Foundation
import SwiftyService
import SwiftyServiceCurl

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An endpoint of the benchmarks' WebSocket server (Tests/Servers/ws_bench_server.py, started by scripts/bench).
struct BenchSocket: SwiftyServiceProtocol {
    let path: String
    var size: Int? = nil
    var parameters: [String: Any]? { size.map { ["size": $0] } }
    var realm: ServiceRealm { .get("bench-ws") }
    var method: HTTPMethod { .get }
}

/// The same server's plain TCP twin, through blocking POSIX calls: the limit a WebSocket client can reach.
final class RawSocket: @unchecked Sendable {
    private let descriptor: Int32

    init(port: Int, firstLine: String) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var one: Int32 = 1
        setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw URLError(.cannotConnectToHost) }
        try write(Array((firstLine + "\n").utf8))
    }

    deinit { close(descriptor) }

    func write(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, 0) }
            guard sent > 0 else { throw URLError(.networkConnectionLost) }
            offset += sent
        }
    }

    /// Reads exactly `count` bytes into `buffer` (at least `count` long).
    func read(_ count: Int, into buffer: inout [UInt8]) throws {
        var offset = 0
        while offset < count {
            let received = buffer.withUnsafeMutableBytes {
                recv(descriptor, $0.baseAddress! + offset, count - offset, 0)
            }
            guard received > 0 else { throw URLError(.networkConnectionLost) }
            offset += received
        }
    }
}

/// `--ws-url http://127.0.0.1:PORT --ws-raw-port PORT`: the servers scripts/bench starts.
struct WebSocketTarget {
    let url: URL
    let rawPort: Int
}

/// `ws.echo`: round trips per second of a 32-byte text message, one in flight, against the raw socket's.
///
/// The two clients take turns in blocks of 1,000 round trips over one connection each, and the ratio is the median
/// of the blocks' ratios: the rate of either swings by half within seconds here as the two vCPUs are shared.
func webSocketEcho(_ settings: Settings, target: WebSocketTarget) async throws -> Outcome {
    ServiceRealm.get("bench-ws").setBaseURL(target.url).setTimeout(30).use(try CurlBackend())
    let block = 1_000
    let blocks = settings.quick ? 3 : 21
    let message = String(repeating: "m", count: 32)
    let socket = try await BenchSocket(path: "echo").webSocket()
    let plain = try RawSocket(port: target.rawPort, firstLine: "echo")
    let echo = { @Sendable () async throws -> Double in
        let start = now()
        for _ in 0..<block {
            try await socket.send(.text(message))
            guard try await socket.receive() == .text(message) else { throw URLError(.badServerResponse) }
        }
        return Double(block) / (Double(now() - start) / 1e9)
    }
    let rawEcho = { @Sendable () throws -> Double in
        let bytes = Array(message.utf8)
        var buffer = [UInt8](repeating: 0, count: bytes.count)
        let started = now()
        for _ in 0..<block {
            try plain.write(bytes)
            try plain.read(bytes.count, into: &buffer)
        }
        return Double(block) / (Double(now() - started) / 1e9)
    }
    var ours: [Double] = []
    var raw: [Double] = []
    var ratios: [Double] = []
    for _ in 0..<blocks {
        ours.append(try await echo())
        raw.append(try await Task.detached(operation: rawEcho).value)
        ratios.append(ours[ours.count - 1] / raw[raw.count - 1])
    }
    await socket.close()
    return Outcome(
        scenario: "ws.echo", ours: median(ours), baseline: median(raw),
        unit: .requestsPerSecond, goal: 0.7, higherIsBetter: true,
        note: "\(blocks) blocks of \(block) round trips of 32 bytes, 1 in flight, "
            + "taking turns with the same server's raw TCP echo; ratio: the blocks' median (\(ratioRange(ratios)))",
        pairedRatio: median(ratios))
}

/// The lowest and highest of `ratios`, for a note.
func ratioRange(_ ratios: [Double]) -> String {
    String(format: "%.2f–%.2f", ratios.min() ?? 0, ratios.max() ?? 0)
}

/// `ws.throughput`: MB/s of 1 MiB binary messages from the server, against the raw socket's MB/s.
///
/// Both connections flood for the whole run and take turns being read, in blocks of 100 MiB; the ratio is the
/// median of the blocks' ratios.
func webSocketThroughput(_ settings: Settings, target: WebSocketTarget) async throws -> Outcome {
    ServiceRealm.get("bench-ws").setBaseURL(target.url).setTimeout(30).use(try CurlBackend())
    let size = 1 << 20
    let block = 100
    let blocks = settings.quick ? 3 : 11
    let socket = try await BenchSocket(path: "flood", size: size).webSocket()
    let plain = try RawSocket(port: target.rawPort, firstLine: "flood \(size)")
    let rawBlock = { @Sendable () throws -> Double in
        var buffer = [UInt8](repeating: 0, count: size)
        let started = now()
        for _ in 0..<block { try plain.read(size, into: &buffer) }
        return Double(block * size) / 1_048_576 / (Double(now() - started) / 1e9)
    }
    var ours: [Double] = []
    var raw: [Double] = []
    var ratios: [Double] = []
    for _ in 0..<blocks {
        let start = now()
        for _ in 0..<block {
            guard try await socket.receive()?.byteCount == size else { throw URLError(.badServerResponse) }
        }
        ours.append(Double(block * size) / 1_048_576 / (Double(now() - start) / 1e9))
        raw.append(try await Task.detached(operation: rawBlock).value)
        ratios.append(ours[ours.count - 1] / raw[raw.count - 1])
    }
    // Let go rather than closed: the flooding server reads nothing, so it would never answer a close frame.
    return Outcome(
        scenario: "ws.throughput", ours: median(ours), baseline: median(raw), unit: .megabytesPerSecond,
        goal: 0.7, higherIsBetter: true,
        note:
            "\(blocks) blocks of \(block) messages of 1 MiB one way, taking turns with the same server's raw TCP "
            + "stream; ratio: the blocks' median (\(ratioRange(ratios)))",
        pairedRatio: median(ratios))
}

/// `ws.memory`: resident growth while a reader stops for 5 s and the server sends as fast as it can.
func webSocketMemory(_ settings: Settings, target: WebSocketTarget) async throws -> Outcome {
    ServiceRealm.get("bench-ws").setBaseURL(target.url).setTimeout(30).use(try CurlBackend())
    let size = 64 << 10
    let socket = try await BenchSocket(path: "flood", size: size).webSocket()
    _ = try await socket.receive()
    let before = residentBytes() ?? 0
    let sampler = PeakMemory()
    try await Task.sleep(for: .seconds(settings.quick ? 1 : 5))
    let peak = sampler.stop()
    var read = 0
    for _ in 0..<100 { read += try await socket.receive()?.byteCount ?? 0 }
    await socket.close()
    return Outcome(
        scenario: "ws.memory", ours: Double(max(peak - before, 0)) / 1_048_576, baseline: nil,
        unit: .megabytes,
        goal: 8, higherIsBetter: false,
        note:
            "a reader paused \(settings.quick ? 1 : 5) s while the server floods 64 KiB messages (default 1 MiB buffer); \(read >> 20) MiB read after"
    )
}

extension WebSocketMessage {
    /// The bytes the message holds.
    fileprivate var byteCount: Int {
        switch self {
        case let .text(text): text.utf8.count
        case let .binary(data): data.count
        }
    }
}
