import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Lets identical GETs in flight at the same time share one trip to the backend (innermost in the chain).
///
/// Requests are identical when their URLs and headers are. Each caller gets its own copy of the result;
/// a caller that cancels stops waiting at once, alone, and the shared request is cancelled only when
/// every caller has.
final class Coalescer: Middleware {
    private struct Key: Hashable {
        let url: URL?
        let headers: [String: String]
    }

    private struct Flight {
        /// The caller that started the flight: which flight a key holds now.
        let starter: Caller
        var task: Task<Void, Never>?
        var callers: [Caller]
    }

    private let flights = Locked<[Key: Flight]>.make([:])

    func intercept(_ request: URLRequest, context: RequestContext, next: MiddlewareNext) async throws
        -> Response
    {
        guard (request.httpMethod ?? "GET") == "GET" else { return try await next(request) }
        let key = Key(url: request.url, headers: request.allHTTPHeaderFields ?? [:])
        let caller = Caller()
        let starts = flights.withLock { flights -> Bool in
            if flights[key] != nil {
                flights[key]?.callers.append(caller)
                return false
            }
            flights[key] = Flight(starter: caller, task: nil, callers: [caller])
            return true
        }
        if starts {
            let task = Task { [flights] in
                let result = await Result { try await next(request) }
                // An abandoned flight has left the table already; a newer one may be there in its place.
                let callers = flights.withLock { flights -> [Caller] in
                    guard flights[key]?.starter === caller else { return [] }
                    return flights.removeValue(forKey: key)?.callers ?? []
                }
                for caller in callers { caller.deliver(result) }
            }
            flights.withLock { if $0[key]?.starter === caller { $0[key]?.task = task } }
        }
        return try await withTaskCancellationHandler {
            try await caller.result().get()
        } onCancel: {
            caller.deliver(.failure(CancellationError()))
            let abandoned = flights.withLock { flights -> Task<Void, Never>? in
                guard let flight = flights[key], flight.callers.contains(where: { $0 === caller }),
                    flight.callers.allSatisfy(\.isDone)
                else { return nil }
                // Out of the table at once: a caller that comes later must not join a cancelled flight.
                flights[key] = nil
                return flight.task
            }
            abandoned?.cancel()
        }
    }

    /// One caller's wait for the shared result: whichever comes first, the result or its cancellation.
    private final class Caller: Sendable {
        private struct State {
            var result: Result<Response, any Error>?
            var waiter: CheckedContinuation<Result<Response, any Error>, Never>?
        }

        private let state = Locked.make(State())

        var isDone: Bool { state.withLock { $0.result != nil } }

        func deliver(_ result: Result<Response, any Error>) {
            let waiter = state.withLock { state -> CheckedContinuation<Result<Response, any Error>, Never>? in
                guard state.result == nil else { return nil }
                state.result = result
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(returning: result)
        }

        func result() async -> Result<Response, any Error> {
            await withCheckedContinuation { waiter in
                let result = state.withLock { state -> Result<Response, any Error>? in
                    if state.result == nil { state.waiter = waiter }
                    return state.result
                }
                if let result { waiter.resume(returning: result) }
            }
        }
    }
}

extension Result where Failure == any Error {
    /// The outcome of an async throwing body.
    init(catching body: () async throws -> Success) async {
        do {
            self = .success(try await body())
        } catch {
            self = .failure(error)
        }
    }
}
