import Foundation

/// One server-sent event, as an `EventSource` would dispatch it.
public struct ServerSentEvent: Sendable, Hashable {
    /// The event type: the `event` field, `"message"` when the server sent none.
    public var event: String
    /// The `data` fields, joined by line feeds.
    public var data: String
    /// The last event ID at the time of this event (it carries over from earlier events; `""` for none).
    public var id: String
    /// The reconnection time in milliseconds, when this event's block set one.
    public var retry: Int?

    /// An event with these fields.
    public init(event: String = "message", data: String, id: String = "", retry: Int? = nil) {
        self.event = event
        self.data = data
        self.id = id
        self.retry = retry
    }
}

/// Parses an event stream (`text/event-stream`) that arrives in chunks, by the WHATWG HTML rules: a
/// leading BOM is skipped, lines end in LF, CR or CRLF, lines starting with `:` are comments, a field
/// without a colon has an empty value, one space after the colon is dropped, `data` lines join with LF,
/// an `id` containing NUL is ignored, `retry` takes ASCII digits only, a blank line dispatches the event
/// (none when it has no data), and an event the stream ends in the middle of is dropped.
public struct ServerSentEventParser: Sendable {
    /// The default largest event: 1 MiB of data.
    public static let defaultMaxEventSize = 1 << 20

    private var lines: LineSplitter
    private let maxEventSize: Int
    private var startOfStream = true
    private var start: [UInt8] = []
    private var eventType = ""
    private var data: [UInt8] = []
    private var hasData = false
    private var retry: Int?
    /// The last event ID: it stays from event to event.
    public private(set) var lastEventID = ""
    /// The reconnection time the server asked for last, in milliseconds.
    public private(set) var reconnectionTime: Int?

    /// A parser that throws ``StreamItemTooLarge`` for an event (or line) larger than `maxEventSize` bytes.
    public init(maxEventSize: Int = ServerSentEventParser.defaultMaxEventSize) {
        self.maxEventSize = maxEventSize
        lines = LineSplitter(maxLineLength: maxEventSize)
    }

    /// The events that `chunk` completes.
    public mutating func parse(_ chunk: Data) throws(StreamItemTooLarge) -> [ServerSentEvent] {
        var events: [ServerSentEvent] = []
        var chunk = chunk
        if startOfStream {
            // A BOM may be split across chunks: hold the first bytes until they are, or cannot be, one.
            start.append(contentsOf: chunk)
            if start.count < 3, Self.byteOrderMark.starts(with: start) { return [] }
            startOfStream = false
            chunk = Data(start.starts(with: Self.byteOrderMark) ? start.dropFirst(3) : start[...])
            start = []
        }
        // The splitter is moved out while it calls back into this parser (no overlapping access).
        var splitter = lines
        lines = LineSplitter(maxLineLength: 0)
        defer { lines = splitter }
        do {
            try splitter.split(chunk) { line in
                if let event = try process(line) { events.append(event) }
            }
        } catch {
            throw error as? StreamItemTooLarge ?? StreamItemTooLarge(item: "event", limit: maxEventSize)
        }
        return events
    }

    private static let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]

    /// The end of the stream: an event without its blank line is dropped, as `EventSource` does.
    public mutating func finish() {
        _ = lines.finish()
        data = []
        hasData = false
        eventType = ""
        retry = nil
    }

    /// A new connection of the same event source: its stream starts over (a BOM again, no partial event),
    /// the last event ID and the reconnection time stay.
    mutating func restart() {
        finish()
        startOfStream = true
        start = []
    }

    private mutating func process(_ line: UnsafeRawBufferPointer) throws(StreamItemTooLarge)
        -> ServerSentEvent?
    {
        guard !line.isEmpty else { return dispatch() }
        if line[0] == UInt8(ascii: ":") { return nil }
        let colon = line.firstIndex(of: UInt8(ascii: ":"))
        let name = UnsafeRawBufferPointer(rebasing: line[0..<(colon ?? line.count)])
        var valueStart = colon.map { $0 + 1 } ?? line.count
        if valueStart < line.count, line[valueStart] == UInt8(ascii: " ") { valueStart += 1 }
        let value = UnsafeRawBufferPointer(rebasing: line[valueStart..<line.count])
        if name.elementsEqual("data".utf8) {
            guard data.count + value.count + 1 <= maxEventSize else {
                throw StreamItemTooLarge(item: "event", limit: maxEventSize)
            }
            if hasData { data.append(UInt8(ascii: "\n")) }
            data.append(contentsOf: value)
            hasData = true
        } else if name.elementsEqual("event".utf8) {
            eventType = String(decoding: value, as: UTF8.self)
        } else if name.elementsEqual("id".utf8) {
            if !value.contains(0) { lastEventID = String(decoding: value, as: UTF8.self) }
        } else if name.elementsEqual("retry".utf8) {
            if !value.isEmpty, value.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
                let milliseconds = Int(String(decoding: value, as: UTF8.self))
            {
                retry = milliseconds
                reconnectionTime = milliseconds
            }
        }
        return nil
    }

    private mutating func dispatch() -> ServerSentEvent? {
        defer {
            data.removeAll(keepingCapacity: true)
            hasData = false
            eventType = ""
            retry = nil
        }
        guard hasData else { return nil }
        return ServerSentEvent(
            event: eventType.isEmpty ? "message" : eventType, data: String(decoding: data, as: UTF8.self),
            id: lastEventID, retry: retry)
    }
}
