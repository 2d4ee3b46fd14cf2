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
///
/// The last event ID follows the standard's model. An `id` field sets the *last event ID buffer*; each
/// blank line copies that buffer into ``lastEventID`` (the event source's *last event ID string*), whether
/// or not an event is dispatched — so a block with an `id` and no data moves it too. ``lastEventID`` is
/// therefore never ahead of the events ``parse(_:)`` has returned: it is the ID a reconnection sends as
/// `Last-Event-ID`, and the one to resume from. Each event's ``ServerSentEvent/id`` is the value
/// ``lastEventID`` took when it was dispatched.
///
/// An event past the size limit ends the parsing, but never costs the events before it: ``parse(_:)``
/// returns every event the chunk completed before it, and the error comes after them.
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
    /// The last event ID buffer: set by `id` fields, copied to ``lastEventID`` at each blank line.
    private var idBuffer = ""
    /// The event past the limit, once there was one: every later call throws it.
    private var failure: StreamItemTooLarge?
    /// The last event ID as of the last blank line read: the `id` of the last event returned, or of a
    /// later block that had an `id` and no data; `""` for none. It carries over from event to event and
    /// across ``finish()``; an `id` line whose block has not ended does not count yet.
    public private(set) var lastEventID = ""
    /// The reconnection time the server asked for last, in milliseconds.
    public private(set) var reconnectionTime: Int?

    /// A parser that throws ``StreamItemTooLarge`` for an event (or line) larger than `maxEventSize` bytes.
    public init(maxEventSize: Int = ServerSentEventParser.defaultMaxEventSize) {
        self.maxEventSize = maxEventSize
        lines = LineSplitter(maxLineLength: maxEventSize)
    }

    /// The events that `chunk` completes.
    ///
    /// - Throws: ``StreamItemTooLarge`` for an event (or line) past the limit — at once when the chunk
    ///   completed no event before it; otherwise the events before it are returned and the next call
    ///   (`parse` or ``finish()``) throws. Every call after that throws it too.
    public mutating func parse(_ chunk: Data) throws(StreamItemTooLarge) -> [ServerSentEvent] {
        if let failure { throw failure }
        let (events, failure) = events(in: chunk)
        self.failure = failure
        if let failure, events.isEmpty { throw failure }
        return events
    }

    /// The events `chunk` completes up to the first one past the limit, and that one's error: the parser
    /// stops there (what follows is not looked at).
    mutating func events(in chunk: Data) -> (events: [ServerSentEvent], failure: StreamItemTooLarge?) {
        var events: [ServerSentEvent] = []
        var chunk = chunk
        if startOfStream {
            // A BOM may be split across chunks: hold the first bytes until they are, or cannot be, one.
            start.append(contentsOf: chunk)
            if start.count < 3, Self.byteOrderMark.starts(with: start) { return ([], nil) }
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
            return (
                events, error as? StreamItemTooLarge ?? StreamItemTooLarge(item: "event", limit: maxEventSize)
            )
        }
        return (events, nil)
    }

    private static let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]

    /// The end of the stream: an event without its blank line is dropped, as `EventSource` does (an `id`
    /// in it included: ``lastEventID`` stays).
    /// - Throws: ``StreamItemTooLarge`` when an event was past the limit, and ``parse(_:)`` returned the
    ///   events before it without throwing yet.
    public mutating func finish() throws(StreamItemTooLarge) {
        if let failure { throw failure }
        endOfStream()
    }

    /// The end of the stream, whatever happened before: the event without its blank line goes.
    mutating func endOfStream() {
        _ = lines.finishLine()
        data = []
        hasData = false
        eventType = ""
        retry = nil
        idBuffer = lastEventID
    }

    /// A new connection of the same event source: its stream starts over (a BOM again, no partial event),
    /// the last event ID and the reconnection time stay.
    mutating func restart() {
        endOfStream()
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
            if !value.contains(0) { idBuffer = String(decoding: value, as: UTF8.self) }
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

    /// A blank line: the last event ID takes the buffer's value, then the event goes if it has data.
    private mutating func dispatch() -> ServerSentEvent? {
        lastEventID = idBuffer
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
