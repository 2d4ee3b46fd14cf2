import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Lets identical GETs in flight at the same time share one trip to the backend (innermost in the chain).
///
/// Requests are identical when their URLs and headers are. Each caller gets its own copy of the result;
/// a caller that cancels stops waiting at once, alone, and the shared request is cancelled only when
/// every caller has. A flight nobody waits for any more is over: a later caller starts a new one.
final class Coalescer: Middleware {
    private struct Key: Hashable {
        let url: URL?
        let headers: [String: String]
    }

    private let flights = Locked<[Key: Exchange]>.make([:])

    func intercept(_ request: URLRequest, context: RequestContext, next: MiddlewareNext) async throws
        -> Response
    {
        guard (request.httpMethod ?? "GET") == "GET" else { return try await next(request) }
        let key = Key(url: request.url, headers: request.allHTTPHeaderFields ?? [:])
        while true {
            let (flight, starts) = flights.withLock { flights -> (Exchange, Bool) in
                if let flight = flights[key], !flight.isFinished { return (flight, false) }
                let flight = Exchange(request: request, endsWhenAbandoned: true)
                flights[key] = flight
                return (flight, true)
            }
            if starts { take(flight, key: key, request: request, next: next) }
            let outcome = await flight.outcome(cancelling: false)
            // A flight joined just as its last caller left ends cancelled without this caller having asked:
            // that caller goes on, in a flight of its own or a newer one.
            if !starts, case .failure(.cancelled) = outcome, !Task.isCancelled { continue }
            return try outcome.get()
        }
    }

    /// Sends the flight's request through the rest of the chain; it is over, for later callers, once answered.
    private func take(_ flight: Exchange, key: Key, request: URLRequest, next: MiddlewareNext) {
        flight.start { [flights] answer in
            let task = Task {
                let outcome: Exchange.Outcome
                do {
                    outcome = .success(try await next(request))
                } catch {
                    outcome = .failure(ServiceError(error, request: request))
                }
                flights.withLock { if $0[key] === flight { $0[key] = nil } }
                answer(outcome)
            }
            return BackendTask { task.cancel() }
        }
    }
}
