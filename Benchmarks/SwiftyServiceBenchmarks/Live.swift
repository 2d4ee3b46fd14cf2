import Foundation
import SwiftyService

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Raw URLSession, the way a hand-written client sends the same request.
func rawRequest(_ session: URLSession, _ request: URLRequest) async throws {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
        session.dataTask(with: request) { data, response, error in
            if let error {
                continuation.resume(throwing: error)
            } else if let response = response as? HTTPURLResponse, response.statusCode == 200, data != nil {
                continuation.resume()
            } else {
                continuation.resume(throwing: URLError(.badServerResponse))
            }
        }.resume()
    }
}

/// Requests per second and CPU microseconds per request for `send`, with `inFlight` requests at a time.
func throughput(requests: Int, inFlight: Int, _ send: @escaping @Sendable () async throws -> Void)
    async throws
    -> (perSecond: Double, cpuMicroseconds: Double)
{
    let cpuStart = processCPUTime()
    let start = now()
    try await withThrowingTaskGroup(of: Void.self) { group in
        for worker in 0..<inFlight {
            let share = requests / inFlight + (worker < requests % inFlight ? 1 : 0)
            group.addTask { for _ in 0..<share { try await send() } }
        }
        try await group.waitForAll()
    }
    let seconds = Double(now() - start) / 1e9
    return (Double(requests) / seconds, Double(processCPUTime() - cpuStart) / 1_000 / Double(requests))
}
