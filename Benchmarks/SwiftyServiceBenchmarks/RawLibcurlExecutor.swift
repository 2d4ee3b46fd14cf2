import CCurlShim
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// libcurl's multi interface on a thread of its own that is also the executor of the tasks awaiting it: each
/// task runs on the loop's thread, queues its handle there and is resumed there — no hop between threads. The
/// floor for a client whose tasks prefer the backend's executor (`CurlBackend.executor`): what Swift's task
/// executor and a continuation cost over ``RawLibcurl``'s multi loop.
///
/// `busyNanoseconds` of work per request (a spin on the clock before each request) calibrate what CPU of a
/// client's own costs in the whole figure, the server's wake-ups included (see the README).
final class RawLibcurlExecutor: TaskExecutor, @unchecked Sendable {
    private let curl: RawCurlAPI
    private let handles: [RawCurlAPI.Handle]
    private let multi: RawCurlAPI.Handle

    private let busyNanoseconds: UInt64
    private let lock = NSLock()
    private var queuedJobs: [UnownedJob] = []
    private var queued: [(index: Int, done: UnsafeContinuation<Bool, Never>)] = []
    private var polling = false
    private var waiting: [UnsafeContinuation<Bool, Never>?]

    init(url: URL, inFlight: Int, busyNanoseconds: UInt64 = 0) throws {
        self.busyNanoseconds = busyNanoseconds
        let curl = try RawCurlAPI()
        self.curl = curl
        handles = (0..<inFlight).map { _ in curl.handle(for: url) }
        multi = curl.multiInit()!
        waiting = Array(repeating: nil, count: inFlight)
        let thread = Thread { [self] in loop() }
        thread.name = "raw-libcurl-executor"
        thread.start()
    }

    /// Queues a job of a task that prefers this loop; wakes the loop only when it sleeps in `poll`.
    func enqueue(_ job: UnownedJob) {
        let wake = lock.withLock {
            queuedJobs.append(job)
            defer { polling = false }
            return polling
        }
        if wake { _ = curl.multiWakeup(multi) }
    }

    /// Sends one request on handle `index` and waits for it: `true` when it succeeded.
    func perform(_ index: Int) async -> Bool {
        if busyNanoseconds > 0 {
            let end = DispatchTime.now().uptimeNanoseconds + busyNanoseconds
            while DispatchTime.now().uptimeNanoseconds < end {}
        }
        return await withUnsafeContinuation { done in
            let wake = lock.withLock {
                queued.append((index, done))
                defer { polling = false }
                return polling
            }
            if wake { _ = curl.multiWakeup(multi) }
        }
    }

    private func loop() {
        var running: Int32 = 0
        var jobs: [UnownedJob] = []
        var added: [(index: Int, done: UnsafeContinuation<Bool, Never>)] = []
        while true {
            lock.withLock { swap(&jobs, &queuedJobs) }
            if #available(macOS 15.0, *) {
                let executor = asUnownedTaskExecutor()
                for job in jobs { job.runSynchronously(on: executor) }
            }
            jobs.removeAll(keepingCapacity: true)
            lock.withLock { swap(&added, &queued) }
            for (index, done) in added {
                waiting[index] = done
                _ = curl.multiAdd(multi, handles[index])
            }
            added.removeAll(keepingCapacity: true)
            _ = curl.multiPerform(multi, &running)
            var left: Int32 = 0
            while let message = curl.multiInfoRead(multi, &left) {
                guard message.pointee.msg == 1, let handle = message.pointee.easy_handle,
                    let index = handles.firstIndex(of: handle)
                else { continue }
                let succeeded = message.pointee.data.result == 0
                _ = curl.multiRemove(multi, handle)
                let done = waiting[index]
                waiting[index] = nil
                done?.resume(returning: succeeded)
            }
            let idle = lock.withLock {
                polling = queuedJobs.isEmpty && queued.isEmpty
                return polling
            }
            if idle {
                _ = curl.multiPoll(multi, nil, 0, 100, nil)
                lock.withLock { polling = false }
            }
        }
    }
}
