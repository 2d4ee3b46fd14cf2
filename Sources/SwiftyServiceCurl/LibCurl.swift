import CCurlShim
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#elseif canImport(Musl)
import Musl
#endif

/// libcurl, loaded at run time: no headers and no link-time dependency, so the package builds with the
/// toolchain alone. On Linux it is the library FoundationNetworking already uses; on Apple platforms,
/// the system's.
struct LibCurl: @unchecked Sendable {
    typealias Handle = UnsafeMutableRawPointer

    let easyInit: @convention(c) () -> Handle?
    let easyCleanup: @convention(c) (Handle) -> Void
    let easyStrerror: @convention(c) (Int32) -> UnsafePointer<CChar>?
    let slistAppend: @convention(c) (Handle?, UnsafePointer<CChar>) -> Handle?
    let slistFreeAll: @convention(c) (Handle?) -> Void
    let multiInit: @convention(c) () -> Handle?
    let multiCleanup: @convention(c) (Handle) -> Int32
    let multiAddHandle: @convention(c) (Handle, Handle) -> Int32
    let multiRemoveHandle: @convention(c) (Handle, Handle) -> Int32
    let multiPerform: @convention(c) (Handle, UnsafeMutablePointer<Int32>) -> Int32
    let multiPoll:
        @convention(c) (Handle, UnsafeMutableRawPointer?, UInt32, Int32, UnsafeMutablePointer<Int32>?) ->
            Int32
    let multiWakeup: @convention(c) (Handle) -> Int32
    let multiInfoRead:
        @convention(c) (Handle, UnsafeMutablePointer<Int32>) -> UnsafeMutablePointer<ccurl_message>?
    private let easySetopt: UnsafeMutableRawPointer
    private let easyGetinfo: UnsafeMutableRawPointer
    private let multiSetopt: UnsafeMutableRawPointer

    /// libcurl, or `nil` with the reason it could not be loaded.
    static let shared: Result<LibCurl, CurlUnavailable> = load()

    private static let candidates = [
        "libcurl.so.4", "libcurl.so", "libcurl.4.dylib", "libcurl.dylib", "libcurl-gnutls.so.4",
    ]

    private static func load() -> Result<LibCurl, CurlUnavailable> {
        guard let library = candidates.lazy.compactMap({ dlopen($0, RTLD_NOW | RTLD_LOCAL) }).first else {
            return .failure(
                CurlUnavailable(reason: "libcurl could not be loaded (\(candidates.joined(separator: ", ")))")
            )
        }
        var missing: [String] = []
        func symbol<T>(_ name: String, as type: T.Type) -> T? {
            guard let address = dlsym(library, name) else {
                missing.append(name)
                return nil
            }
            return unsafeBitCast(address, to: type)
        }
        func raw(_ name: String) -> UnsafeMutableRawPointer? {
            guard let address = dlsym(library, name) else {
                missing.append(name)
                return nil
            }
            return address
        }
        let globalInit = symbol("curl_global_init", as: (@convention(c) (Int) -> Int32).self)
        let curl = LibCurl(
            easyInit: symbol("curl_easy_init", as: (@convention(c) () -> Handle?).self) ?? { nil },
            easyCleanup: symbol("curl_easy_cleanup", as: (@convention(c) (Handle) -> Void).self) ?? { _ in },
            easyStrerror: symbol(
                "curl_easy_strerror", as: (@convention(c) (Int32) -> UnsafePointer<CChar>?).self)
                ?? { _ in nil },
            slistAppend: symbol(
                "curl_slist_append", as: (@convention(c) (Handle?, UnsafePointer<CChar>) -> Handle?).self)
                ?? { _, _ in nil },
            slistFreeAll: symbol("curl_slist_free_all", as: (@convention(c) (Handle?) -> Void).self) ?? { _ in
            },
            multiInit: symbol("curl_multi_init", as: (@convention(c) () -> Handle?).self) ?? { nil },
            multiCleanup: symbol("curl_multi_cleanup", as: (@convention(c) (Handle) -> Int32).self) ?? { _ in
                0
            },
            multiAddHandle: symbol(
                "curl_multi_add_handle", as: (@convention(c) (Handle, Handle) -> Int32).self)
                ?? { _, _ in -1 },
            multiRemoveHandle: symbol(
                "curl_multi_remove_handle", as: (@convention(c) (Handle, Handle) -> Int32).self)
                ?? { _, _ in -1 },
            multiPerform: symbol(
                "curl_multi_perform", as: (@convention(c) (Handle, UnsafeMutablePointer<Int32>) -> Int32).self
            )
                ?? { _, _ in -1 },
            multiPoll: symbol(
                "curl_multi_poll",
                as: (@convention(c) (
                    Handle, UnsafeMutableRawPointer?, UInt32, Int32, UnsafeMutablePointer<Int32>?
                )
                    -> Int32).self) ?? { _, _, _, _, _ in -1 },
            multiWakeup: symbol("curl_multi_wakeup", as: (@convention(c) (Handle) -> Int32).self) ?? { _ in -1
            },
            multiInfoRead: symbol(
                "curl_multi_info_read",
                as: (@convention(c) (Handle, UnsafeMutablePointer<Int32>) -> UnsafeMutablePointer<
                    ccurl_message
                >?)
                .self) ?? { _, _ in nil },
            easySetopt: raw("curl_easy_setopt") ?? UnsafeMutableRawPointer(bitPattern: 1)!,
            easyGetinfo: raw("curl_easy_getinfo") ?? UnsafeMutableRawPointer(bitPattern: 1)!,
            multiSetopt: raw("curl_multi_setopt") ?? UnsafeMutableRawPointer(bitPattern: 1)!)
        guard missing.isEmpty, let globalInit else {
            return .failure(
                CurlUnavailable(
                    reason: "libcurl lacks \(missing.joined(separator: ", ")) (7.68 or later is needed)"))
        }
        _ = globalInit(Option.globalAll)
        return .success(curl)
    }

