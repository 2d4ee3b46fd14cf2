// Apple platforms only: FoundationNetworking on Linux never reports task metrics
// (swift-corelibs-foundation#4988). This file cannot be compiled on the Linux machine the package is
// developed on; it is kept to one delegate method and one mapping.
#if canImport(Darwin)
import Foundation

extension SessionDelegate {
    /// Keeps the last transaction's phases as the attempt's metrics (URLSession reports them before the
    /// task completes).
    func urlSession(
        _ session: URLSession, task: URLSessionTask, didFinishCollecting metrics: URLSessionTaskMetrics
    ) {
        guard let last = metrics.transactionMetrics.last, let start = last.fetchStartDate else { return }
        func span(_ from: Date?, _ to: Date?) -> TimeInterval? {
            guard let from, let to else { return nil }
            return to.timeIntervalSince(from)
        }
        var measured = TransferMetrics(start: start)
        measured.dnsLookup = span(last.domainLookupStartDate, last.domainLookupEndDate)
        measured.connect = span(last.connectStartDate, last.secureConnectionStartDate ?? last.connectEndDate)
        measured.tlsHandshake = span(last.secureConnectionStartDate, last.secureConnectionEndDate)
        measured.requestSent = span(start, last.requestStartDate)
        measured.firstByte = span(start, last.responseStartDate)
        measured.total = span(start, last.responseEndDate)
        measured.redirects = metrics.redirectCount
        if let first = metrics.transactionMetrics.first?.fetchStartDate, metrics.transactionMetrics.count > 1
        {
            measured.redirectTime = start.timeIntervalSince(first)
        }
        measured.reusedConnection = last.isReusedConnection
        measured.remoteAddress = last.remoteAddress
        measured.remotePort = last.remotePort
        measured.httpVersion = last.networkProtocolName.map { name in
            switch name {
            case "h2": "HTTP/2"
            case "h3": "HTTP/3"
            default: name.uppercased()
            }
        }
        measured.bytesSent = last.countOfRequestHeaderBytesSent + last.countOfRequestBodyBytesSent
        measured.bytesReceived =
            last.countOfResponseHeaderBytesReceived + last.countOfResponseBodyBytesReceived
        keep(measured, for: task)
    }
}
#endif
