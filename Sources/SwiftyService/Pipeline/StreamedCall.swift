import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A streamed call: the same chain and exchange as any call, answered when the head arrives; its body then
/// goes to the reader, and the exchange keeps it until it ends, so that the call's deadline and a
/// cancellation reach it.
extension PreparedRequest {
    /// Sends the request and returns its stream once the head has arrived and its status was accepted.
    /// - Throws: ``ServiceError`` only; for a refused status, with the error body read and decoded.
    func openStream() async throws(ServiceError) -> ResponseStream {
        let call = makeCall(.streamed)
        let outcome = await withTaskCancellationHandler {
            // Waiting before it starts: a head that comes at once still reaches this wait with its body.
            await call.exchange.untilFinished { start(call) }
        } onCancel: {
            call.exchange.cancel()
        }
        let head = try outcome.get()
        // A whole answer (a cache hit, a backend that does not stream, a middleware's own) was judged whole.
        guard let owner = head.arriving, let sink = owner.body as? StreamSink else {
            return ResponseStream(response: head.whole(Data()), body: StreamSink(whole: head), owner: nil)
        }
        if validStatusCodes.contains(head.statusCode) {
            return ResponseStream(response: head.whole(Data()), body: sink, owner: owner)
        }
        throw await refuse(head, body: sink, call: call.state)
    }

    /// The error for a streamed head whose status was refused, with as much of its body as explains it
    /// read and decoded; the body then stops, and the call's end is told.
    private func refuse(_ head: Response, body: StreamSink, call: CallState?) async -> ServiceError {
        let limit = min(limits.maxResponseSize(for: .stream) ?? Self.errorBodyLimit, Self.errorBodyLimit)
        // The status is the news; a body that could not be read leaves the error body out.
        let data = (try? await body.collect(limit: limit)) ?? Data()
        let error: ServiceError =
            switch verdict(on: head.whole(data)) {
            case let .failure(error): error
            case .success: .unacceptableStatusCode(head.whole(data), errorBody: nil)
            }
        body.stop(with: error)
        call?.streamEnded(bytes: Int64(data.count), error: error)
        events?.emit(.failed(error, metrics: error.metrics))
        return error
    }

    /// The most of a refused stream's body that is read for its error body.
    static let errorBodyLimit = 1 << 20
}
