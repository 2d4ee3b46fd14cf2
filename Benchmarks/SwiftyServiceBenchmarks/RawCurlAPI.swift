import CCurlShim
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// libcurl's entry points that the hand-written baselines call, loaded at run time as CurlBackend loads them.
struct RawCurlAPI: @unchecked Sendable {
    typealias Handle = UnsafeMutableRawPointer
    let easyPerform: @convention(c) (Handle) -> Int32
    let multiInit: @convention(c) () -> Handle?
    let multiAdd: @convention(c) (Handle, Handle) -> Int32
    let multiRemove: @convention(c) (Handle, Handle) -> Int32
    let multiPerform: @convention(c) (Handle, UnsafeMutablePointer<Int32>) -> Int32
    let multiPoll:
        @convention(c) (Handle, UnsafeMutableRawPointer?, UInt32, Int32, UnsafeMutablePointer<Int32>?) ->
            Int32
    let multiWakeup: @convention(c) (Handle) -> Int32
    let multiInfoRead:
        @convention(c) (Handle, UnsafeMutablePointer<Int32>) -> UnsafeMutablePointer<ccurl_message>?
    private let easyInit: @convention(c) () -> Handle?
    private let setopt: UnsafeMutableRawPointer
    private let multiSetopt: UnsafeMutableRawPointer

    init() throws {
        guard let library = dlopen("libcurl.so.4", RTLD_NOW) ?? dlopen("libcurl.dylib", RTLD_NOW),
            let setopt = dlsym(library, "curl_easy_setopt"), let multiSetopt = dlsym(library, "curl_multi_setopt"),
            dlsym(library, "curl_multi_wakeup") != nil
        else {
            throw URLError(
                .unsupportedURL, userInfo: [NSLocalizedDescriptionKey: "libcurl 7.68 or later is needed"])
        }
        func symbol<T>(_ name: String, _ type: T.Type) -> T {
            unsafeBitCast(dlsym(library, name)!, to: type)
        }
        self.setopt = setopt
        self.multiSetopt = multiSetopt
        easyInit = symbol("curl_easy_init", (@convention(c) () -> Handle?).self)
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
        multiWakeup = symbol("curl_multi_wakeup", (@convention(c) (Handle) -> Int32).self)
        multiInfoRead = symbol(
            "curl_multi_info_read",
            (@convention(c) (Handle, UnsafeMutablePointer<Int32>) -> UnsafeMutablePointer<ccurl_message>?)
                .self)
    }

    /// An easy handle for GETs of `url`, its body counted and dropped; reused for every request.
    func handle(for url: URL) -> Handle {
        let handle = easyInit()!
        url.absoluteString.withCString { _ = ccurl_easy_setopt_pointer(setopt, handle, 10_002, $0) }
        _ = ccurl_easy_setopt_long(setopt, handle, 99, 1)  // CURLOPT_NOSIGNAL
        _ = ccurl_easy_setopt_pointer(setopt, handle, 20_011, unsafeBitCast(dropBody, to: UnsafeRawPointer.self))
        return handle
    }

    /// Makes `handle` speak HTTP/2 over TLS (ALPN), trusting `caFile`, and wait for a connection to multiplex
    /// on rather than open another.
    func useHTTP2(_ handle: Handle, trusting caFile: URL) {
        _ = ccurl_easy_setopt_long(setopt, handle, 84, 4)  // CURLOPT_HTTP_VERSION: CURL_HTTP_VERSION_2TLS
        caFile.path.withCString { _ = ccurl_easy_setopt_pointer(setopt, handle, 10_065, $0) }  // CURLOPT_CAINFO
        _ = ccurl_easy_setopt_long(setopt, handle, 237, 1)  // CURLOPT_PIPEWAIT
    }

    /// Holds `multi` to `count` connections to a host (`CURLMOPT_MAX_HOST_CONNECTIONS`).
    func limitConnectionsPerHost(_ multi: Handle, to count: Int) {
        _ = ccurl_multi_setopt_long(multiSetopt, multi, 7, count)
    }
}

private let dropBody: @convention(c) (UnsafeMutableRawPointer?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
    _, size, count, _ in size * count
}
