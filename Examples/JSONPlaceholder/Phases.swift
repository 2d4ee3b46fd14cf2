import Foundation
import SwiftyService

/// Where the example's calls spent their time: an observer on each realm keeps every completed call's last
/// attempt, and `print()` shows them as a table. Offline the stub reports only its delay; with
/// `--live <url>` and the default URLSession backend on Linux, the time to the first byte and the total;
/// through `CurlBackend`, every phase.
final class PhaseTable: RequestObserver, @unchecked Sendable {
    private let lock = NSLock()
    private var rows: [(call: String, status: Int, metrics: TransferMetrics)] = []

    func observe(_ event: RequestEvent) {
        guard case let .completed(response) = event.kind, let metrics = response.metrics.last else { return }
        let call = "\(response.request.httpMethod ?? "GET") \(response.request.url?.path ?? "?")"
        lock.withLock { rows.append((call, response.statusCode, metrics)) }
    }

    func print() {
        let rows = lock.withLock { self.rows }
        Swift.print("\nWhere the time went (\(rows.count) calls; — where the backend cannot see the phase):")
        Swift.print(Self.line("call", "status", "dns", "connect", "tls", "ttfb", "total"))
        for row in rows {
            let m = row.metrics
            Swift.print(
                Self.line(
                    row.call, "\(row.status)", Self.ms(m.dnsLookup), Self.ms(m.connect),
                    Self.ms(m.tlsHandshake),
                    Self.ms(m.firstByte), Self.ms(m.total)))
        }
    }

    private static func ms(_ seconds: TimeInterval?) -> String {
        seconds.map { String(format: "%.1f ms", $0 * 1_000) } ?? "—"
    }

    private static func line(_ call: String, _ columns: String...) -> String {
        call.padding(toLength: 28, withPad: " ", startingAt: 0)
            + columns.map { $0.padding(toLength: 10, withPad: " ", startingAt: 0) }.joined()
    }
}
