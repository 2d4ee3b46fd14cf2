import Foundation
import SwiftyService

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Records every event an observer is told, per request.
final class EventLog: RequestObserver, Sendable {
    private let recorder = CallbackRecorder<RequestEvent>()

    func observe(_ event: RequestEvent) {
        recorder.record(event)
    }

    var all: [RequestEvent] { recorder.calls }

    /// Each request's events, as short names in the order told.
    var names: [RequestID: [String]] {
        Dictionary(grouping: all, by: \.requestID).mapValues { $0.map(\.kind.name) }
    }

    /// The one request's event names (the log must hold exactly one request).
    var only: [String] {
        let names = names
        return names.count == 1 ? names.first!.value : ["\(names.count) requests"]
    }
}

extension RequestEvent.Kind {
    /// `built`, `attempt 1`, `head 1 200`, `redirect 302`, `retry after 1`, `completed 200`, `failed cancelled`…
    var name: String {
        switch self {
        case .built: "built"
        case let .attemptStarted(attempt, _): "attempt \(attempt)"
        case let .redirected(_, _, status): "redirect \(status)"
        case let .responseHead(attempt, head): "head \(attempt) \(head.statusCode)"
        case let .retryScheduled(attempt, _, _): "retry after \(attempt)"
        case .tokenRefreshStarted: "refresh started"
        case let .tokenRefreshEnded(succeeded): "refresh \(succeeded ? "succeeded" : "failed")"
        case .cacheHit: "cache hit"
        case .cacheRevalidated: "cache revalidated"
        case let .completed(response): "completed \(response.statusCode)"
        case let .failed(error, _): "failed \(error.kind)"
        case let .waitingForConnection(wait): "waiting for 1 of \(wait.limit)"
        case let .webSocketEnded(summary): "socket ended \(summary.closeCode.map { "\($0.rawValue)" } ?? "without a close code")"
        }
    }
}
