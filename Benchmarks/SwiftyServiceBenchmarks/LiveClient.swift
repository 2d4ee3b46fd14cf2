import Foundation
import SwiftyService
import SwiftyServiceCurl

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif

/// The clients the live scenarios compare, each measured in a process of its own (LiveRounds.swift), so that
/// one client's threads, caches and connections never run beside another's.
enum LiveClient: String, CaseIterable, Sendable {
    /// A realm with ``CurlBackend``.
    case curl
    /// A realm with ``CurlBackend``, each request sent from the completion callback of the one before (which
    /// runs on the backend's thread): no task and no thread hop per request.
    case curlCallbacks = "curl-callbacks"
    /// A realm with ``CurlBackend``, awaited from tasks that prefer the backend's executor (its thread).
    case curlExecutor = "curl-executor"
    /// A realm with ``URLSessionBackend``.
    case urlSession = "urlsession"
    /// A realm that sets no backend: what a user gets by default.
    case defaultBackend = "default"
    /// `URLSession.dataTask` by hand.
    case rawURLSession = "raw-urlsession"
    /// libcurl from Swift by hand: one easy handle reused (1 in flight), or a multi handle with one reused easy
    /// handle per request in flight, on one thread.
    case rawLibcurl = "raw-libcurl"
    /// libcurl's multi interface on a thread of its own, awaited by plain tasks through a continuation: the
    /// floor for any async client (RawLibcurlAsync.swift).
    case rawLibcurlAsync = "raw-libcurl-async"
    /// ``rawLibcurlAsync`` with tasks that prefer the loop's thread as their executor.
    case rawLibcurlExecutor = "raw-libcurl-executor"
    /// A realm with ``CurlBackend`` over HTTP/2 (TLS, ALPN), whose policy trusts the benchmark's CA.
    case curlH2 = "curl-h2"
    /// ``rawLibcurl`` over HTTP/2 (TLS, ALPN), every request in flight on one connection.
    case rawLibcurlH2 = "raw-libcurl-h2"
}

/// One client's run: requests per second and CPU per request over the window, and the TCP connections the
/// whole process opened to the server, warm-up included (counted by the parent, from the server's side).
struct LiveFigures: Sendable {
    var perSecond: Double
    var cpuMicroseconds: Double
    var connections: Int?

    var line: String { "live-figures \(perSecond) \(cpuMicroseconds)" }

    init(perSecond: Double, cpuMicroseconds: Double) {
        self.perSecond = perSecond
        self.cpuMicroseconds = cpuMicroseconds
    }

    /// Reads the line `line` wrote.
    init?(line: Substring) {
        let parts = line.split(separator: " ")
        guard parts.count == 3, parts[0] == "live-figures", let rate = Double(parts[1]),
            let cpu = Double(parts[2])
        else { return nil }
        self.init(perSecond: rate, cpuMicroseconds: cpu)
    }
}

