import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Lets identical GETs in flight at the same time share one trip to the backend (innermost in the chain).
///
/// Calls are identical when they would send the same bytes under the same rules: the same method, URL,
/// headers, body and timeout, through the same backend, with the same TLS policy, cookie jar, size limit
/// and metrics. Streams are never shared (each reader reads its own body), nor downloads or calls with
/// progress reports. Each caller gets its own copy of the result; a caller that cancels stops waiting at
/// once, alone, and the shared request is cancelled only when every caller has. A flight nobody waits for
/// any more is over: a later caller starts a new one.
final class Coalescer: Middleware {
    // Unchecked: `rules` is an `AnyHashable` made of a `Sendable` value, which that type does not say.
    private struct Key: Hashable, @unchecked Sendable {
        let method: String
        let url: URL?
        let headers: [String: String]
        let body: Data?
        let timeout: TimeInterval
        let cachePolicy: UInt
        /// What besides the request decides what goes out and what is trusted.
        let rules: AnyHashable
    }

    private let flights = Locked<[Key: Exchange]>.make([:])

    func intercept(_ request: URLRequest, context: RequestContext, next: MiddlewareNext) async throws
        -> Response
    {
        let method = request.httpMethod ?? "GET"
        guard method == "GET", context.call.mode == .buffered, let rules = context.call.sendingRules else {
            return try await next(request)
        }
        let key = Key(
            method: method, url: request.url, headers: request.allHTTPHeaderFields ?? [:],
            body: request.httpBody, timeout: request.timeoutInterval, cachePolicy: request.cachePolicy.rawValue,
            rules: AnyHashable(rules))
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
