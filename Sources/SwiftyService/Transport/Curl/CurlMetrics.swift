import Foundation

/// libcurl's measurements of a hop (`curl_easy_getinfo`), as ``TransferMetrics``.
extension LibCurl {
    /// The hop's metrics: timings count from the hop's start; `start` is when the attempt began; `secure`
    /// when the hop went over TLS.
    func metrics(of handle: Handle, start: Date, secure: Bool) -> TransferMetrics {
        var metrics = TransferMetrics(start: start)
        func seconds(_ info: Int32) -> TimeInterval? {
            offset(handle, info).map { TimeInterval($0) / 1_000_000 }
        }
        let lookedUp = seconds(Info.nameLookupTime)
        let connected = seconds(Info.connectTime)
        let secured = seconds(Info.appConnectTime)
        metrics.queued = seconds(Info.queueTime)
        metrics.dnsLookup = lookedUp
        if let connected, let lookedUp { metrics.connect = max(0, connected - lookedUp) }
        // APPCONNECT is 0 for plain HTTP and for a reused TLS connection.
        if let secured, let connected, secured > 0 { metrics.tlsHandshake = max(0, secured - connected) }
        metrics.requestSent = seconds(Info.preTransferTime)
        metrics.firstByte = seconds(Info.startTransferTime)
        metrics.total = seconds(Info.totalTime)
        metrics.reusedConnection = long(handle, Info.numConnects).map { $0 == 0 }
        if metrics.reusedConnection == true {
            // libcurl times the look-up of the connection cache as a name look-up (tens of microseconds, and
            // the connect time after it): a reused connection had no set-up phase at all.
            metrics.dnsLookup = 0
            metrics.connect = 0
            metrics.tlsHandshake = secure ? 0 : nil
        }
        metrics.remoteAddress = string(handle, Info.primaryIP).flatMap { $0.isEmpty ? nil : $0 }
        metrics.remotePort = long(handle, Info.primaryPort).flatMap { $0 > 0 ? $0 : nil }
        metrics.httpVersion = long(handle, Info.httpVersion).flatMap(Self.httpVersionName)
        let headSent = long(handle, Info.requestSize).map(Int64.init)
        let bodySent = offset(handle, Info.sizeUpload)
        metrics.bytesSent = headSent.map { $0 + (bodySent ?? 0) }
        let headReceived = long(handle, Info.headerSize).map(Int64.init)
        let bodyReceived = offset(handle, Info.sizeDownload)
        metrics.bytesReceived = headReceived.map { $0 + (bodyReceived ?? 0) }
        return metrics
    }

    /// `CURL_HTTP_VERSION_*` as the protocol's name.
    private static func httpVersionName(_ version: Int) -> String? {
        switch version {
        case 1: "HTTP/1.0"
        case 2: "HTTP/1.1"
        case 3: "HTTP/2"
        case 30: "HTTP/3"
        default: nil
        }
    }
}
