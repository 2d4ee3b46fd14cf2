import Foundation
import SwiftyService
import SwiftyServiceCurl

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A GET of one of the local server's streaming files (scripts/bench makes them).
struct StreamFile: SwiftyServiceProtocol {
    let name: String
    var realm: ServiceRealm { .get("bench-stream") }
    var path: String { name }
    var method: HTTPMethod { .get }
}

/// The file scripts/bench makes to stream (`huge.bin`, 1 GiB), or its small one (20 MiB) for --quick.
func streamFile(_ settings: Settings) -> (name: String, bytes: Int) {
    settings.quick ? ("small.bin", 20 << 20) : ("huge.bin", 1 << 30)
}

/// Raw libcurl, the easy interface, writing to a callback that drops the bytes (as to /dev/null), in this
/// process: the most a libcurl transfer of the file can go. Returns the bytes received.
///
/// `curl_easy_setopt` is variadic; on Linux (x86-64 and arm64 alike) a long or a pointer passed to it
/// travels as a fixed argument would, so it is called through fixed signatures here. Not for Apple arm64.
enum RawCurl {
    private typealias Handle = UnsafeMutableRawPointer
    private typealias SetLong = @convention(c) (Handle, Int32, Int) -> Int32
    private typealias SetPointer = @convention(c) (Handle, Int32, UnsafeRawPointer?) -> Int32
    private typealias Write =
        @convention(c) (UnsafeMutableRawPointer?, Int, Int, UnsafeMutableRawPointer?) -> Int

    nonisolated(unsafe) private static let library: UnsafeMutableRawPointer? = {
        for name in ["libcurl.so.4", "libcurl.so", "libcurl-gnutls.so.4"] {
            if let library = dlopen(name, RTLD_NOW) { return library }
        }
        return nil
    }()

    private static func symbol<T>(_ name: String, as type: T.Type) -> T? {
        guard let library, let address = dlsym(library, name) else { return nil }
        return unsafeBitCast(address, to: type)
    }

    /// GETs `url` and counts its body; `nil` when libcurl cannot be loaded.
    static func get(_ url: URL) -> Int? {
        guard let initEasy = symbol("curl_easy_init", as: (@convention(c) () -> Handle?).self),
            let cleanup = symbol("curl_easy_cleanup", as: (@convention(c) (Handle) -> Void).self),
            let perform = symbol("curl_easy_perform", as: (@convention(c) (Handle) -> Int32).self),
            let setLong = symbol("curl_easy_setopt", as: SetLong.self),
            let setPointer = symbol("curl_easy_setopt", as: SetPointer.self),
            let handle = initEasy()
        else { return nil }
        defer { cleanup(handle) }
        let counted = UnsafeMutablePointer<Int>.allocate(capacity: 1)
        counted.initialize(to: 0)
        defer { counted.deallocate() }
        let write: Write = { _, size, count, context in
            context!.assumingMemoryBound(to: Int.self).pointee += size * count
            return size * count
        }
        let address = url.absoluteString
        let code = address.withCString { string -> Int32 in
            _ = setPointer(handle, 10_002, string)  // CURLOPT_URL (copied by libcurl)
            _ = setPointer(handle, 20_011, unsafeBitCast(write, to: UnsafeRawPointer.self))  // WRITEFUNCTION
            _ = setPointer(handle, 10_001, UnsafeRawPointer(counted))  // WRITEDATA
            _ = setLong(handle, 99, 1)  // NOSIGNAL
            return perform(handle)
        }
        return code == 0 ? counted.pointee : nil
    }
}

/// Reads the file through CurlBackend's stream, chunk by chunk; `pause` after every 64 KiB read.
func streamThrough(_ backend: any NetworkBackend, base: URL, name: String, pause: TimeInterval = 0)
    async throws
    -> Int
{
    ServiceRealm.get("bench-stream").setBaseURL(base).setTimeout(120).use(backend)
    var total = 0
    var sincePause = 0
    for try await chunk in try await StreamFile(name: name).stream() {
        total += chunk.count
        sincePause += chunk.count
        // `pause` for every whole 64 KiB read (a chunk is up to 256 KiB).
        if pause > 0, sincePause >= 64 << 10 {
            let blocks = sincePause >> 16
            sincePause -= blocks << 16
            try await Task.sleep(nanoseconds: UInt64(pause * Double(blocks) * 1e9))
        }
    }
    return total
}

