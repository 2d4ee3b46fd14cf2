import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Lets identical GETs in flight at the same time share one trip to the backend (innermost in the chain).
///
/// Requests are identical when their URLs and headers are. Each caller gets its own copy of the result;
/// a caller that cancels stops waiting alone, and the shared request is cancelled only when every caller
/// has.
final class Coalescer: Middleware {
    private struct Flight {
        let task: Task<Response, any Error>
        var waiting: Int
    }

    private let flights = Locked<[Key: Flight]>.make([:])

    private struct Key: Hashable {
        let url: URL?
        let headers: [String: String]
    }

    func intercept(_ request: URLRequest, context: RequestContext, next: MiddlewareNext) async throws
        -> Response
    {
        guard (request.httpMethod ?? "GET") == "GET" else { return try await next(request) }
        let key = Key(url: request.url, headers: request.allHTTPHeaderFields ?? [:])
        let flights = flights
        let task = flights.withLock { table -> Task<Response, any Error> in
            if var flight = table[key] {
                flight.waiting += 1
                table[key] = flight
                return flight.task
            }
            let task = Task {
                defer { flights.withLock { $0[key] = nil } }
                return try await next(request)
            }
            table[key] = Flight(task: task, waiting: 1)
            return task
        }
        return try await withTaskCancellationHandler {
            let result = await task.result
            leave(key, task: task, cancelling: false)
            try Task.checkCancellation()
            return try result.get()
        } onCancel: {
            leave(key, task: task, cancelling: true)
        }
    }

    /// One caller stops waiting; when it cancels and was the last, the shared request is cancelled.
    private func leave(_ key: Key, task: Task<Response, any Error>, cancelling: Bool) {
        let cancelShared = flights.withLock { table -> Bool in
            guard var flight = table[key], flight.task == task else { return false }
            flight.waiting -= 1
            table[key] = flight
            return cancelling && flight.waiting == 0
        }
        if cancelShared { task.cancel() }
    }
}
