import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension SwiftyServiceProtocol {
    /// Sends the request and returns once the response head has arrived and its status was accepted; the
    /// body is then read as it arrives, as chunks, ``ResponseStream/lines``,
    /// ``ResponseStream/serverSentEvents`` or ``ResponseStream/jsonLines(as:decoder:maxLineLength:)``.
    ///
    /// ```swift
    /// let stream = try await Chat.complete(prompt: "Hello").stream()
    /// for try await event in stream.serverSentEvents { print(event.data, terminator: "") }
    /// ```
    /// Middleware sees the head (a retry happens before any body byte is handed out); a refused status
    /// throws ``ServiceError/unacceptableStatusCode(_:errorBody:)`` with the error body read and decoded.
    /// Cancelling the task cancels the request. See ``StreamingBackend`` for which backends stream.
    /// - Throws: ``ServiceError`` only.
    public func stream() async throws -> ResponseStream {
        try await prepare().openStream()
    }

    /// The callback form of ``stream()``: `chunk` gets each piece of the body, in order, then `completion`
    /// runs exactly once — with the response head when the body is complete, or the failure, also after
    /// ``RequestHandle/cancel()``. No chunk starts after the completion has.
    ///
    /// Both run on the realm's callback queue if one is set (a serial queue keeps their order), otherwise
    /// on the thread that reads the stream, which waits for `chunk` to return before it reads on.
    @discardableResult
    public func stream(
        chunk: @escaping @Sendable (Data) -> Void,
        completion: @escaping @Sendable (Result<Response, ServiceError>) -> Void
    ) -> RequestHandle {
        send(streaming: chunk) { outcome, _ in completion(outcome) }
    }
}

extension PreparedRequest {
    /// Streams the request in a task of its own, handing each chunk to `chunk`; `delivery` runs once, with
    /// the head when the body is complete. Both run on the realm's callback queue if it has one.
    func startStream(
        chunk: @escaping @Sendable (Data) -> Void, delivering delivery: @escaping Exchange.Waiter
    ) -> RequestHandle {
        // The handle's exchange: its one delivery, and the cancellation that ends it at once.
        let handle = Exchange(request: urlRequest)
        handle.wait(Exchange.waiter(delivery, on: callbackQueue))
        let queue = callbackQueue
        let request = urlRequest
        handle.start { answer in
            let task = Task {
                do {
                    let stream = try await openStream()
                    for try await piece in stream {
                        // After a cancel the completion has gone out already: nothing may follow it.
                        guard !handle.isFinished else { break }
                        if let queue { queue.async { chunk(piece) } } else { chunk(piece) }
                    }
                    answer(.success(stream.response))
                } catch {
                    answer(.failure(ServiceError(error, request: request)))
                }
            }
            return BackendTask { task.cancel() }
        }
        return RequestHandle(handle)
    }
}
