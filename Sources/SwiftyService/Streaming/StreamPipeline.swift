import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A streamed request's way to its head: the same middleware chain as a plain request (Pipeline.swift),
/// each attempt an exchange of its own that is answered when the head arrives. The body then flows
/// through the attempt's ``StreamSink`` outside the exchange, so a retry can only happen before the
/// first body byte is handed out.
extension PreparedRequest {
    /// Sends the request and returns its stream once the head has arrived and its status was accepted.
    /// - Throws: ``ServiceError`` only; for a refused status, with the error body read and decoded.
    func openStream() async throws(ServiceError) -> ResponseStream {
        let events = backendRequest.events
        events?.emit(.built(urlRequest))
        let ends = StreamEndHandlers()
        do {
            let (stream, sink) = try await openStream(ends: ends)
            // The call ends with its body: then its observers and its middleware hear how. (The handler holds
            // the head, not the stream: a stream let go of unread must still stop.)
            let head = stream.response
            sink.whenEnded { bytes, error in
                ends.end(bytes: bytes, error: error)
                if let error {
                    events?.emit(.failed(error, metrics: []))
                } else {
                    events?.emit(.completed(head))
                }
            }
            return stream
        } catch {
            ends.end(bytes: 0, error: error)
            events?.emit(.failed(error, metrics: error.metrics))
            throw error
        }
    }

    private func openStream(ends: StreamEndHandlers) async throws(ServiceError) -> (
        ResponseStream, StreamSink
    ) {
        let attempts = StreamAttempts()
        let context = RequestContext(
            builtFrom: backendRequest.builtFrom, crudMethod: backendRequest.crudMethod,
            redaction: backendRequest.redaction, counter: AttemptCounter(), events: backendRequest.events,
            metricsLog: nil, streamEnd: ends)
        // A stream gets the deadline its settings chose, never the default of a buffered request.
        if let resourceTimeout = limits.resourceTimeout(for: .stream) {
            let request = urlRequest
            attempts.keep(
                Deadline(after: resourceTimeout) {
                    attempts.stop(with: .deadlinePassed(request, after: resourceTimeout))
                })
        }
        let head: Response
        do {
            head = try await streamLink(0, context: context, attempts: attempts)(urlRequest)
        } catch {
            attempts.stop(with: .cancelled(urlRequest))
            throw ServiceError(error, request: urlRequest, attempts: context.attempts)
        }
        // A middleware may answer by itself (a cache hit): its response is the whole body.
        guard let sink = try attempts.sink(answering: head) else {
            attempts.stop(with: .cancelled(urlRequest))
            if case let .failure(error) = verdict(on: head) { throw error }
            let whole = StreamSink(whole: head)
            var headOnly = head
            headOnly.data = Data()
            return (ResponseStream(response: headOnly, sink: whole), whole)
        }
        if !validStatusCodes.contains(head.statusCode) {
            var whole = head
            do {
                whole.data = try await sink.collect(
                    limit: limits.maxResponseSize(for: .stream) ?? Self.errorBodyLimit)
            } catch {
                // The status is the news; a body that could not be read leaves the error body out.
            }
            sink.cancel()
            if case let .failure(error) = verdict(on: whole) { throw error }
        }
        attempts.handOver(to: sink)
        return (ResponseStream(response: head, sink: sink), sink)
    }

    /// Streams the request in a task of its own, handing each chunk to `chunk`; `delivery` runs once, with
    /// the head when the body is complete. Both run on the realm's callback queue if it has one.
    func startStream(
        chunk: @escaping @Sendable (Data) -> Void, delivering delivery: @escaping Exchange.Waiter
    ) -> RequestHandle {
        let exchange = Exchange(request: urlRequest)
        exchange.wait(Exchange.waiter(delivery, on: callbackQueue))
        let queue = callbackQueue
        let request = urlRequest
        exchange.start { answer in
            let task = Task {
                do {
                    let stream = try await openStream()
                    for try await piece in stream {
                        // After a cancel the completion has gone out already: nothing may follow it.
                        guard !exchange.isFinished else { break }
                        if let queue { queue.async { chunk(piece) } } else { chunk(piece) }
                    }
                    answer(.success(stream.response))
                } catch {
                    answer(.failure(ServiceError(error, request: request)))
                }
            }
            return BackendTask { task.cancel() }
        }
        return RequestHandle(exchange)
    }

    /// The most of a refused stream's body that is read for its error body, unless the realm sets a size limit.
    static let errorBodyLimit = 1 << 20

