import CCurlShim
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#elseif canImport(Musl)
import Musl
#endif

/// zlib, loaded at run time as libcurl is (libcurl itself depends on it, so it is present wherever libcurl is):
/// no header and no link-time dependency. `nil` where it cannot be loaded; WebSockets then do not offer
/// compression.
struct Zlib: @unchecked Sendable {
    typealias Stream = UnsafeMutablePointer<czlib_stream>

    let version: UnsafePointer<CChar>
    let deflateInit2: @convention(c) (Stream, Int32, Int32, Int32, Int32, Int32, UnsafePointer<CChar>, Int32) -> Int32
    let deflate: @convention(c) (Stream, Int32) -> Int32
    let deflateReset: @convention(c) (Stream) -> Int32
    let deflateEnd: @convention(c) (Stream) -> Int32
    let inflateInit2: @convention(c) (Stream, Int32, UnsafePointer<CChar>, Int32) -> Int32
    let inflate: @convention(c) (Stream, Int32) -> Int32
    let inflateReset: @convention(c) (Stream) -> Int32
    let inflateEnd: @convention(c) (Stream) -> Int32

    /// zlib, or `nil` when no candidate loads or one lacks a function.
    static let shared: Zlib? = load()

    private static let candidates = ["libz.so.1", "libz.so", "libz.1.dylib", "libz.dylib"]

    private static func load() -> Zlib? {
        guard let library = candidates.lazy.compactMap({ dlopen($0, RTLD_NOW | RTLD_LOCAL) }).first else { return nil }
        func symbol<T>(_ name: String) -> T? { dlsym(library, name).map { unsafeBitCast($0, to: T.self) } }
        typealias VersionFunction = @convention(c) () -> UnsafePointer<CChar>?
        guard let versionFunction: VersionFunction = symbol("zlibVersion"), let version = versionFunction(),
            let deflateInit2: @convention(c) (Stream, Int32, Int32, Int32, Int32, Int32, UnsafePointer<CChar>, Int32)
                -> Int32 = symbol("deflateInit2_"),
            let deflate: @convention(c) (Stream, Int32) -> Int32 = symbol("deflate"),
            let deflateReset: @convention(c) (Stream) -> Int32 = symbol("deflateReset"),
            let deflateEnd: @convention(c) (Stream) -> Int32 = symbol("deflateEnd"),
            let inflateInit2: @convention(c) (Stream, Int32, UnsafePointer<CChar>, Int32) -> Int32 = symbol("inflateInit2_"),
            let inflate: @convention(c) (Stream, Int32) -> Int32 = symbol("inflate"),
            let inflateReset: @convention(c) (Stream) -> Int32 = symbol("inflateReset"),
            let inflateEnd: @convention(c) (Stream) -> Int32 = symbol("inflateEnd")
        else { return nil }
        return Zlib(
            version: version, deflateInit2: deflateInit2, deflate: deflate, deflateReset: deflateReset,
            deflateEnd: deflateEnd, inflateInit2: inflateInit2, inflate: inflate, inflateReset: inflateReset,
            inflateEnd: inflateEnd)
    }

    /// The size zlib checks its callers' idea of `z_stream` against.
    static let streamSize = Int32(MemoryLayout<czlib_stream>.size)

    // The constants of zlib.h (stable ABI).
    static let ok: Int32 = 0
    static let streamEnd: Int32 = 1
    static let bufferError: Int32 = -5
    static let syncFlush: Int32 = 2
    static let deflated: Int32 = 8
    static let defaultStrategy: Int32 = 0
}
