import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A response whose body arrives while you read it: the validated head in ``response``, then the body as an
/// `AsyncSequence` of byte chunks, or as ``lines``, ``serverSentEvents`` or ``jsonLines(as:decoder:maxLineLength:)``.
///
/// The body can be read once. Leaving the loop early, cancelling the task, or letting go of a stream that
/// was never read stops the transfer at once and frees its connection. Failures are ``ServiceError``s:
/// the realm's timeout is the longest silence between chunks, a realm's resource timeout covers the whole
/// stream, and a line or event past its limit ends it with ``StreamItemTooLarge``. An item that fails (too
/// long, or a JSON line that does not decode) ends the items, but every item before it is handed out
/// first, in order, however the body was split into chunks.
public struct ResponseStream: AsyncSequence, Sendable {
    /// A chunk of the body.
    public typealias Element = Data

    /// The response head, status and headers (its `data` is empty), validated against the endpoint's statuses.
    public let response: Response
    let sink: StreamSink
    /// What stops the transfer when the stream is let go of unread; `nil` for a body that is whole already.
    private let owner: BodyOwner?

    init(response: Response, body: StreamSink, owner: BodyOwner?) {
        self.response = response
        sink = body
        self.owner = owner
    }

    /// Reads the body chunk by chunk.
    public func makeAsyncIterator() -> Iterator {
        let owns = sink.startIterating()
        return Iterator(reader: ChunkReader(sink, owns: owns))
    }

    /// Reads the body's chunks as they come.
    public struct Iterator: AsyncIteratorProtocol {
        let reader: ChunkReader

        /// The next chunk; `nil` at the end of the body.
        /// - Throws: ``ServiceError`` only.
        public mutating func next() async throws -> Data? {
            try await reader.next()
        }
    }

    /// Whether a loop is waiting for the next chunk (for tests).
    var hasWaitingReader: Bool { sink.hasWaitingReader }

    /// The bytes of body handed out so far (for logging at the end of a stream).
    public var byteCount: Int64 { sink.byteCount }

    /// The body as lines ended by LF, CR or CRLF, decoded as UTF-8.
    /// - Parameter maxLength: the longest line in bytes; a longer one ends the stream with ``StreamItemTooLarge``.
    public func lines(maxLength: Int = LineSplitter.defaultMaxLineLength) -> StreamedItems<String> {
        let sink = sink
        return StreamedItems(stream: self) {
            var splitter = LineSplitter(maxLineLength: maxLength)
            return { chunk in
                guard let chunk else { return (splitter.finishLine().map { [$0] } ?? [], nil) }
                let (lines, failure) = splitter.lines(in: chunk)
                return (lines, failure)
            }
        } failure: {
            sink.request
        }
    }

    /// The body as lines, each at most 1 MiB: ``lines(maxLength:)`` with its default.
    public var lines: StreamedItems<String> { lines() }

    /// The body as server-sent events (`text/event-stream`), parsed by ``ServerSentEventParser``.
    /// - Parameter maxEventSize: the largest event's data in bytes; a larger one ends the stream with
    ///   ``StreamItemTooLarge``.
    public func serverSentEvents(maxEventSize: Int = ServerSentEventParser.defaultMaxEventSize)
        -> StreamedItems<ServerSentEvent>
    {
        let sink = sink
        return StreamedItems(stream: self) {
            var parser = ServerSentEventParser(maxEventSize: maxEventSize)
            return { chunk in
                guard let chunk else {
                    parser.endOfStream()
                    return ([], nil)
                }
                let (events, failure) = parser.events(in: chunk)
                return (events, failure)
            }
        } failure: {
            sink.request
        }
    }

    /// The body as server-sent events, each at most 1 MiB: ``serverSentEvents(maxEventSize:)`` with its default.
    public var serverSentEvents: StreamedItems<ServerSentEvent> { serverSentEvents() }

