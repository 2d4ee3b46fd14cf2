import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How one call's answer is settled: by its request, as its body is read.
struct CallSettlement: Settling {
    let request: PreparedRequest
    let call: CallState?
    let mode: CallState.Mode

    func settle(_ answer: Exchange.Outcome) -> Exchange.Outcome {
        request.settle(answer, mode: mode, call: call)
    }

    func discard(_ answer: Exchange.Outcome) {
        request.discardDownload()
        // A resumed attempt's answer is in a segment of its own.
        if case let .success(late) = answer, let file = late.fileURL, file != request.download?.url {
            try? FileManager.default.removeItem(at: file)
        }
        // A head that came too late: its body, if any, stops now rather than when the answer is let go of.
        answer.streamedBody?.cancel()
    }

    func stop(_ outcome: Exchange.Outcome) {
        request.backendRequest.resumption?.release()
        request.progress?.stop()
        request.events?.finish(outcome, metrics: request.metricsLog?.all ?? [])
        if mode == .streamed, case let .failure(error) = outcome {
            call?.streamEnded(bytes: 0, error: error)
        }
    }
}

/// The effects of a call's outcome — its download moved into place, its last progress reports, the end its
/// observers hear — in the one place that runs them, and only for the outcome its exchange delivers.
extension PreparedRequest {
    /// The outcome `answer` stands for, its effects carried out. A streamed body is judged by its head
    /// here; its end is told when it ends (an accepted one) or by ``openStream()`` (a refused one, whose
    /// error body is read first).
    func settle(_ answer: Exchange.Outcome, mode: CallState.Mode, call: CallState?) -> Exchange.Outcome {
        // Through middleware, each attempt told its head already.
        if middleware.isEmpty, case let .success(response) = answer {
            events?.emit(.responseHead(attempt: 1, response.response))
        }
        if case let .success(head) = answer, let body = head.arrivingBody {
            guard validStatusCodes.contains(head.statusCode) else { return answer }
            let events = events
            let metrics = metricsLog
            // The head alone: a handler that held the body's owner would keep a stream let go of running.
            let headOnly = head.whole(Data())
            body.whenEnded { bytes, error in
                call?.streamEnded(bytes: bytes, error: error)
                events?.finish(error.map { .failure($0) } ?? .success(headOnly), metrics: metrics?.all ?? [])
            }
            return answer
        }
        let outcome = outcome(of: answer)
        if mode == .streamed {
            let bytes = (try? outcome.get()).map { Int64($0.data.count) } ?? 0
            call?.streamEnded(bytes: bytes, error: outcome.failure)
        }
        events?.finish(outcome, metrics: metricsLog?.all ?? [])
        return outcome
    }

    /// The outcome of a whole answer: its size held to the limit, its download settled, its status judged.
    private func outcome(of answer: Exchange.Outcome) -> Exchange.Outcome {
        guard case let .success(accepted) = answer else {
            discardDownload()
            return answer
        }
        // The usual answer has nothing to settle: passed on as it is, not rebuilt around a copy.
        if download == nil, progress == nil, validStatusCodes.contains(accepted.statusCode),
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

    /// Moves an accepted download into place; a refused one keeps the start of its body, to explain why.
    /// A resumed download's answer continues its partial file first (DownloadResumption.swift).
    private func settleDownload(of response: inout Response) throws {
        guard let download, let staging = downloadStaging else { return }
        try download.prepareDirectory()
        if response.fileURL == nil { try response.data.write(to: staging) }
        if let resumption = backendRequest.resumption, let segment = response.fileURL {
            response = try resumption.finish(response, segment: segment)
        }
        let body = response.fileURL ?? staging
        if validStatusCodes.contains(response.statusCode) {
            try download.settle(from: body)
            response.fileURL = download.url
            response.data = Data()
        } else {
            response.fileURL = nil
            response.data = Self.head(of: body)
            try? FileManager.default.removeItem(at: body)
            discardDownload()
        }
    }

    /// The 100% reports a caller gets last, for every direction that moved bytes.
    private func reportFinalProgress(of response: Response) {
        guard let progress else { return }
        let uploaded =
            urlRequest.httpBody.map { Int64($0.count) } ?? backendRequest.bodySource?.size
            ?? backendRequest.bodyStream?.bytesSent ?? 0
        if uploaded > 0 { progress.finish(.upload, total: uploaded) }
        let downloaded =
            response.fileURL.flatMap { BodyFile(url: $0, isTemporary: false).size }
            ?? Int64(response.data.count)
        progress.finish(.download, total: downloaded)
    }

    /// Removes what a failed, refused or abandoned download left behind.
    func discardDownload() {
        if let downloadStaging { try? FileManager.default.removeItem(at: downloadStaging) }
    }

    /// The start of a file (1 MB at most): enough of a refused download's body to explain the refusal.
    private static func head(of file: URL) -> Data {
        guard let handle = try? FileHandle(forReadingFrom: file) else { return Data() }
        defer { try? handle.close() }
        return (try? handle.read(upToCount: 1 << 20)) ?? Data()
    }
}

extension Result {
    /// The failure, if it is one.
    var failure: Failure? {
        guard case let .failure(failure) = self else { return nil }
        return failure
    }
}
