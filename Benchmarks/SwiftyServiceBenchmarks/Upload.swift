import Foundation
import SwiftyService

/// A POST whose body is a stream, to the discarding server's `/`.
private struct StreamedUpload: SwiftyServiceProtocol {
    let chunks: GeneratedBody
    let size: Int
    var realm: ServiceRealm { .get("bench-upload-stream") }
    var path: String { "discard" }
    var method: HTTPMethod { .post }
    var body: RequestBody? { .stream(chunks, length: Int64(size)) }
}

/// `count` bytes in chunks of 64 KiB, each one allocated as it is asked for (as a generated export would be).
private struct GeneratedBody: AsyncSequence, Sendable {
    typealias Element = Data
    let count: Int

    struct AsyncIterator: AsyncIteratorProtocol {
        let count: Int
        var made = 0

        mutating func next() async -> Data? {
            guard made < count else { return nil }
            let size = Swift.min(65_536, count - made)
            made += size
            return Data(repeating: UInt8(truncatingIfNeeded: made >> 16), count: size)
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(count: count) }
}

/// A server in a Python process of its own that reads one request's body (sized or chunked), drops it, and
/// answers `204` with the number of bytes it read in `X-Received`; it answers `100 Continue` when asked.
private let discardingServer = #"""
    import socket, sys
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    print(listener.getsockname()[1], flush=True)
    while True:
        connection, _ = listener.accept()
        data = b""
        while b"\r\n\r\n" not in data:
            data += connection.recv(65536)
        head, _, rest = data.partition(b"\r\n\r\n")
        lines = head.lower().split(b"\r\n")
        length = next((int(l.split(b":")[1]) for l in lines if l.startswith(b"content-length:")), None)
        if b"expect: 100-continue" in lines:
            connection.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        received = len(rest)
        while length is None or received < length:
            chunk = connection.recv(1 << 20)
            if not chunk:
                break
            received += len(chunk)
            if length is None and (rest + chunk)[-5:] == b"0\r\n\r\n":
                break
            rest = chunk[-5:]
        connection.sendall(b"HTTP/1.1 204 No Content\r\nX-Received: %d\r\nConnection: close\r\n\r\n" % received)
        connection.close()
    """#

/// `upload.stream.memory`: resident growth while CurlBackend sends a 400 MB body from a sequence that makes
/// each 64 KiB chunk as it is asked for, to a local server that discards it. The stream is read no further
/// ahead of the socket than about 1 MiB, so the growth is the transfer's, not the body's.
func uploadStreamMemory(_ settings: Settings) async throws -> Outcome {
    let size = settings.quick ? 40_000_000 : 400_000_000
    let server = Process()
    server.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    server.arguments = ["python3", "-c", discardingServer]
    let output = Pipe()
    server.standardOutput = output
    try server.run()
    // SIGKILL, not `terminate()`: a child started from a pool thread inherits its blocked signals, SIGTERM
    // among them, and outlived the benchmark.
    defer {
        kill(server.processIdentifier, SIGKILL)
        server.waitUntilExit()
    }
    var portLine = Data()
    while !portLine.contains(UInt8(ascii: "\n")) {
        let byte = output.fileHandleForReading.readData(ofLength: 1)
        guard !byte.isEmpty else { throw URLError(.cannotConnectToHost) }
        portLine.append(byte)
    }
    let port = String(decoding: portLine, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    let base = URL(string: "http://127.0.0.1:\(port)")!
    ServiceRealm.get("bench-upload-stream").setBaseURL(base).setTimeout(120).use(try CurlBackend())

    let before = residentBytes() ?? 0
    let sampler = PeakMemory()
    let start = now()
    let response = try await StreamedUpload(chunks: GeneratedBody(count: size), size: size).request()
    let seconds = Double(now() - start) / 1e9
    let peak = sampler.stop()
    let received = Int(response.header("X-Received") ?? "") ?? -1
    guard received == size else {
        throw URLError(
            .badServerResponse,
            userInfo: [NSLocalizedDescriptionKey: "the server read \(received) of \(size) bytes"])
    }
    let growth = Double(max(peak - before, 0)) / 1_048_576
    return Outcome(
        scenario: "upload.stream.memory", ours: growth, baseline: nil, unit: .megabytes, goal: 16,
        higherIsBetter: false,
        note: String(
            format:
                "%d MB streamed up (Content-Length, 64 KiB chunks) in %.1f s, %.0f MB/s; RSS %d MB before",
            size / 1_000_000, seconds, Double(size) / 1_000_000 / seconds, before >> 20))
}
