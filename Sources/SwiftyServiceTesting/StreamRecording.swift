import Foundation
import SwiftyService

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension RecordingBackend: StreamingBackend {
    /// Streams through the wrapped backend (whole, if it does not stream) and records the exchange once the
    /// body is complete: the body redacted as a whole, and the size and time of each chunk. A stream that is
    /// cancelled or fails after its head is not recorded.
    public func stream(_ request: BackendRequest, into sink: StreamSink) -> BackendTask {
        guard let streaming = backend as? any StreamingBackend else {
            return send(request) { result in sink.deliver(result) }
        }
        let redaction = redaction.union(request.redaction)
        let taken = TakenStream()
        sink.tap { [self] event in
            switch event {
            case let .head(head):
                taken.begin(head)
            case let .chunk(chunk):
                taken.add(chunk)
            case .end(nil):
                guard let (response, chunks) = taken.whole() else { return }
                var interaction = Cassette.Interaction(request, .success(response), redaction: redaction)
                interaction.response?.chunks = chunks
                record(interaction)
            case let .end(error?):
                // A failure before the head is the answer, as for a plain request; after it, a broken stream.
                guard !taken.hasHead, error.kind != .cancelled else { return }
                record(Cassette.Interaction(request, .failure(error), redaction: redaction))
            }
        }
        return streaming.stream(request, into: sink)
    }
}

/// What a recorded stream has received so far.
private final class TakenStream: @unchecked Sendable {
    private struct State {
        var head: Response?
        var started = ProcessInfo.processInfo.systemUptime
        var body = Data()
        var chunks: [Cassette.RecordedChunk] = []
    }

    private let lock = NSLock()
    private var state = State()

    var hasHead: Bool { lock.withLock { state.head != nil } }

    func begin(_ head: Response) {
        lock.withLock {
            state.head = head
            state.started = ProcessInfo.processInfo.systemUptime
        }
    }

    func add(_ chunk: Data) {
        lock.withLock {
            state.body.append(chunk)
            state.chunks.append(
                Cassette.RecordedChunk(
                    at: ProcessInfo.processInfo.systemUptime - state.started, size: chunk.count))
        }
    }

    /// The response with its whole body, and its chunks.
    func whole() -> (Response, [Cassette.RecordedChunk])? {
        lock.withLock {
            guard let head = state.head else { return nil }
            return (
                Response(request: head.request, response: head.response, data: state.body), state.chunks
            )
        }
    }
}

extension ReplayBackend: StreamingBackend {
    /// Replays a recorded stream chunk by chunk, at its recorded pace times ``timeScale`` (0: at once); an
    /// interaction recorded whole comes as one chunk. What the cassette lacks goes as ``send(_:completion:)``
    /// says.
    public func stream(_ request: BackendRequest, into sink: StreamSink) -> BackendTask {
        guard let found = lookUp(request) else {
            // Not in the cassette: failed, or recorded whole (use a RecordingBackend to record streams).
            return sendMissing(request) { result in sink.deliver(result) }
        }
        guard let recorded = found.response, let chunks = recorded.chunks else {
            sink.deliver(found.replay(for: request.urlRequest))
            return .uncancellable
        }
        let body = recorded.body?.data ?? Data()
        var pieces: [StubBackend.Piece] = []
        var offset = 0
        var previous: TimeInterval = 0
        for (index, chunk) in chunks.enumerated() {
            let end = index == chunks.count - 1 ? body.count : min(body.count, offset + max(0, chunk.size))
            guard offset < end else { continue }
            pieces.append(
                StubBackend.Piece(
                    body.subdata(in: offset..<end), after: max(0, chunk.at - previous) * timeScale))
            offset = end
            previous = chunk.at
        }
        let answer = StubBackend.Answer.streamed(
            pieces, statusCode: recorded.status, headers: recorded.headers)
        return StubBackend { _ in answer }.stream(request, into: sink)
    }
}
