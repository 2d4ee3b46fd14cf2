// What a process holds, read from /proc on Linux: the leak checks of the tests and of the soak count these
// rather than estimate them.

import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The number of entries of /proc/self/fd (the listing's own descriptor included, the same every time).
public func openDescriptors() -> Int {
    ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).count
}

/// The names of this process's threads, as `ps -L` shows them (Linux keeps 15 characters of a name).
public func threadNames() -> [String] {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.map { task in
        ((try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)) ?? "")
            .trimmingCharacters(in: .newlines)
    }
}

/// The calling thread's name, as `ps -L` shows it (15 characters at most).
public func currentThreadName() -> String {
    ((try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "")
        .trimmingCharacters(in: .newlines)
}

/// The number of this process's threads named `name`.
public func threads(named name: String) -> Int {
    threadNames().filter { $0 == String(name.prefix(15)) }.count
}

/// VmRSS in KB, from /proc/self/status; -1 where it cannot be read.
public func residentKilobytes() -> Int {
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        return Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]) ?? -1
    }
    return -1
}

/// The sockets this process holds to `port` on 127.0.0.1: descriptors whose socket inode /proc/net/tcp
/// lists with that remote port.
public func openSockets(toPort port: Int) -> Int {
    let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    var inodes = Set<Substring>()
    for descriptor in descriptors {
        guard
            let target = try? FileManager.default.destinationOfSymbolicLink(
                atPath: "/proc/self/fd/\(descriptor)"),
            target.hasPrefix("socket:[")
        else { continue }
        inodes.insert(Substring(target.dropFirst("socket:[".count).dropLast()))
    }
    // Read to the end: String(contentsOfFile:) stops after the first page of /proc/net/tcp (about 27
    // sockets), and a connection listed past it went uncounted.
    let file = try? FileHandle(forReadingFrom: URL(fileURLWithPath: "/proc/net/tcp"))
    let table = String(decoding: (try? file?.readToEnd()) ?? Data(), as: UTF8.self)
    try? file?.close()
    let remote = String(format: ":%04X", port)
    return table.split(separator: "\n").dropFirst().filter { line in
        let fields = line.split(separator: " ")
        return fields.count > 9 && fields[2].hasSuffix(remote) && inodes.contains(fields[9])
    }.count
}

/// No free port could be found: `socket`, `bind` or `getsockname` failed.
public struct NoFreePort: Error, CustomStringConvertible {
    /// `no free loopback port: socket() failed`
    public let description: String
}

/// A port on 127.0.0.1 where nothing listens: connecting to it is refused.
public func closedPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw NoFreePort(description: "no free loopback port: socket() failed") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
        }
    }
    guard bound else { throw NoFreePort(description: "no free loopback port: bind() failed") }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// VmHWM in KB, from /proc/self/status: the most resident memory since the process started, or since
/// ``resetPeakResident()``; -1 where it cannot be read.
public func peakResidentKilobytes() -> Int {
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
        return Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]) ?? -1
    }
    return -1
}

/// Starts ``peakResidentKilobytes()`` over from the resident memory now (Linux: `5` to /proc/self/clear_refs).
public func resetPeakResident() {
    try? Data("5".utf8).write(to: URL(fileURLWithPath: "/proc/self/clear_refs"))
}
