import CCurlShim
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// libcurl used by hand from Swift, as fast as it goes: the baseline CurlBackend is held to. Sequentially, one
/// easy handle reused with `curl_easy_perform`; with more in flight, a multi handle with one reused easy handle
/// per request in flight, driven on the calling thread. The body is counted and dropped.
final class RawLibcurl {
    private typealias Handle = UnsafeMutableRawPointer
    private let easyPerform: @convention(c) (Handle) -> Int32
    private let multiInit: @convention(c) () -> Handle?
    private let multiAdd: @convention(c) (Handle, Handle) -> Int32
    private let multiRemove: @convention(c) (Handle, Handle) -> Int32
    private let multiPerform: @convention(c) (Handle, UnsafeMutablePointer<Int32>) -> Int32
    private let multiPoll:
        @convention(c) (Handle, UnsafeMutableRawPointer?, UInt32, Int32, UnsafeMutablePointer<Int32>?) ->
            Int32
    private let multiInfoRead:
        @convention(c) (Handle, UnsafeMutablePointer<Int32>) -> UnsafeMutablePointer<ccurl_message>?
    private let handles: [Handle]
    private let multi: Handle?

    init(url: URL, inFlight: Int) throws {
        guard let library = dlopen("libcurl.so.4", RTLD_NOW) ?? dlopen("libcurl.dylib", RTLD_NOW),
            let setopt = dlsym(library, "curl_easy_setopt"), dlsym(library, "curl_multi_poll") != nil
        else {
            throw URLError(
                .unsupportedURL, userInfo: [NSLocalizedDescriptionKey: "libcurl 7.66 or later is needed"])
        }
        func symbol<T>(_ name: String, _ type: T.Type) -> T {
            unsafeBitCast(dlsym(library, name)!, to: type)
        }
        let easyInit = symbol("curl_easy_init", (@convention(c) () -> Handle?).self)
        easyPerform = symbol("curl_easy_perform", (@convention(c) (Handle) -> Int32).self)
        multiInit = symbol("curl_multi_init", (@convention(c) () -> Handle?).self)
        multiAdd = symbol("curl_multi_add_handle", (@convention(c) (Handle, Handle) -> Int32).self)
        multiRemove = symbol("curl_multi_remove_handle", (@convention(c) (Handle, Handle) -> Int32).self)
        multiPerform = symbol(
            "curl_multi_perform", (@convention(c) (Handle, UnsafeMutablePointer<Int32>) -> Int32).self)
        multiPoll = symbol(
            "curl_multi_poll",
            (@convention(c) (Handle, UnsafeMutableRawPointer?, UInt32, Int32, UnsafeMutablePointer<Int32>?) ->
                Int32)
                .self)
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
        multi = inFlight > 1 ? multiInit() : nil
    }

    /// Sends requests until `seconds` have passed; the number answered.
    func run(for seconds: Double) -> Int {
        let deadline = now() + UInt64(seconds * 1e9)
        guard let multi else {
            var count = 0
            while now() < deadline {
                guard easyPerform(handles[0]) == 0 else { continue }
                count += 1
            }
            return count
        }
        for handle in handles { _ = multiAdd(multi, handle) }
        var count = 0
        var running: Int32 = 0
        var adding = true
        var inMulti = handles.count
        while inMulti > 0 {
            _ = multiPerform(multi, &running)
            var queued: Int32 = 0
            while let message = multiInfoRead(multi, &queued) {
                guard message.pointee.msg == 1, let handle = message.pointee.easy_handle else { continue }
                if message.pointee.data.result == 0 { count += 1 }
                _ = multiRemove(multi, handle)
                if adding {
                    _ = multiAdd(multi, handle)
                } else {
                    inMulti -= 1
                }
            }
            adding = now() < deadline
            if inMulti > 0 { _ = multiPoll(multi, nil, 0, 100, nil) }
        }
        return count
    }
}

private let dropBody: @convention(c) (UnsafeMutableRawPointer?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
    _, size, count, _ in size * count
}
