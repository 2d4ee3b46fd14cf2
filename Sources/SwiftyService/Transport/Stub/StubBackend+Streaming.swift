import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension StubBackend: StreamingBackend {
    /// Answers as ``send(_:completion:)`` would, then streams the answer's ``Answer/pieces`` (or its whole
    /// body as one chunk), each after its delay; a delay longer than the request's timeout ends the stream
    /// as timed out at the timeout, as a silent server would. A full buffer holds the next piece back.
    public func stream(_ request: BackendRequest, into sink: StreamSink) -> BackendTask {
        let scripted = record(request)
        let answer: Result<Answer, any Error> =
            scripted.map { .success($0) } ?? Result { try unmatched(request) }
        let headDelay: TimeInterval =
            switch (try? answer.get())?.delay {
            case let delay?: delay
            case nil: if case let .delayed(delay) = timing { delay } else { 0 }
            }
        let stream = StubStream(request: request, sink: sink, answer: answer)
        stream.start(after: headDelay)
        return BackendTask { stream.stop() }
    }
}

/// One stubbed answer, streamed piece by piece on a queue of its own.
private final class StubStream: Sendable {
    private let request: BackendRequest
    private let sink: StreamSink
    private let answer: Result<StubBackend.Answer, any Error>
    private let queue = DispatchQueue(label: "SwiftyService.StubStream")
    private let timeout: TimeInterval
    private let state = Locked.make(State())

    private struct State {
        var stopped = false
        /// The piece the sink refused, to offer again once it has drained.
        var heldBack: Int?
    }

    init(request: BackendRequest, sink: StreamSink, answer: Result<StubBackend.Answer, any Error>) {
        self.request = request
        self.sink = sink
        self.answer = answer
        timeout = request.urlRequest.timeoutInterval.usableTimeout
    }

    private var pieces: [StubBackend.Piece] {
        guard case let .success(answer) = answer else { return [] }
        return answer.pieces ?? [StubBackend.Piece(answer.data ?? request.sampleData)]
    }

    func start(after delay: TimeInterval) {
        sink.whenDrained { [self] in
            guard
                let index = state.withLock({ state -> Int? in
                    defer { state.heldBack = nil }
                    return state.heldBack
                })
            else { return }
            queue.async { self.offer(index) }
        }
        schedule(after: delay) { [self] in
            switch answer {
            case let .failure(error):
                sink.fail(error)
            case let .success(answer):
                if let failure = answer.failure { return sink.fail(failure) }
                sink.head(
                    Response(
                        request: request.urlRequest, statusCode: answer.statusCode, headers: answer.headers))
                send(0)
            }
        }
    }

    func stop() {
        state.withLock { $0.stopped = true }
        sink.fail(URLError(.cancelled))
    }

    /// Runs `work` on the queue after `delay`, unless stopped; past the timeout, the stream times out instead.
    private func schedule(after delay: TimeInterval, _ work: @escaping @Sendable () -> Void) {
        let delay = delay > 0 ? delay : 0  // NaN and negative delays are none
        let timedOut = delay > timeout
        queue.asyncAfter(deadline: .now() + min(delay, timeout)) { [self] in
            guard !state.withLock({ $0.stopped }) else { return }
            if timedOut { return sink.fail(URLError(.timedOut)) }
            work()
        }
    }

    private func send(_ index: Int) {
        let pieces = pieces
        guard index < pieces.count else { return sink.finish() }
        schedule(after: pieces[index].delay) { [self] in offer(index) }
    }

    private func offer(_ index: Int) {
        guard !state.withLock({ $0.stopped }) else { return }
        state.withLock { $0.heldBack = index }
        guard sink.offer(pieces[index].data) else { return }
        state.withLock { $0.heldBack = nil }
        send(index + 1)
    }
}
