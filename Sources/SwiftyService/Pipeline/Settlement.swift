import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The effects of a request's outcome — its download moved into place, its last progress reports — in the
/// one place that runs them, and only for the outcome its exchange delivers.
extension PreparedRequest: Settling {
    func settle(_ answer: Exchange.Outcome) -> Exchange.Outcome {
        guard let events = backendRequest.events else { return outcome(of: answer) }
        // Through middleware, each attempt told its head already.
        if middleware.isEmpty, case let .success(response) = answer {
            events.emit(.responseHead(attempt: 1, response.response))
        }
        let outcome = outcome(of: answer)
        events.finish(outcome, metrics: metricsLog?.all ?? [])
        return outcome
    }

    private func outcome(of answer: Exchange.Outcome) -> Exchange.Outcome {
        guard case let .success(accepted) = answer else {
            discardDownload()
            return answer
        }
        // The usual answer has nothing to settle: passed on as it is, not rebuilt around a copy.
        if download == nil, backendRequest.progress == nil, validStatusCodes.contains(accepted.statusCode),
            sizeProblem(of: accepted) == nil
        {
            return answer
        }
        var response = accepted
        if let tooLarge = sizeProblem(of: response) {
            discardDownload()
            return .failure(tooLarge)
        }
        do {
            try settleDownload(of: &response)
        } catch {
            discardDownload()
            return .failure(ServiceError(error, request: urlRequest, attempts: response.attempts))
        }
        reportFinalProgress(of: response)
        return verdict(on: response)
    }

    func discard(_ answer: Exchange.Outcome) {
        discardDownload()
    }

    func stop(_ outcome: Exchange.Outcome) {
        backendRequest.progress?.stop()
        backendRequest.events?.finish(outcome, metrics: metricsLog?.all ?? [])
    }

    /// Moves an accepted download into place; a refused one keeps the start of its body, to explain why.
    private func settleDownload(of response: inout Response) throws {
        guard let download, let staging = backendRequest.downloadFile else { return }
        try download.prepareDirectory()
        if response.fileURL == nil { try response.data.write(to: staging) }
        if validStatusCodes.contains(response.statusCode) {
            try download.settle(from: response.fileURL ?? staging)
            response.fileURL = download.url
            response.data = Data()
        } else {
            response.fileURL = nil
            response.data = Self.head(of: staging)
            discardDownload()
        }
    }

    /// The 100% reports a caller gets last, for every direction that moved bytes.
    private func reportFinalProgress(of response: Response) {
        guard let progress = backendRequest.progress else { return }
        let uploaded = urlRequest.httpBody.map { Int64($0.count) } ?? backendRequest.bodySource?.size ?? 0
        if uploaded > 0 { progress.finish(.upload, total: uploaded) }
        let downloaded =
            response.fileURL.flatMap { BodyFile(url: $0, isTemporary: false).size }
            ?? Int64(response.data.count)
        progress.finish(.download, total: downloaded)
    }

    /// Removes what a failed, refused or abandoned download left behind.
    func discardDownload() {
        if let staging = backendRequest.downloadFile { try? FileManager.default.removeItem(at: staging) }
    }

    /// The start of a file (1 MB at most): enough of a refused download's body to explain the refusal.
    private static func head(of file: URL) -> Data {
        guard let handle = try? FileHandle(forReadingFrom: file) else { return Data() }
        defer { try? handle.close() }
        return (try? handle.read(upToCount: 1 << 20)) ?? Data()
    }
}