    /// The chain from middleware `index` on; past the last one, one streamed attempt at the backend.
    private func streamLink(_ index: Int, context: RequestContext, attempts: StreamAttempts) -> MiddlewareNext
    {
        guard index < middleware.count else {
            return MiddlewareNext { request in
                try await self.streamAttempt(request, context: context, attempts: attempts)
            }
        }
        let current = middleware[index]
        let next = streamLink(index + 1, context: context, attempts: attempts)
        return MiddlewareNext { request in
            try Task.checkCancellation()
            return try await current.intercept(request, context: context, next: next)
        }
    }

    /// One trip to the backend that ends with the head; the body waits in the attempt's sink. A new attempt
    /// (a retry) stops the one before it.
    private func streamAttempt(_ request: URLRequest, context: RequestContext, attempts: StreamAttempts)
        async throws -> Response
    {
        var (number, sent) = try attemptRequest(request, context: context)
        // A stream's body goes to its reader, not to a file, and only its lines and events have a size limit.
        sent.downloadFile = nil
        let streaming = backend as? any StreamingBackend
        sent.maxResponseSize = streaming != nil ? nil : limits.maxResponseSize(for: .stream)
        try sent.adapt(for: backend)
        try sent.addCookies()
        context.events?.emit(.attemptStarted(attempt: number, sent.urlRequest))
        let attempt = Exchange(request: request)
        let backend = backend
        // The exchange's answer function exists once the attempt starts; the head cannot come before that.
        let relay = Locked.make(nil as (@Sendable (Exchange.Outcome) -> Void)?)
        let sink = StreamSink(request: request) { head in
            relay.value?(head.mapError { ServiceError($0, request: request) })
        }
        guard attempts.add(sink) else { throw ServiceError.cancelled(request, attempts: number) }
        let outcome = await withTaskCancellationHandler {
            attempt.start { [sent] answer in
                relay.withLock { $0 = answer }
                let task =
                    if let streaming {
                        streaming.stream(sent, into: sink)
                    } else {
                        backend.send(sent) { result in sink.deliver(result) }
                    }
                sink.attach(task)
                return task
            }
            return await attempt.outcome(cancelling: true)
        } onCancel: {
            attempt.cancel()
        }
        var head = try outcome.mapError { $0.counting(number) }.get()
        head.attempts = number
        context.events?.emit(.responseHead(attempt: number, head.response))
        if let jar = sent.cookieJar { head.keepCookies(in: jar) }
        attempts.record(head, of: sink)
        return head
    }
}

/// The attempts of one streamed request: the newest one's sink, which the head that comes out of the chain
/// belongs to, and the resource deadline over them all.
final class StreamAttempts: Sendable {
    private struct State {
        var sink: StreamSink?
        var head: (status: Int, attempts: Int)?
        var deadline: Deadline?
        var stopped: ServiceError?
    }

    private let state = Locked.make(State())

    /// Makes `sink` the newest attempt, stopping the one before; `false` when the request was stopped.
    func add(_ sink: StreamSink) -> Bool {
        let (previous, stopped) = state.withLock { state -> (StreamSink?, Bool) in
            guard state.stopped == nil else { return (nil, true) }
            defer {
                state.sink = sink
                state.head = nil
            }
            return (state.sink, false)
        }
        previous?.cancel()
        return !stopped
    }

    /// The head `sink` gave.
    func record(_ head: Response, of sink: StreamSink) {
        state.withLock { state in
            if state.sink === sink { state.head = (head.statusCode, head.attempts) }
        }
    }

    /// The sink whose head `response` is; `nil` when a middleware made the response itself.
    /// - Throws: what stopped the request meanwhile (its resource deadline).
    func sink(answering response: Response) throws(ServiceError) -> StreamSink? {
        let (sink, stopped) = state.withLock { state -> (StreamSink?, ServiceError?) in
            if let stopped = state.stopped { return (nil, stopped) }
            guard let head = state.head, head.status == response.statusCode,
                head.attempts == response.attempts,
                response.data.isEmpty
            else { return (nil, nil) }
            return (state.sink, nil)
        }
        if let stopped { throw stopped }
        return sink
    }

    func keep(_ deadline: Deadline) {
        state.withLock { $0.deadline = deadline }
    }

    /// The stream goes to its reader: the resource deadline now stops that sink.
    func handOver(to sink: StreamSink) {
        if let deadline = state.withLock({ state -> Deadline? in
            defer { state.deadline = nil }
            return state.deadline
        }) {
            sink.keep(deadline)
        }
    }

    /// Stops the newest attempt with `error`, and any attempt that starts after it.
    func stop(with error: ServiceError) {
        let (sink, deadline) = state.withLock { state -> (StreamSink?, Deadline?) in
            if state.stopped == nil { state.stopped = error }
            defer {
                state.sink = nil
                state.deadline = nil
            }
            return (state.sink, state.deadline)
        }
        deadline?.cancel()
        sink?.stop(with: error)
    }
}