/// The child's side: `--live-client NAME --in-flight N --url URL --warm-up S --window S` runs one client, warm-up
/// then a fixed window, and prints its ``LiveFigures`` line. For CurlBackend, `--curl-threads N` gives it N
/// threads and `--hosts N` sends the requests in turn to N hosts (127.0.0.1 to 127.0.0.N, the URL's port),
/// which the threads share out (measured by hand, no scenario of its own: see the README).
func runLiveClient(
    _ client: LiveClient, base: URL, inFlight: Int, warmUp: Double, window: Double, curlThreads: Int = 1,
    hosts: Int = 1, caFile: URL? = nil, busyNanoseconds: UInt64 = 0
) async throws -> LiveFigures {
    let url = base.appendingPathComponent("user.json")
    let run: (Double) async throws -> (requests: Int, seconds: Double, cpu: UInt64)
    switch client {
    case .curlH2:
        guard let caFile else { throw URLError(.badURL) }
        let realm = ServiceRealm.get("bench-live-curl-h2").setBaseURL(base).use(try CurlBackend())
            .setTLSPolicy(TLSPolicy(trustedRoots: try TLSCertificate.certificates(contentsOf: caFile)))
        let endpoint = LiveFileIn(realm: realm)
        run = { seconds in try await windowed(seconds, inFlight: inFlight) { _ = try await endpoint.request() } }
    case .rawLibcurl, .rawLibcurlH2:
        let raw = try RawLibcurl(url: url, inFlight: inFlight, http2CA: client == .rawLibcurlH2 ? caFile : nil)
        run = { seconds in
            let cpuStart = processCPUTime()
            let start = now()
            let count = raw.run(for: seconds)
            return (count, Double(now() - start) / 1e9, processCPUTime() - cpuStart)
        }
    case .rawLibcurlAsync:
        let raw = try RawLibcurlAsync(url: url, inFlight: inFlight)
        run = { seconds in await awaitedByTasks(raw, seconds, inFlight: inFlight) }
    case .rawLibcurlExecutor:
        let raw = try RawLibcurlExecutor(url: url, inFlight: inFlight, busyNanoseconds: busyNanoseconds)
        run = { seconds in await awaitedByTasks(raw, seconds, inFlight: inFlight, on: raw) }
    case .rawURLSession:
        let session = URLSession(configuration: URLSessionBackend.defaultConfiguration())
        var request = URLRequest(url: url)
        request.timeoutInterval = 60
        let raw = request
        run = { seconds in
            try await windowed(seconds, inFlight: inFlight) { try await rawRequest(session, raw) }
        }
    case .curlCallbacks:
        let realm = ServiceRealm.get("bench-live-curl-callbacks").setBaseURL(base).use(try CurlBackend())
        let endpoint = LiveFileIn(realm: realm)
        run = { seconds in try await chained(seconds, inFlight: inFlight, endpoint) }
    case .curlExecutor:
        let backend = try CurlBackend()
        let realm = ServiceRealm.get("bench-live-curl-executor").setBaseURL(base).use(backend)
        let endpoint = LiveFileIn(realm: realm)
        run = { seconds in
            try await windowed(seconds, inFlight: inFlight, on: backend.executor) {
                _ = try await endpoint.request()
            }
        }
    case .curl, .urlSession, .defaultBackend:
        let backend: (any NetworkBackend)? =
            switch client {
            case .curl: try CurlBackend(threads: curlThreads)
            case .urlSession: URLSessionBackend()
            default: nil
            }
        let endpoints = try (1...max(1, hosts)).map { number in
            var parts = URLComponents(url: base, resolvingAgainstBaseURL: false)
            if number > 1 { parts?.host = "127.0.0.\(number)" }
            guard let host = parts?.url else { throw URLError(.badURL) }
            let realm = ServiceRealm.get("bench-live-\(client.rawValue)-\(number)").setBaseURL(host)
            if let backend { realm.use(backend) }
            return LiveFileIn(realm: realm)
        }
        let turn = HostTurn(count: endpoints.count)
        run = { seconds in
            try await windowed(seconds, inFlight: inFlight) {
                let next = endpoints.count == 1 ? 0 : turn.next()
                _ = try await endpoints[next].request()
            }
        }
    }
    _ = try await run(warmUp)
    let measured = try await run(window)
    return LiveFigures(
        perSecond: Double(measured.requests) / measured.seconds,
        cpuMicroseconds: Double(measured.cpu) / 1_000 / Double(max(1, measured.requests)))
}

/// A raw client awaited by tasks: one request at a time on handle `index`, `true` when it was answered.
protocol AwaitedRawClient: Sendable {
    func perform(_ index: Int) async -> Bool
}

extension RawLibcurlAsync: AwaitedRawClient {}
extension RawLibcurlExecutor: AwaitedRawClient {}

/// `raw`'s requests, one task per handle, until `seconds` have passed: plain tasks, or tasks that prefer
/// `executor`.
private func awaitedByTasks(
    _ raw: some AwaitedRawClient, _ seconds: Double, inFlight: Int, on executor: (any TaskExecutor)? = nil
) async -> (requests: Int, seconds: Double, cpu: UInt64) {
    let cpuStart = processCPUTime()
    let start = now()
    let deadline = start + UInt64(seconds * 1e9)
    let count = await withTaskGroup(of: Int.self) { group in
        for index in 0..<inFlight {
            @Sendable func performUntilDeadline() async -> Int {
                var answered = 0
                while now() < deadline { if await raw.perform(index) { answered += 1 } }
                return answered
            }
            // Plain tasks unless an executor is asked for, as in `windowed`.
            if let executor {
                group.addTask(executorPreference: executor) { await performUntilDeadline() }
            } else {
                group.addTask { await performUntilDeadline() }
            }
        }
        return await group.reduce(0, +)
    }
    return (count, Double(now() - start) / 1e9, processCPUTime() - cpuStart)
}

