import Foundation

/// A line or event of a stream went past its size limit; the stream stops there.
public struct StreamItemTooLarge: Error, Sendable, CustomStringConvertible {
    /// What was too large: `"line"` or `"event"`.
    public let item: String
    /// The limit, in bytes.
    public let limit: Int

    /// A limit of `limit` bytes on a streamed `item` (`"line"` or `"event"`) that was exceeded.
    public init(item: String, limit: Int) {
        self.item = item
        self.limit = limit
    }

    /// `a streamed line is longer than 1048576 bytes`
    public var description: String { "a streamed \(item) is longer than \(limit) bytes" }
}

/// Splits bytes that arrive in chunks into lines ended by LF, CR or CRLF; a character split across chunks
/// is put back together, since lines are decoded as UTF-8 only when whole.
///
/// A line longer than the limit ends the splitting, but never costs the lines before it: ``split(_:)``
/// returns every line the chunk completed before the long one, and the error comes after them.
public struct LineSplitter: Sendable {
    /// The default longest line: 1 MiB.
    public static let defaultMaxLineLength = 1 << 20

    private let maxLineLength: Int
    private var partial: [UInt8] = []
    /// The last chunk ended in CR: an LF that starts the next one belongs to it.
    private var afterCR = false
    /// The line that was too long, once one was: every later call throws it.
    private var failure: StreamItemTooLarge?

    /// A splitter that throws ``StreamItemTooLarge`` for a line longer than `maxLineLength` bytes.
    public init(maxLineLength: Int = LineSplitter.defaultMaxLineLength) {
        self.maxLineLength = maxLineLength
    }

    /// The lines that `chunk` completes, without their terminators.
    ///
    /// - Throws: ``StreamItemTooLarge`` for a line longer than the limit — at once when the chunk completed
    ///   no line before it; otherwise the lines before it are returned and the next call (`split` or
    ///   ``finish()``) throws. Every call after that throws it too.
    public mutating func split(_ chunk: Data) throws(StreamItemTooLarge) -> [String] {
        if let failure { throw failure }
        let (lines, failure) = lines(in: chunk)
        self.failure = failure
        if let failure, lines.isEmpty { throw failure }
        return lines
    }

    /// The lines `chunk` completes up to the first one that is too long, and that one's error: the splitter
    /// stops there (what follows is not looked at).
    mutating func lines(in chunk: Data) -> (lines: [String], failure: StreamItemTooLarge?) {
        var lines: [String] = []
        do {
            try split(chunk) { line in lines.append(String(decoding: line, as: UTF8.self)) }
        } catch {
            // Only the splitter throws here, and only this.
            return (lines, error as? StreamItemTooLarge ?? tooLong)
        }
        return (lines, nil)
    }

    /// The last line, if the stream did not end with a terminator.
    /// - Throws: ``StreamItemTooLarge`` when a line was too long, and ``split(_:)`` returned the lines
    ///   before it without throwing yet.
    public mutating func finish() throws(StreamItemTooLarge) -> String? {
        if let failure { throw failure }
        return finishLine()
    }

    /// The last line, if the stream did not end with a terminator (whatever happened before).
    mutating func finishLine() -> String? {
        afterCR = false
        guard !partial.isEmpty else { return nil }
        defer { partial = [] }
        return String(decoding: partial, as: UTF8.self)
    }

    /// Calls `body` with each line's bytes that `chunk` completes (valid only during the call); throws
    /// ``StreamItemTooLarge`` or what `body` throws.
    mutating func split(_ chunk: Data, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        try chunk.withUnsafeBytes { bytes in try splitBytes(bytes, body) }
    }

    private mutating func splitBytes(
        _ bytes: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws -> Void
    )
        throws
    {
        var start = 0
        if afterCR, bytes.first == UInt8(ascii: "\n") { start = 1 }
        afterCR = false
        var index = start
        let count = bytes.count
        while index < count {
            let byte = bytes[index]
            guard byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r") else {
                index += 1
                continue
            }
            let piece = UnsafeRawBufferPointer(rebasing: bytes[start..<index])
            if partial.isEmpty {
                guard piece.count <= maxLineLength else { throw tooLong }
                try body(piece)
            } else {
                guard partial.count + piece.count <= maxLineLength else { throw tooLong }
                partial.append(contentsOf: piece)
                try partial.withUnsafeBytes { line in try body(line) }
                partial.removeAll(keepingCapacity: true)
            }
            index += 1
            if byte == UInt8(ascii: "\r") {
                if index < count {
                    if bytes[index] == UInt8(ascii: "\n") { index += 1 }
                } else {
                    afterCR = true
                }
            }
            start = index
        }
        if start < count {
            guard partial.count + (count - start) <= maxLineLength else { throw tooLong }
            partial.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[start..<count]))
        }
    }

    private var tooLong: StreamItemTooLarge { StreamItemTooLarge(item: "line", limit: maxLineLength) }
}