/// `stream.throughput`: MB/s streamed through CurlBackend, against raw libcurl in the same process.
func streamThroughput(_ settings: Settings, base: URL) async throws -> Outcome {
    let (name, bytes) = streamFile(settings)
    let url = base.appendingPathComponent(name)
    let backend = try CurlBackend()
    var ours: [Double] = []
    var raw: [Double] = []
    for _ in 0..<(settings.quick ? 1 : 3) {
        var start = now()
        let streamed = try await streamThrough(backend, base: base, name: name)
        ours.append(Double(streamed) / 1_048_576 / (Double(now() - start) / 1e9))
        start = now()
        let plain = await Task.detached { RawCurl.get(url) }.value
        raw.append(Double(plain ?? 0) / 1_048_576 / (Double(now() - start) / 1e9))
        guard streamed == bytes, plain == bytes else {
            throw URLError(
                .badServerResponse,
                userInfo: [NSLocalizedDescriptionKey: "\(streamed), \(plain ?? -1) of \(bytes)"])
        }
    }
    return Outcome(
        scenario: "stream.throughput", ours: median(ours), baseline: median(raw), unit: .megabytesPerSecond,
        goal: 0.8, higherIsBetter: true,
        note:
            "\(bytes >> 20) MiB from nginx as chunks, against raw libcurl's easy interface (median of \(ours.count))"
    )
}

/// `stream.memory`: resident growth while a reader that sleeps 1 ms per 64 KiB streams the file through
/// CurlBackend; URLSessionBackend's figure (it answers a stream with the whole body) goes in the note.
func streamMemory(_ settings: Settings, base: URL) async throws -> Outcome {
    let (name, bytes) = streamFile(settings)
    let before = residentBytes() ?? 0
    let sampler = PeakMemory()
    let start = now()
    let streamed = try await streamThrough(try CurlBackend(), base: base, name: name, pause: 0.001)
    let seconds = Double(now() - start) / 1e9
    let peak = sampler.stop()
    let growth = Double(max(peak - before, 0)) / 1_048_576

    // URLSessionBackend on Linux cannot hold a task back: it holds what the reader has not read, up to its
    // read-ahead limit, and fails the stream past it. 200 MiB shows which (20 MiB under --quick).
    let sessionName = settings.quick ? "small.bin" : "big.bin"
    let sessionBefore = residentBytes() ?? 0
    let sessionSampler = PeakMemory()
    var sessionOutcome: String
    do {
        let read = try await streamThrough(URLSessionBackend(), base: base, name: sessionName, pause: 0.001)
        sessionOutcome = "\(read >> 20) MiB read"
    } catch {
        sessionOutcome = "failed (\(error))"
    }
    let sessionGrowth = max(sessionSampler.stop() - sessionBefore, 0) >> 20
    return Outcome(
        scenario: "stream.memory", ours: growth, baseline: nil, unit: .megabytes, goal: 8,
        higherIsBetter: false,
        note: "curl: \(streamed >> 20) MiB read at 1 ms per 64 KiB in \(String(format: "%.1f", seconds)) s"
            + (streamed == bytes ? "" : " (short read!)")
            + "; URLSession, \(settings.quick ? 20 : 200) MiB: RSS +\(sessionGrowth) MiB, \(sessionOutcome)")
}

/// `stream.sse`: events per second parsed from a local event stream through CurlBackend, against the
/// parser alone on the same bytes in memory.
func streamSSE(_ settings: Settings, base: URL) async throws -> Outcome {
    ServiceRealm.get("bench-stream").setBaseURL(base).setTimeout(60).use(try CurlBackend())
    let body = try await StreamFile(name: "events.txt").request().data
    var parsedRates: [Double] = []
    var streamedRates: [Double] = []
    var count = 0
    for _ in 0..<(settings.quick ? 1 : 5) {
        var start = now()
        var parser = ServerSentEventParser()
        var parsed = 0
        var offset = 0
        while offset < body.count {
            parsed += try parser.parse(body[offset..<min(body.count, offset + 16_384)]).count
            offset += 16_384
        }
        parsedRates.append(Double(parsed) / (Double(now() - start) / 1e9))
        start = now()
        count = 0
        for try await _ in try await StreamFile(name: "events.txt").stream().serverSentEvents { count += 1 }
        streamedRates.append(Double(count) / (Double(now() - start) / 1e9))
        guard count == parsed else { throw URLError(.badServerResponse) }
    }
    return Outcome(
        scenario: "stream.sse", ours: median(streamedRates), baseline: median(parsedRates),
        unit: .eventsPerSecond, goal: nil, higherIsBetter: true,
        note:
            "\(count) events (\(body.count >> 10) KiB) from nginx through CurlBackend, against the parser alone"
    )
}
