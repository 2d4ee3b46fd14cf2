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
    private typealias Handle = UnsafeMutableRawPointer
    private let multiAdd: @convention(c) (Handle, Handle) -> Int32
    private let multiRemove: @convention(c) (Handle, Handle) -> Int32
    private let multiPerform: @convention(c) (Handle, UnsafeMutablePointer<Int32>) -> Int32
    private let multiPoll:
        @convention(c) (Handle, UnsafeMutableRawPointer?, UInt32, Int32, UnsafeMutablePointer<Int32>?) ->
            Int32
    private let multiWakeup: @convention(c) (Handle) -> Int32
    private let multiInfoRead:
        @convention(c) (Handle, UnsafeMutablePointer<Int32>) -> UnsafeMutablePointer<ccurl_message>?
    private let handles: [Handle]
    private let multi: Handle

    /// Handed from the tasks to the loop under `lock`.
    private let lock = NSLock()
    private var queued: [(index: Int, done: UnsafeContinuation<Bool, Never>)] = []
    private var stopped = false
    /// The loop thread's own: the continuation of each handle in the multi handle.
    private var waiting: [UnsafeContinuation<Bool, Never>?]

    init(url: URL, inFlight: Int) throws {
        guard let library = dlopen("libcurl.so.4", RTLD_NOW) ?? dlopen("libcurl.dylib", RTLD_NOW),
            let setopt = dlsym(library, "curl_easy_setopt"), dlsym(library, "curl_multi_wakeup") != nil
        else {
            throw URLError(
                .unsupportedURL, userInfo: [NSLocalizedDescriptionKey: "libcurl 7.68 or later is needed"])
        }
        func symbol<T>(_ name: String, _ type: T.Type) -> T {
            unsafeBitCast(dlsym(library, name)!, to: type)
        }
        let easyInit = symbol("curl_easy_init", (@convention(c) () -> Handle?).self)
        let multiInit = symbol("curl_multi_init", (@convention(c) () -> Handle?).self)
        multiAdd = symbol("curl_multi_add_handle", (@convention(c) (Handle, Handle) -> Int32).self)
        multiRemove = symbol("curl_multi_remove_handle", (@convention(c) (Handle, Handle) -> Int32).self)
        multiPerform = symbol(
            "curl_multi_perform", (@convention(c) (Handle, UnsafeMutablePointer<Int32>) -> Int32).self)
        multiPoll = symbol(
            "curl_multi_poll",
            (@convention(c) (Handle, UnsafeMutableRawPointer?, UInt32, Int32, UnsafeMutablePointer<Int32>?) ->
                Int32)
                .self)
        multiWakeup = symbol("curl_multi_wakeup", (@convention(c) (Handle) -> Int32).self)
        multiInfoRead = symbol(
            "curl_multi_info_read",
            (@convention(c) (Handle, UnsafeMutablePointer<Int32>) -> UnsafeMutablePointer<ccurl_message>?)
                .self)
        handles = (0..<inFlight).map { _ in
            let handle = easyInit()!
            url.absoluteString.withCString { _ = ccurl_easy_setopt_pointer(setopt, handle, 10_002, $0) }
            _ = ccurl_easy_setopt_long(setopt, handle, 99, 1)  // CURLOPT_NOSIGNAL
            _ = ccurl_easy_setopt_pointer(
                setopt, handle, 20_011, unsafeBitCast(dropBody, to: UnsafeRawPointer.self))
            return handle
        }
        multi = multiInit()!
        waiting = Array(repeating: nil, count: inFlight)
        let thread = Thread { [self] in loop() }
        thread.name = "raw-libcurl-async"
        thread.start()
    }

    /// Sends one request on handle `index` (one task per handle) and waits for it: `true` when it succeeded.
    func perform(_ index: Int) async -> Bool {
        await withUnsafeContinuation { done in
            lock.withLock { queued.append((index, done)) }
            _ = multiWakeup(multi)
        }
    }

    /// Ends the loop once the transfers in flight are done.
    func stop() {
        lock.withLock { stopped = true }
        _ = multiWakeup(multi)
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
                _ = multiAdd(multi, handles[index])
                inMulti += 1
            }
            if stop, inMulti == 0 { return }
            _ = multiPerform(multi, &running)
            var left: Int32 = 0
            while let message = multiInfoRead(multi, &left) {
                guard message.pointee.msg == 1, let handle = message.pointee.easy_handle,
                    let index = handles.firstIndex(of: handle)
                else { continue }
                let succeeded = message.pointee.data.result == 0
                _ = multiRemove(multi, handle)
                inMulti -= 1
                let done = waiting[index]
                waiting[index] = nil
                done?.resume(returning: succeeded)
            }
            _ = multiPoll(multi, nil, 0, 100, nil)
        }
    }
}

private let dropBody: @convention(c) (UnsafeMutableRawPointer?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
    _, size, count, _ in size * count
}
