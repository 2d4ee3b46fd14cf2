import Foundation
import ProcessProbes

/// What the process holds, read from /proc: counted, not estimated.
struct ProcessFigures: Sendable {
    /// Entries of /proc/self/fd (the listing's own descriptor included, the same every time).
    var descriptors: Int
    /// Entries of /proc/self/task.
    var threads: Int
    /// The threads' names (comm), so that a failed check can say which threads stayed.
    var threadNames: [String] = []
    /// Threads named `SwiftyCurl-…`: one per live `CurlBackend`.
    var curlThreads: Int
    /// Sockets of this process connected to the server's port, per /proc/net/tcp.
    var sockets: Int
    /// VmRSS, in KB.
    var residentKB: Int
    /// malloc's bytes in use, in KB (see `heapInUse()`); only where asked for, -1 otherwise.
    var heapKB = -1

    static func measure(port: Int?, heap: Bool = false) -> ProcessFigures {
        let names = soakThreadNames()
        return ProcessFigures(
            descriptors: openDescriptors(), threads: names.count, threadNames: names,
            curlThreads: names.filter { $0.hasPrefix("SwiftyCurl-") }.count,
            sockets: port.map { openSockets(toPort: $0) } ?? 0, residentKB: residentKilobytes(),
            heapKB: heap ? (heapInUse() ?? -1024) >> 10 : -1)
    }
}

extension ProcessFigures {
    /// malloc's bytes in use, where they were measured.
    var heapBytes: Int? { heapKB >= 0 ? heapKB << 10 : nil }
}

/// How a phase's teardown went: whether everything came back within the wait, how long it took, and the
/// figures after it.
struct Teardown: Sendable {
    var settled: Bool
    var seconds: TimeInterval
    var after: ProcessFigures
}

/// Waits up to 20 s, without waking the thread pool, until `released` holds and descriptors, threads
/// and (with a `port`) sockets to the server are back to `before`; then measures.
func awaitTeardown(
    to before: ProcessFigures, port: Int?, _ released: @escaping @Sendable () -> Bool
) async -> Teardown {
    let started = now()
    let settled = await settleQuietly(within: 20) {
        released() && (port.map { openSockets(toPort: $0) == 0 } ?? true)
            && openDescriptors() <= before.descriptors && soakThreadNames().count <= before.threads
    }
    let seconds = now() - started
    return Teardown(settled: settled, seconds: seconds, after: ProcessFigures.measure(port: port, heap: true))
}

/// This process's thread names, without the one `settleQuietly` polls on.
func soakThreadNames() -> [String] {
    threadNames().filter { $0 != settlingThreadName }
}

/// Peaks of the figures while a phase runs, sampled by a thread of its own every 250 ms.
final class PeakMonitor: Sendable {
    private let peak: Locked<ProcessFigures>
    private let thread: LoopThread

    init(port: Int?) {
        let peak = Locked(
            ProcessFigures(descriptors: 0, threads: 0, curlThreads: 0, sockets: 0, residentKB: 0))
        self.peak = peak
        thread = LoopThread(()) { _, _ in
            let figures = ProcessFigures.measure(port: port)
            peak.withLock { peak in
                peak.descriptors = max(peak.descriptors, figures.descriptors)
                peak.threads = max(peak.threads, figures.threads)
                peak.curlThreads = max(peak.curlThreads, figures.curlThreads)
                peak.sockets = max(peak.sockets, figures.sockets)
                peak.residentKB = max(peak.residentKB, figures.residentKB)
            }
            Thread.sleep(forTimeInterval: 0.25)
        }
    }

    /// Stops sampling and returns the peaks.
    func finish() -> ProcessFigures {
        thread.stop()
        return peak.value
    }
}

/// Bytes malloc has handed out and not had back, over every arena: what glibc's `malloc_stats()` prints as
/// "in use bytes" under "Total (incl. mmap)". Unlike VmRSS, it drops when objects are freed, so it tells
/// live objects from memory the allocator keeps. `nil` where glibc's `malloc_stats` is not there.
func heapInUse() -> Int? {
    guard let symbol = dlsym(nil, "malloc_stats") else { return nil }
    let mallocStats = unsafeBitCast(symbol, to: (@convention(c) () -> Void).self)
    var template = Array("/tmp/swiftyservice-soak-malloc-XXXXXX".utf8CString)
    let file = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
    guard file >= 0 else { return nil }
    template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
    defer { close(file) }
    // malloc_stats writes to stderr: for the length of the call, stderr is the file.
    fflush(nil)
    let saved = dup(2)
    dup2(file, 2)
    mallocStats()
    fflush(nil)
    dup2(saved, 2)
    close(saved)
    lseek(file, 0, SEEK_SET)
    let text = FileHandle(fileDescriptor: file, closeOnDealloc: false).readDataToEndOfFile()
    let output = String(decoding: text, as: UTF8.self)
    guard let total = output.range(of: "Total (incl. mmap):") else { return nil }
    for line in output[total.upperBound...].split(separator: "\n") where line.hasPrefix("in use bytes") {
        return line.split(separator: "=").last.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
    }
    return nil
}