    /// The body as JSON Lines: one `T` decoded from each line; blank lines are skipped.
    /// - Throws: while iterating, ``ServiceError/decoding(_:underlying:)`` for a line that does not decode,
    ///   with that line as the response's data, once every value before it has been handed out.
    public func jsonLines<T: Decodable & Sendable>(
        as type: T.Type, decoder: JSONDecoder = JSONDecoder(),
        maxLineLength: Int = LineSplitter.defaultMaxLineLength
    ) -> StreamedItems<T> {
        let head = response
        let sink = sink
        return StreamedItems(stream: self) {
            var splitter = LineSplitter(maxLineLength: maxLineLength)
            /// The values of `lines` up to the first that does not decode, then `failure` if all did.
            func decode(_ lines: [String], then failure: (any Error)?) -> ([T], (any Error)?) {
                var values: [T] = []
                values.reserveCapacity(lines.count)
                for line in lines where line.contains(where: { !$0.isWhitespace }) {
                    let data = Data(line.utf8)
                    do {
                        values.append(try decoder.decode(T.self, from: data))
                    } catch {
                        var answer = head
                        answer.data = data
                        return (values, ServiceError.decoding(answer, underlying: error))
                    }
                }
                return (values, failure)
            }
            return { chunk in
                guard let chunk else { return decode(splitter.finishLine().map { [$0] } ?? [], then: nil) }
                let (lines, failure) = splitter.lines(in: chunk)
                return decode(lines, then: failure)
            }
        } failure: {
            sink.request
        }
    }
}

/// Items made from a stream's chunks — lines, events, decoded values — as an `AsyncSequence`.
public struct StreamedItems<Item: Sendable>: AsyncSequence, Sendable {
    /// One item.
    public typealias Element = Item
    /// Turns one chunk (or `nil`, the end) into the items it completes, up to the first that fails, and
    /// that failure: the items go out first, then the failure ends the sequence.
    typealias Transform = (Data?) -> (items: [Item], failure: (any Error)?)

    private let stream: ResponseStream
    private let makeTransform: @Sendable () -> Transform
    private let request: @Sendable () -> URLRequest

    init(
        stream: ResponseStream, _ makeTransform: @escaping @Sendable () -> Transform,
        failure request: @escaping @Sendable () -> URLRequest
    ) {
        self.stream = stream
        self.makeTransform = makeTransform
        self.request = request
    }

    /// Reads the items.
    public func makeAsyncIterator() -> Iterator {
        Iterator(chunks: stream.makeAsyncIterator(), transform: makeTransform(), request: request())
    }

    /// Reads the items as their chunks come.
    public struct Iterator: AsyncIteratorProtocol {
        var chunks: ResponseStream.Iterator
        let transform: Transform
        let request: URLRequest
        var ready: [Item] = []
        var index = 0
        var ended = false
        /// What ends the items once those before it in `ready` are out.
        var failure: (any Error)?

        /// The next item; `nil` at the end of the body.
        /// - Throws: ``ServiceError`` only.
        public mutating func next() async throws -> Item? {
            while index == ready.count {
                if let failure {
                    self.failure = nil
                    ended = true
                    throw end(with: failure)
                }
                if ended { return nil }
                let chunk = try await chunks.next()
                if chunk == nil { ended = true }
                (ready, failure) = transform(chunk)
                index = 0
            }
            defer { index += 1 }
            return ready[index]
        }

        /// Stops the transfer because of an item that failed, and says why as the ``ServiceError`` to throw.
        private func end(with failure: any Error) -> any Error {
            if let tooLarge = failure as? StreamItemTooLarge {
                let error = ServiceError.transport(request, underlying: tooLarge)
                chunks.reader.sink.stop(with: error)
                return error
            }
            chunks.reader.sink.cancel()
            return failure
        }
    }
}

/// One reading of a stream's body; when the first one is let go of (the loop left early), the transfer
/// stops. (A later one, which can only fail or find the end, stops nothing.)
final class ChunkReader: Sendable {
    let sink: StreamSink
    private let owns: Bool

    init(_ sink: StreamSink, owns: Bool) {
        self.sink = sink
        self.owns = owns
    }

    func next() async throws -> Data? {
        try await sink.next()
    }

    deinit {
        // Nothing to stop after the end: the sink ignores it.
        if owns { sink.cancel() }
    }
}
