import Foundation

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A response body in memory as libcurl hands it over: the chunks copied into one `malloc`'d region that
/// grows by doubling, which becomes the response's `Data` without a copy.
///
/// `Data.append` checked exclusivity six times a chunk (each check a thread-local lookup) on top of its own
/// bookkeeping, on the loop thread, for every request. The owner frees what it did not take
/// (``deallocate()``). Loop thread only, once reserved.
struct ResponseBodyBuffer {
    private var start: UnsafeMutableRawPointer?
    private var capacity = 0
    private(set) var count = 0

    /// Room for `bytes` before the first chunk, allocated by the caller's thread, which frees the body.
    mutating func reserve(_ bytes: Int) {
        guard start == nil, bytes > 0 else { return }
        start = malloc(bytes)
        capacity = start == nil ? 0 : bytes
    }

    /// Appends `chunk`; `false` when the memory for it cannot be had.
    mutating func append(_ chunk: UnsafeRawBufferPointer) -> Bool {
        guard let source = chunk.baseAddress, !chunk.isEmpty else { return true }
        let needed = count + chunk.count
        if needed > capacity {
            var grown = Swift.max(capacity * 2, 1024)
            while grown < needed { grown *= 2 }
            guard let moved = realloc(start, grown) else { return false }
            start = moved
            capacity = grown
        }
        (start! + count).copyMemory(from: source, byteCount: chunk.count)
        count = needed
        return true
    }

    /// Forgets the bytes (a redirect's body), keeping the memory for the next hop's.
    mutating func removeAll() {
        count = 0
    }

    /// The bytes as `Data`, which owns the memory from now on; the buffer is empty and unreserved after.
    mutating func take() -> Data {
        defer { (start, capacity, count) = (nil, 0, 0) }
        guard let start, count > 0 else {
            free(start)
            return Data()
        }
        // A body far smaller than the room it grew into gives the rest back.
        let kept = capacity - count > 64 * 1024 ? realloc(start, count) ?? start : start
        return Data(bytesNoCopy: kept, count: count, deallocator: .free)
    }

    /// Frees the memory, unless ``take()`` handed it over.
    mutating func deallocate() {
        free(start)
        (start, capacity, count) = (nil, 0, 0)
    }
}
