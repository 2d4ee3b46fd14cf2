#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#elseif canImport(Musl)
import Musl
#endif

extension WebSocketMessage {
    /// The bytes the message holds.
    var byteCount: Int {
        switch self {
        case let .text(text): text.utf8.count
        case let .binary(data): data.count
        }
    }
}

/// `write(2)`, named apart from the engine's own methods.
func systemWrite(_ descriptor: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
    #if canImport(Glibc)
    Glibc.write(descriptor, bytes, count)
    #elseif canImport(Darwin)
    Darwin.write(descriptor, bytes, count)
    #else
    Musl.write(descriptor, bytes, count)
    #endif
}

/// `read(2)`.
func systemRead(_ descriptor: Int32, _ bytes: UnsafeMutableRawPointer, _ count: Int) -> Int {
    #if canImport(Glibc)
    Glibc.read(descriptor, bytes, count)
    #elseif canImport(Darwin)
    Darwin.read(descriptor, bytes, count)
    #else
    Musl.read(descriptor, bytes, count)
    #endif
}

/// `close(2)`.
func systemClose(_ descriptor: Int32) {
    #if canImport(Glibc)
    _ = Glibc.close(descriptor)
    #elseif canImport(Darwin)
    _ = Darwin.close(descriptor)
    #else
    _ = Musl.close(descriptor)
    #endif
}
