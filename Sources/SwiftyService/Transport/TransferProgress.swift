import Foundation

/// How far an upload or download has come.
public struct TransferProgress: Sendable, Hashable, CustomStringConvertible {
    /// Which way the bytes go.
    public enum Direction: Sendable, Hashable {
        /// The request body, to the server.
        case upload
        /// The response body, from the server.
        case download
    }

    /// Which way the bytes go.
    public let direction: Direction
    /// Bytes moved so far.
    public let completed: Int64
    /// Bytes expected in all, when the sender said (Content-Length, file size).
    public let expected: Int64?

    /// Creates a progress report.
    public init(direction: Direction, completed: Int64, expected: Int64?) {
        self.direction = direction
        self.completed = completed
        self.expected = expected
    }

    /// `completed / expected`, from 0 to 1; `nil` while the total is unknown.
    public var fraction: Double? {
        guard let expected else { return nil }
        return expected > 0 ? min(1, Double(completed) / Double(expected)) : 1
    }

    /// `download 512/1024 (50%)`
    public var description: String {
        "\(direction) \(completed)/\(expected.map(String.init) ?? "?")"
            + (fraction.map { " (\(Int(($0 * 100).rounded()))%)" } ?? "")
    }
}

/// Passes a backend's progress on to the caller: at most one report per direction every `interval`
/// seconds (the last one always), never going backwards, and a final 100% before completion.
final class ProgressThrottle: Sendable {
    private struct Last {
        var completed: Int64 = -1
        var at: TimeInterval = -.infinity
        var finished = false
    }

    private let handler: @Sendable (TransferProgress) -> Void
    private let interval: TimeInterval
    private let state = Locked.make([TransferProgress.Direction: Last]())
    private let stopped = Locked.make(false)

    init(interval: TimeInterval = 0.05, handler: @escaping @Sendable (TransferProgress) -> Void) {
        self.interval = interval
        self.handler = handler
    }

    /// Passes nothing more on: the request ended without this transfer's outcome (cancelled, timed out).
    func stop() {
        stopped.withLock { $0 = true }
    }

    func report(_ progress: TransferProgress) {
        guard !stopped.value else { return }
        let now = ProcessInfo.processInfo.systemUptime
        let pass = state.withLock { table -> Bool in
            var last = table[progress.direction] ?? Last()
            guard !last.finished, progress.completed > last.completed || last.completed < 0 else {
                return false
            }
            let done = progress.expected.map { progress.completed >= $0 } ?? false
            guard done || now - last.at >= interval else { return false }
            last.completed = progress.completed
            last.at = now
            last.finished = done
            table[progress.direction] = last
            return true
        }
        if pass { handler(progress) }
    }

    /// The final report of a direction: everything that moved, as 100%.
    func finish(_ direction: TransferProgress.Direction, total: Int64) {
        guard !stopped.value else { return }
        let pass = state.withLock { table -> Bool in
            var last = table[direction] ?? Last()
            guard !last.finished else { return false }
            last.finished = true
            last.completed = max(last.completed, total)
            table[direction] = last
            return true
        }
        if pass { handler(TransferProgress(direction: direction, completed: total, expected: total)) }
    }
}
