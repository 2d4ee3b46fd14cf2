import CCurlShim
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The floor for any async client here: libcurl's multi interface on a thread of its own, and plain Swift
/// tasks that await each request through a continuation — nothing else. Each task owns one reused easy
/// handle; it queues the handle under a lock and wakes the loop, which adds it, drives the transfers and
/// resumes the task when its transfer is done. The body is counted and dropped. What this costs over
/// ``RawLibcurl`` is the hand-over between the cooperative pool and the loop's thread, both ways.
final class RawLibcurlAsync: @unchecked Sendable {
    private let curl: RawCurlAPI
    private let handles: [RawCurlAPI.Handle]
    private let multi: RawCurlAPI.Handle

    /// Handed from the tasks to the loop under `lock`.
    private let lock = NSLock()
    private var queued: [(index: Int, done: UnsafeContinuation<Bool, Never>)] = []
    private var stopped = false
    /// The loop thread's own: the continuation of each handle in the multi handle.
    private var waiting: [UnsafeContinuation<Bool, Never>?]

    init(url: URL, inFlight: Int) throws {
        let curl = try RawCurlAPI()
        self.curl = curl
        handles = (0..<inFlight).map { _ in curl.handle(for: url) }
        multi = curl.multiInit()!
        waiting = Array(repeating: nil, count: inFlight)
        let thread = Thread { [self] in loop() }
        thread.name = "raw-libcurl-async"
        thread.start()
    }

    /// Sends one request on handle `index` (one task per handle) and waits for it: `true` when it succeeded.
    func perform(_ index: Int) async -> Bool {
        await withUnsafeContinuation { done in
            lock.withLock { queued.append((index, done)) }
            _ = curl.multiWakeup(multi)
        }
    }

    /// Ends the loop once the transfers in flight are done.
    func stop() {
        lock.withLock { stopped = true }
        _ = curl.multiWakeup(multi)
    }

    private func loop() {
        var running: Int32 = 0
        var inMulti = 0
        while true {
            let (added, stop) = lock.withLock {
                defer { queued.removeAll(keepingCapacity: true) }
                return (queued, stopped)
            }
            for (index, done) in added {
                waiting[index] = done
                _ = curl.multiAdd(multi, handles[index])
                inMulti += 1
            }
            if stop, inMulti == 0 { return }
            _ = curl.multiPerform(multi, &running)
            var left: Int32 = 0
            while let message = curl.multiInfoRead(multi, &left) {
                guard message.pointee.msg == 1, let handle = message.pointee.easy_handle,
                    let index = handles.firstIndex(of: handle)
                else { continue }
                let succeeded = message.pointee.data.result == 0
                _ = curl.multiRemove(multi, handle)
                inMulti -= 1
                let done = waiting[index]
                waiting[index] = nil
                done?.resume(returning: succeeded)
            }
            _ = curl.multiPoll(multi, nil, 0, 100, nil)
        }
    }
}