    @discardableResult
    func set(_ handle: Handle, _ option: Int32, _ value: Int) -> Int32 {
        ccurl_easy_setopt_long(easySetopt, handle, option, value)
    }

    @discardableResult
    func set(_ handle: Handle, _ option: Int32, pointer value: UnsafeRawPointer?) -> Int32 {
        ccurl_easy_setopt_pointer(easySetopt, handle, option, value)
    }

    @discardableResult
    func set(_ handle: Handle, _ option: Int32, string value: String) -> Int32 {
        // libcurl copies string options (since 7.17), so the buffer may go at once.
        value.withCString { ccurl_easy_setopt_pointer(easySetopt, handle, option, $0) }
    }

    @discardableResult
    func set(_ handle: Handle, _ option: Int32, offset value: Int64) -> Int32 {
        ccurl_easy_setopt_offset(easySetopt, handle, option, value)
    }

    func setMulti(_ multi: Handle, _ option: Int32, _ value: Int) {
        _ = ccurl_multi_setopt_long(multiSetopt, multi, option, value)
    }

    func responseCode(_ handle: Handle) -> Int {
        var code = 0
        _ = ccurl_easy_getinfo_long(easyGetinfo, handle, Info.responseCode, &code)
        return code
    }

    func describe(_ code: Int32) -> String {
        easyStrerror(code).map { String(cString: $0) } ?? "libcurl error \(code)"
    }

    /// The option numbers of curl/curl.h (stable ABI: they never change once published).
    enum Option {
        static let globalAll = 3
        static let writeData: Int32 = 10_001
        static let url: Int32 = 10_002
        static let readData: Int32 = 10_009
        static let writeFunction: Int32 = 20_011
        static let readFunction: Int32 = 20_012
        static let httpHeader: Int32 = 10_023
        static let headerData: Int32 = 10_029
        static let customRequest: Int32 = 10_036
        static let noBody: Int32 = 44
        static let post: Int32 = 47
        static let followLocation: Int32 = 52
        static let headerFunction: Int32 = 20_079
        static let httpVersion: Int32 = 84
        static let noSignal: Int32 = 99
        static let acceptEncoding: Int32 = 10_102
        static let postFieldSizeLarge: Int32 = 30_120
        static let errorBuffer: Int32 = 10_010
        static let protocols: Int32 = 181
        static let redirectProtocols: Int32 = 182
        static let protocolsString: Int32 = 10_318
        static let redirectProtocolsString: Int32 = 10_319
        static let httpVersion2TLS = 4
        static let multiMaxHostConnections: Int32 = 7
    }

    enum Info {
        static let responseCode: Int32 = 0x200000 + 2
    }

    /// `CURLMSG_DONE`: a transfer finished, its result in `data.result`.
    static let messageDone: Int32 = 1
}

/// Why ``CurlBackend`` cannot send anything here.
public struct CurlUnavailable: Error, CustomStringConvertible {
    /// What went wrong loading libcurl.
    public let reason: String
    /// `libcurl is not available: …`
    public var description: String { "libcurl is not available: \(reason)" }
}