/// `inFlight` chains of callback requests until `seconds` have passed: each completion sends the next.
private func chained(_ seconds: Double, inFlight: Int, _ endpoint: LiveFileIn) async throws
    -> (requests: Int, seconds: Double, cpu: UInt64)
{
    let cpuStart = processCPUTime()
    let start = now()
    let deadline = start + UInt64(seconds * 1e9)
    let tally = ChainTally()
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
        tally.whenAllEnded(inFlight, done.resume)
        for _ in 0..<inFlight {
            @Sendable func next() {
                _ = endpoint.request { result in
                    guard case .success = result else { return tally.end(failed: true) }
                    guard now() < deadline else { return tally.end(failed: false, answered: 1) }
                    tally.answered()
                    next()
                }
            }
            next()
        }
    }
    if tally.failed { throw URLError(.badServerResponse) }
    return (tally.count, Double(now() - start) / 1e9, processCPUTime() - cpuStart)
}

/// The answers of callback chains, and the end of the last chain.
private final class ChainTally: @unchecked Sendable {
    private let lock = NSLock()
    private var answers = 0
    private var running = 0
    private var anyFailed = false
    private var allEnded: (() -> Void)?

    var count: Int { lock.withLock { answers } }
    var failed: Bool { lock.withLock { anyFailed } }

    func whenAllEnded(_ chains: Int, _ action: @escaping () -> Void) {
        lock.withLock {
            running = chains
            allEnded = action
        }
    }

    func answered() { lock.withLock { answers += 1 } }

    func end(failed: Bool, answered: Int = 0) {
        let action = lock.withLock { () -> (() -> Void)? in
            answers += answered
            anyFailed = anyFailed || failed
            running -= 1
            return running == 0 ? allEnded : nil
        }
        action?()
    }
}

/// Whose turn it is among `count` hosts, one request after another.
private final class HostTurn: @unchecked Sendable {
    private let lock = NSLock()
    private var last = 0
    private let count: Int

    init(count: Int) { self.count = count }

    func next() -> Int {
        lock.withLock {
            last = (last + 1) % count
            return last
        }
    }
}

/// Sends with `inFlight` tasks until `seconds` have passed: the requests answered, the time it took and the
/// process's CPU time over it.
private func windowed(
    _ seconds: Double, inFlight: Int, on executor: (any TaskExecutor)? = nil,
    _ send: @escaping @Sendable () async throws -> Void
) async throws -> (requests: Int, seconds: Double, cpu: UInt64) {
    let cpuStart = processCPUTime()
    let start = now()
    let deadline = start + UInt64(seconds * 1e9)
    let count = try await withThrowingTaskGroup(of: Int.self) { group in
        @Sendable func sendUntilDeadline() async throws -> Int {
            var sent = 0
            while now() < deadline {
                try await send()
                sent += 1
            }
            return sent
        }
        for _ in 0..<inFlight {
            // Plain tasks unless an executor is asked for, as the floor's are: a task made with a preference,
            // even `nil`, has the runtime look it up at every switch, enqueue and run of its jobs.
            if let executor {
                group.addTask(executorPreference: executor) { try await sendUntilDeadline() }
            } else {
                group.addTask { try await sendUntilDeadline() }
            }
        }
        return try await group.reduce(0, +)
    }
    return (count, Double(now() - start) / 1e9, processCPUTime() - cpuStart)
}

/// The connections nginx has accepted (`stub_status` at `/nginx-status`, which scripts/bench configures), read
/// over a connection of its own that the count includes; `nil` from a server without it (httpbin).
func acceptedConnections(base: URL) -> Int? {
    #if os(Linux)
    guard let host = base.host, let port = base.port else { return nil }
    let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard socket >= 0 else { return nil }
    defer { close(socket) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { return nil }
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard connected == 0 else { return nil }
    let request = "GET /nginx-status HTTP/1.0\r\nHost: \(host)\r\n\r\n"
    guard request.withCString({ send(socket, $0, strlen($0), 0) }) > 0 else { return nil }
    var answer: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = recv(socket, &buffer, buffer.count, 0)
        guard count > 0 else { break }
        answer += buffer[0..<count]
    }
    // "…server accepts handled requests\n 12 12 345 \n…"
    let text = String(decoding: answer, as: UTF8.self)
    guard text.hasPrefix("HTTP/1.1 200"),
        let line = text.split(separator: "\n").first(where: { $0.hasPrefix(" ") })
    else { return nil }
    return line.split(separator: " ").first.flatMap { Int($0) }
    #else
    return nil
    #endif
}
