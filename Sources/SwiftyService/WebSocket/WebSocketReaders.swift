/// A socket's readers waiting for its next message, first come first served, each under a number of its own so
/// that one whose task is cancelled can leave the line. The engine's and the stub's socket keep one each, in the
/// state they lock (``WaitsForWebSocketMessages``).
struct WebSocketReaders {
    typealias Reader = CheckedContinuation<WebSocketMessage?, any Error>

    private var waiting: [(id: UInt64, reader: Reader)] = []
    private var lastID: UInt64 = 0

    var isEmpty: Bool { waiting.isEmpty }

    /// The first in line, out of the line.
    mutating func popFirst() -> Reader? {
        waiting.isEmpty ? nil : waiting.removeFirst().reader
    }

    /// Every reader, out of the line.
    mutating func removeAll() -> [Reader] {
        defer { waiting = [] }
        return waiting.map(\.reader)
    }

    fileprivate mutating func newID() -> UInt64 {
        lastID += 1
        return lastID
    }

    fileprivate mutating func append(_ reader: Reader, id: UInt64) {
        waiting.append((id, reader))
    }

    fileprivate mutating func remove(id: UInt64) -> Reader? {
        waiting.firstIndex { $0.id == id }.map { waiting.remove(at: $0).reader }
    }
}

/// State, under a ``Locked``, that holds a socket's waiting readers (its type reaches a cancellation handler).
protocol WaitsForWebSocketMessages: SendableMetatype {
    var readers: WebSocketReaders { get set }
}

extension Locked where Value: WaitsForWebSocketMessages {
    /// Waits as the socket's reader: `answer`, under the lock, gives the next message or the end now, or `nil`
    /// for the reader to join the line until a message or the end is handed to it. A reader whose task is
    /// cancelled takes nothing, leaves the line and throws `CancellationError`; the socket stays open.
    func awaitMessage(_ answer: (inout Value) -> Result<WebSocketMessage?, any Error>?) async throws
        -> WebSocketMessage?
    {
        let id = withLock { $0.readers.newID() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (reader: WebSocketReaders.Reader) in
                let now = withLock { state -> Result<WebSocketMessage?, any Error>? in
                    if let now = answer(&state) { return now }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    state.readers.append(reader, id: id)
                    return nil
                }
                if let now { reader.resume(with: now) }
            }
        } onCancel: {
            withLock { $0.readers.remove(id: id) }?.resume(throwing: CancellationError())
        }
    }
}
