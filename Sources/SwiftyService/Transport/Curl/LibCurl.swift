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
    let easyReset: @convention(c) (Handle) -> Void
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
    /// `curl_version_info`: which libcurl and TLS library were loaded.
    let versionInfo: (@convention(c) (Int32) -> UnsafePointer<ccurl_version_info>?)?
    private let easySetopt: UnsafeMutableRawPointer
    private let easyGetinfo: UnsafeMutableRawPointer
    private let multiSetopt: UnsafeMutableRawPointer
    /// `curl_easy_pause`: resumes a transfer a streamed response's full buffer paused.
    let easyPause: (@convention(c) (Handle, Int32) -> Int32)?
    /// `curl_easy_perform`, `curl_easy_send`, `curl_easy_recv`: a connection of our own (`CURLOPT_CONNECT_ONLY`)
    /// for WebSockets; optional, so that a libcurl without them still serves HTTP.
    let easyPerform: (@convention(c) (Handle) -> Int32)?
    let easySend: (@convention(c) (Handle, UnsafeRawPointer?, Int, UnsafeMutablePointer<Int>) -> Int32)?
    let easyRecv: (@convention(c) (Handle, UnsafeMutableRawPointer?, Int, UnsafeMutablePointer<Int>) -> Int32)?
    /// Whether each new TLS connection's handshake can be watched (`ccurl_tls_watch_*`): libcurl on OpenSSL,
    /// whose functions are found through libcurl's handle.
    private(set) var watchesTLSHandshakes = false
    /// OpenSSL's `ERR_peek_error` and `ERR_clear_error`, found through libcurl's handle (see
    /// ``forgetTLSErrors()``); `nil` where libcurl loaded no OpenSSL (or LibreSSL, BoringSSL).
    private var peekTLSError: (@convention(c) () -> UInt)?
    private var clearTLSErrors: (@convention(c) () -> Void)?

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
        func raw(_ name: String) -> UnsafeMutableRawPointer? {
            guard let address = dlsym(library, name) else {
                missing.append(name)
                return nil
            }
            return address
        }
        func symbol<T>(_ name: String, as type: T.Type) -> T? { raw(name).map { unsafeBitCast($0, to: type) } }
        // A function libcurl may lack (older versions): `nil`, and it is not missing.
        func optional<T>(_ name: String) -> T? {
            dlsym(library, name).map { unsafeBitCast($0, to: T.self) }
        }
        let globalInit = symbol("curl_global_init", as: (@convention(c) (Int) -> Int32).self)
        var curl = LibCurl(
            easyInit: symbol("curl_easy_init", as: (@convention(c) () -> Handle?).self) ?? { nil },
            easyCleanup: symbol("curl_easy_cleanup", as: (@convention(c) (Handle) -> Void).self) ?? { _ in },
            easyReset: symbol("curl_easy_reset", as: (@convention(c) (Handle) -> Void).self) ?? { _ in },
            easyStrerror: symbol(
                "curl_easy_strerror", as: (@convention(c) (Int32) -> UnsafePointer<CChar>?).self)
                ?? { _ in nil },
            slistAppend: symbol(
                "curl_slist_append", as: (@convention(c) (Handle?, UnsafePointer<CChar>) -> Handle?).self)
                ?? { _, _ in nil },
            slistFreeAll: symbol("curl_slist_free_all", as: (@convention(c) (Handle?) -> Void).self)
                ?? { _ in },
            multiInit: symbol("curl_multi_init", as: (@convention(c) () -> Handle?).self) ?? { nil },
            multiCleanup: symbol("curl_multi_cleanup", as: (@convention(c) (Handle) -> Int32).self)
                ?? { _ in 0 },
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
            multiWakeup: symbol("curl_multi_wakeup", as: (@convention(c) (Handle) -> Int32).self)
                ?? { _ in -1 },
            multiInfoRead: symbol(
                "curl_multi_info_read",
                as: (@convention(c) (Handle, UnsafeMutablePointer<Int32>) -> UnsafeMutablePointer<
                    ccurl_message
                >?)
                .self) ?? { _, _ in nil },
            versionInfo: optional("curl_version_info"),
            easySetopt: raw("curl_easy_setopt") ?? UnsafeMutableRawPointer(bitPattern: 1)!,
            easyGetinfo: raw("curl_easy_getinfo") ?? UnsafeMutableRawPointer(bitPattern: 1)!,
            multiSetopt: raw("curl_multi_setopt") ?? UnsafeMutableRawPointer(bitPattern: 1)!,
            easyPause: optional("curl_easy_pause"),
            easyPerform: optional("curl_easy_perform"),
            easySend: optional("curl_easy_send"),
            easyRecv: optional("curl_easy_recv"))
        guard missing.isEmpty, let globalInit else {
            return .failure(
                CurlUnavailable(
                    reason: "libcurl lacks \(missing.joined(separator: ", ")) (7.68 or later is needed)"))
        }
        _ = globalInit(Option.globalAll)
        curl.watchesTLSHandshakes = watchesTLSHandshakes(through: library, tls: curl.version.tls)
        (curl.peekTLSError, curl.clearTLSErrors) = (optional("ERR_peek_error"), optional("ERR_clear_error"))
        return .success(curl)
    }

    /// Whether each new TLS connection's handshake can be watched: on OpenSSL, whose functions are found
    /// through libcurl's handle.
    private static func watchesTLSHandshakes(through library: UnsafeMutableRawPointer, tls: String) -> Bool {
        guard tls.hasPrefix("OpenSSL") else { return false }
        return ccurl_tls_watch_setup(
            dlsym(library, "SSL_CTX_callback_ctrl"), dlsym(library, "SSL_CTX_ctrl"),
            dlsym(library, "SSL_CTX_set_ex_data"), dlsym(library, "CRYPTO_get_ex_new_index")) == 1
    }

    /// Empties this thread's OpenSSL error queue before libcurl works on it, and before the thread is given
    /// back. OpenSSL keeps errors per thread and libcurl (7.88) leaves some there, such as the
    /// `SSL_shutdown` of a connection that failed its handshake; the next failure on that thread then read the
    /// old error as its own reason (a PKCS#12 bundle "could not be parsed" for "shutdown while in init"). The
    /// threads are the loop's and the callers' that drive their own transfers. Looks first (20 ns), clears
    /// only what is there (150 ns).
    func forgetTLSErrors() {
        if let peekTLSError, peekTLSError() != 0 { clearTLSErrors?() }
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

    /// Sets a blob option (`CURLOPT_*_BLOB`); libcurl keeps its own copy of `data`.
    @discardableResult
    func set(_ handle: Handle, _ option: Int32, blob data: Data) -> Int32 {
        data.withUnsafeBytes { ccurl_easy_setopt_blob(easySetopt, handle, option, $0.baseAddress, $0.count) }
    }

    /// A string `CURLINFO_*` of the handle, if libcurl has one.
    func string(_ handle: Handle, _ info: Int32) -> String? {
        var value: UnsafePointer<CChar>?
        guard ccurl_easy_getinfo_string(easyGetinfo, handle, info, &value) == 0, let value else { return nil }
        return String(cString: value)
    }

    /// libcurl's version number (`0x075800` for 7.88.0) and TLS library (`OpenSSL/3.0.19`), as loaded.
    var version: (number: UInt32, tls: String) {
        guard let info = versionInfo?(0)?.pointee else { return (0, "") }
        return (info.version_num, info.ssl_version.map { String(cString: $0) } ?? "")
    }

    /// The content codings this libcurl decodes, as it offers them itself for `CURLOPT_ACCEPT_ENCODING` "":
    /// deflate and gzip with zlib, then br and zstd when built with them; `identity` without any.
    var offeredCodings: String {
        let features = versionInfo?(0)?.pointee.features ?? 0
        var codings: [String] = []
        if features & (1 << 3) != 0 { codings += ["deflate", "gzip"] }  // CURL_VERSION_LIBZ
        if features & (1 << 23) != 0 { codings.append("br") }  // CURL_VERSION_BROTLI
        if features & (1 << 26) != 0 { codings.append("zstd") }  // CURL_VERSION_ZSTD
        return codings.isEmpty ? "identity" : codings.joined(separator: ", ")
    }

    func setMulti(_ multi: Handle, _ option: Int32, _ value: Int) {
        _ = ccurl_multi_setopt_long(multiSetopt, multi, option, value)
    }

    /// A `long` `CURLINFO_*` of the handle, if libcurl has it.
    func long(_ handle: Handle, _ info: Int32) -> Int? {
        var value = 0
        return ccurl_easy_getinfo_long(easyGetinfo, handle, info, &value) == 0 ? value : nil
    }

    /// A `curl_off_t` `CURLINFO_*` of the handle, if libcurl has it (older ones lack some).
    func offset(_ handle: Handle, _ info: Int32) -> Int64? {
        var value: Int64 = 0
        return ccurl_easy_getinfo_offset(easyGetinfo, handle, info, &value) == 0 ? value : nil
    }

    /// The connection's socket (`CURLINFO_ACTIVESOCKET`), or `nil`.
    func activeSocket(_ handle: Handle) -> Int32? {
        var socket: Int32 = -1
        guard ccurl_easy_getinfo_socket(easyGetinfo, handle, Info.activeSocket, &socket) == 0, socket >= 0 else {
            return nil
        }
        return socket
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
        static let proxy: Int32 = 10_004
        static let noProxy: Int32 = 10_177
        static let readData: Int32 = 10_009
        static let writeFunction: Int32 = 20_011
        static let readFunction: Int32 = 20_012
        static let seekFunction: Int32 = 20_167
        static let seekData: Int32 = 10_168
        static let httpHeader: Int32 = 10_023
        static let headerData: Int32 = 10_029
        static let customRequest: Int32 = 10_036
        static let noBody: Int32 = 44
        static let post: Int32 = 47
        static let followLocation: Int32 = 52
        static let headerFunction: Int32 = 20_079
        static let httpVersion: Int32 = 84
        static let noSignal: Int32 = 99
        static let bufferSize: Int32 = 98
        static let acceptEncoding: Int32 = 10_102
        static let httpContentDecoding: Int32 = 158
        static let postFieldSizeLarge: Int32 = 30_120
        static let expect100TimeoutMilliseconds: Int32 = 227
        static let errorBuffer: Int32 = 10_010
        static let protocols: Int32 = 181
        static let redirectProtocols: Int32 = 182
        static let protocolsString: Int32 = 10_318
        static let redirectProtocolsString: Int32 = 10_319
        /// `CURL_HTTP_VERSION_1_1`, `_2TLS` (HTTP/2 over TLS where offered, the default) or `_2_PRIOR_KNOWLEDGE`.
        static func httpVersion(_ preference: HTTPVersionPreference) -> Int {
            switch preference {
            case .automatic: 4
            case .http1_1: 2
            case .http2PriorKnowledge: 5
            }
        }
        /// `CURLOPT_PIPEWAIT`: wait for a connection to say whether it multiplexes rather than open another.
        static let pipeWait: Int32 = 237
        /// `CURLOPT_FRESH_CONNECT` and `CURLOPT_FORBID_REUSE`: a connection of the transfer's own, closed after it.
        static let freshConnect: Int32 = 74
        static let forbidReuse: Int32 = 75
        static let multiMaxHostConnections: Int32 = 7
        /// `CURLMOPT_MAXCONNECTS`: the size of the multi handle's cache of idle connections.
        static let multiMaxConnects: Int32 = 6
        static let caInfo: Int32 = 10_065
        static let caPath: Int32 = 10_097
        static let caInfoBlob: Int32 = 40_309
        static let pinnedPublicKey: Int32 = 10_230
        static let sslCert: Int32 = 10_025
        static let sslCertType: Int32 = 10_086
        static let sslKeyType: Int32 = 10_088
        static let keyPassword: Int32 = 10_026
        static let sslCertBlob: Int32 = 40_291
        static let sslKeyBlob: Int32 = 40_292
        static let sslVersion: Int32 = 32
        /// `CURLOPT_SSL_CTX_FUNCTION`, `CURLOPT_SSL_CTX_DATA`: called with each new connection's SSL_CTX.
        static let sslContextFunction: Int32 = 20_108
        static let sslContextData: Int32 = 10_109
        /// `CURL_SSLVERSION_TLSv1_2`, `CURL_SSLVERSION_TLSv1_3`
        static let sslVersionTLS12 = 6
        static let sslVersionTLS13 = 7
        /// `CURLOPT_CONNECT_ONLY`: 1 connects (and does TLS) only; 2 would be libcurl's own WebSocket mode.
        static let connectOnly: Int32 = 141
        /// `CURLOPT_CONNECTTIMEOUT_MS`
        static let connectTimeoutMilliseconds: Int32 = 156
    }

    enum Info {
        static let responseCode: Int32 = 0x200000 + 2
        /// `CURLINFO_CAINFO`, `CURLINFO_CAPATH` (libcurl 7.84 and later): the default CA file and directory.
        static let caInfo: Int32 = 0x100000 + 61
        static let caPath: Int32 = 0x100000 + 62
        // Timings in microseconds since the hop started (`curl_off_t`), then sizes and the connection.
        static let totalTime: Int32 = 0x600000 + 50
        static let nameLookupTime: Int32 = 0x600000 + 51
        static let connectTime: Int32 = 0x600000 + 52
        static let preTransferTime: Int32 = 0x600000 + 53
        static let startTransferTime: Int32 = 0x600000 + 54
        static let appConnectTime: Int32 = 0x600000 + 56
        /// libcurl 8.6 and later.
        static let queueTime: Int32 = 0x600000 + 65
        static let sizeUpload: Int32 = 0x600000 + 7
        static let sizeDownload: Int32 = 0x600000 + 8
        static let headerSize: Int32 = 0x200000 + 11
        static let requestSize: Int32 = 0x200000 + 12
        static let numConnects: Int32 = 0x200000 + 26
        static let primaryIP: Int32 = 0x100000 + 32
        static let primaryPort: Int32 = 0x200000 + 40
        static let httpVersion: Int32 = 0x200000 + 46
        /// `CURLINFO_ACTIVESOCKET` (7.45)
        static let activeSocket: Int32 = 0x500000 + 44
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
