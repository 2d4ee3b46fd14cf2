import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The delegate of a ``URLSessionBackend``'s own session: applies its ``RedirectPolicy`` and turns
/// credential challenges into plain 401 answers.
final class SessionDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    /// How a task ended, as far as redirects and challenges go.
    enum Ending {
        case finished
        case tooManyRedirects
        /// A redirect that may not be followed: the request fails with this.
        case refused(RedirectRefused)
        /// A 307/308 to follow by sending this request anew (URLSession on Linux drops the body).
        case resend(URLRequest, redirects: Int)
        /// The server challenged for credentials: its 401 is the answer.
        case challenged(HTTPURLResponse)
        /// The body went past the request's size limit, and the task was stopped.
        case tooLarge(Int)
        /// The head (of the answer or of a redirect) went past ``TransportRules``' limits.
        case headTooLarge(ResponseHeadTooLarge)
        /// The realm's TLS policy refused the server (URLSessionTLS.swift, Apple platforms): this failure,
        /// not the cancellation URLSession reports.
        case tlsRefused(URLError)
        /// The download file could not be written (the disk full, the directory gone): the task was stopped.
        case cannotWrite(URL)
    }

    /// What a streaming task received: bytes in memory, a file on disk, or nothing.
    enum Body: Sendable {
        case data(Data)
        case file(URL)

        /// Removes a downloaded file that will not be used.
        func discard() {
            if case let .file(url) = self { try? FileManager.default.removeItem(at: url) }
        }

        /// Moves a downloaded file to `target`, over whatever is there, its directory made if need be.
        static func move(_ file: URL, to target: URL) throws {
            let manager = FileManager.default
            try manager.createDirectory(
                at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
            try? manager.removeItem(at: target)
            try manager.moveItem(at: file, to: target)
        }

        /// The response, its body in `downloadFile` when there is one, else in memory.
        func response(for request: URLRequest, head: HTTPURLResponse, into downloadFile: URL?) throws
            -> Response
        {
            switch (self, downloadFile) {
            case let (.data(data), nil):
                return Response(request: request, response: head, data: data)
            case let (.data(data), downloadFile?):
                try FileManager.default.createDirectory(
                    at: downloadFile.deletingLastPathComponent(), withIntermediateDirectories: true)
                try data.write(to: downloadFile)
                return Response(request: request, response: head, fileURL: downloadFile)
            case let (.file(url), downloadFile?):
                try Self.move(url, to: downloadFile)
                return Response(request: request, response: head, fileURL: downloadFile)
            case let (.file(url), _):
                defer { try? FileManager.default.removeItem(at: url) }
                return Response(request: request, response: head, data: try Data(contentsOf: url))
            }
        }
    }

    /// The state of a task that reports progress, streams a file body or downloads to disk.
    private struct Streaming {
        let request: BackendRequest
        /// Where a streamed response goes as it arrives, for ``URLSessionBackend/stream(_:into:)``.
        let sink: StreamSink?
        var data = Data()
        /// The download file the body goes to as it arrives, once the head has come.
        var output: FileHandle?
        var file: URL?
        var written: Int64 = 0
        /// Told of every byte that comes or goes, for the transfer's silence watch.
        let activity: @Sendable () -> Void
        let complete: @Sendable (URLSessionTask, (any Error)?, Body) -> Void
    }

    private struct Tracked {
        /// The request of the current hop: the one a redirect answers.
        var sent: URLRequest
        let request: BackendRequest
        var redirects: Int
        var ending = Ending.finished
        var streaming: Streaming?
        /// When the response head (or, for a download, its first bytes) arrived, when metrics are collected.
        var headAt: Date?
        /// The platform's own measurements (Apple's task metrics), when it reports them.
        var measured: TransferMetrics?
    }

    /// What a task's metrics are made of, read before ``finish(_:)`` forgets it.
    struct Timing {
        let headAt: Date?
        let redirects: Int
        let measured: TransferMetrics?
    }

    let policy: RedirectPolicy
    private let tracked = Locked<[Int: Tracked]>.make([:])

    init(_ policy: RedirectPolicy) {
        self.policy = policy
    }

    func track(_ task: URLSessionTask, sent: URLRequest, for request: BackendRequest, redirects: Int) {
        tracked.withLock { table in
            let streaming = table[task.taskIdentifier]?.streaming
            table[task.taskIdentifier] = Tracked(
                sent: sent, request: request, redirects: redirects, streaming: streaming)
        }
    }

    /// Routes a delegate-driven task's data, progress and end to `complete`.
    func stream(
        _ task: URLSessionTask, for request: BackendRequest, into sink: StreamSink?,
        activity: @escaping @Sendable () -> Void,
        complete: @escaping @Sendable (URLSessionTask, (any Error)?, Body) -> Void
    ) {
        tracked.withLock { table in
            table[task.taskIdentifier] = Tracked(
                sent: request.urlRequest, request: request, redirects: 0,
                streaming: Streaming(request: request, sink: sink, activity: activity, complete: complete))
        }
    }

    /// The TLS policy of the realm `task`'s request came from, if it set one.
    func tlsPolicy(of task: URLSessionTask) -> TLSPolicy? {
        tracked.withLock { $0[task.taskIdentifier]?.request.tlsPolicy }
    }

    /// Ends `task` with `failure`, which its realm's TLS policy found, once URLSession reports it ended.
    func refuse(_ task: URLSessionTask, with failure: URLError) {
        tracked.withLock { $0[task.taskIdentifier]?.ending = .tlsRefused(failure) }
    }

    /// The request of a delegate-driven task, once it has been heard from.
    private func streaming(_ task: URLSessionTask) -> BackendRequest? {
        guard let streaming = tracked.withLock({ $0[task.taskIdentifier]?.streaming }) else { return nil }
        streaming.activity()
        return streaming.request
    }

    /// Where a streamed task's response goes as it arrives, once it has been heard from.
    private func sink(of task: URLSessionTask) -> StreamSink? {
        guard let streaming = tracked.withLock({ $0[task.taskIdentifier]?.streaming }) else { return nil }
        streaming.activity()
        return streaming.sink
    }

    /// Stops a task whose in-memory body has gone (or will go) past its request's limit.
    private func enforceLimit(
        _ task: URLSessionTask, _ request: BackendRequest, received: Int64, expected: Int64
    ) -> Bool {
        guard let limit = request.maxResponseSize, request.downloadFile == nil,
            received > Int64(limit) || expected > Int64(limit)
        else { return false }
        tracked.withLock { $0[task.taskIdentifier]?.ending = .tooLarge(limit) }
        task.cancel()
        return true
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        noteHead(of: dataTask)
        if let problem = ResponseHeadTooLarge.problem(with: response) {
            tracked.withLock { $0[dataTask.taskIdentifier]?.ending = .headTooLarge(problem) }
            dataTask.cancel()
            return completionHandler(.cancel)
        }
        // A declared length past the limit ends the task before any of the body is read.
        if let request = streaming(dataTask),
            enforceLimit(dataTask, request, received: 0, expected: response.expectedContentLength)
        {
            return completionHandler(.cancel)
        }
        if let sink = sink(of: dataTask), let head = response as? HTTPURLResponse,
            let sent = tracked.withLock({ $0[dataTask.taskIdentifier]?.sent })
        {
            sink.head(Response(request: sent, response: head, data: Data()))
        }
        openDownload(of: dataTask)
        completionHandler(.allow)
    }

    /// Opens a file for the body of `task`'s download, when it has one. A data task writes it, not a download
    /// task: what a download task wrote is gone when it fails, and a resumable download keeps it. The file is
    /// in the temporary directory, as a download task's: it reaches the destination's directory only as the
    /// answer, or as what a resumable download keeps (URLSessionBackend's `conclude`), never after the call
    /// was cancelled and its download discarded.
    private func openDownload(of task: URLSessionTask) {
        guard tracked.withLock({ $0[task.taskIdentifier]?.streaming?.request.downloadFile }) != nil else {
            return
        }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(
            "swiftyservice-download-\(UUID().uuidString)")
        // Not opened, the body stays in memory and is written at the end, which then fails with the cause.
        guard FileManager.default.createFile(atPath: file.path, contents: nil),
            let output = try? FileHandle(forWritingTo: file)
        else { return }
        tracked.withLock { table in
            table[task.taskIdentifier]?.streaming?.output = output
            table[task.taskIdentifier]?.streaming?.file = file
        }
    }

    /// Writes a piece of a download's body to its file; `false` when `task` writes none.
    private func write(_ data: Data, of task: URLSessionTask) -> Bool {
        let open = tracked.withLock { table -> (FileHandle, Int64, BackendRequest, @Sendable () -> Void)? in
            guard let streaming = table[task.taskIdentifier]?.streaming, let output = streaming.output else {
                return nil
            }
            table[task.taskIdentifier]?.streaming?.written += Int64(data.count)
            return (output, streaming.written + Int64(data.count), streaming.request, streaming.activity)
        }
        guard let (output, written, request, activity) = open else { return false }
        activity()
        do {
            try output.write(contentsOf: data)
        } catch {
            tracked.withLock {
                $0[task.taskIdentifier]?.ending = .cannotWrite(request.downloadFile ?? .placeholder)
            }
            task.cancel()
            return true
        }
        let expected = task.response?.expectedContentLength ?? -1
        request.reportProgress(
            TransferProgress(
                direction: .download, completed: written, expected: expected >= 0 ? expected : nil))
        return true
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        if let sink = sink(of: dataTask) {
            return streamed(data, of: dataTask, into: sink)
        }
        if write(data, of: dataTask) { return }
        let progress = tracked.withLock { table -> (BackendRequest, Int64, @Sendable () -> Void)? in
            guard table[dataTask.taskIdentifier]?.streaming != nil else { return nil }
            table[dataTask.taskIdentifier]?.streaming?.data.append(data)
            guard let streaming = table[dataTask.taskIdentifier]?.streaming else { return nil }
            return (streaming.request, Int64(streaming.data.count), streaming.activity)
        }
        guard let (request, received, activity) = progress else { return }
        activity()
        let expected = dataTask.response?.expectedContentLength ?? -1
        if enforceLimit(dataTask, request, received: received, expected: expected) { return }
        request.reportProgress(
            TransferProgress(
                direction: .download, completed: received, expected: expected >= 0 ? expected : nil))
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) {
        streaming(task)?.reportProgress(
            TransferProgress(
                direction: .upload, completed: totalBytesSent,
                expected: totalBytesExpectedToSend > 0 ? totalBytesExpectedToSend : nil))
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let streaming = tracked.withLock({ $0[task.taskIdentifier]?.streaming }) else { return }
        try? streaming.output?.close()
        let body = streaming.file.map(Body.file) ?? .data(streaming.data)
        streaming.complete(task, error, body)
    }

    /// What was measured of `task`, when its request collects metrics.
    func timing(of task: URLSessionTask) -> Timing? {
        tracked.withLock { table in
            guard let entry = table[task.taskIdentifier], entry.request.collectsMetrics else { return nil }
            return Timing(headAt: entry.headAt, redirects: entry.redirects, measured: entry.measured)
        }
    }

    /// Notes the first sign of the response, when `task`'s request collects metrics.
    private func noteHead(of task: URLSessionTask) {
        tracked.withLock { table in
            guard let entry = table[task.taskIdentifier], entry.request.collectsMetrics, entry.headAt == nil
            else { return }
            table[task.taskIdentifier]?.headAt = Date()
        }
    }

    /// Keeps the platform's measurements of `task`.
    func keep(_ measured: TransferMetrics, for task: URLSessionTask) {
        tracked.withLock { $0[task.taskIdentifier]?.measured = measured }
    }

    /// Forgets the task and says how it ended.
    func finish(_ task: URLSessionTask) -> Ending {
        tracked.withLock { $0.removeValue(forKey: task.taskIdentifier)?.ending } ?? .finished
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        let entry = tracked.withLock { table -> Tracked? in
            table[task.taskIdentifier]?.redirects += 1
            return table[task.taskIdentifier]
        }
        guard let entry else { return completionHandler(request) }
        if let problem = ResponseHeadTooLarge.problem(with: response) {
            tracked.withLock { $0[task.taskIdentifier]?.ending = .headTooLarge(problem) }
            return completionHandler(nil)
        }
        switch policy.step(
            after: response, sent: entry.sent, proposed: request, for: entry.request,
            redirects: entry.redirects)
        {
        case .stop:
            completionHandler(nil)
        case .tooMany:
            tracked.withLock { $0[task.taskIdentifier]?.ending = .tooManyRedirects }
            completionHandler(nil)
        case let .refuse(refusal):
            tracked.withLock { $0[task.taskIdentifier]?.ending = .refused(refusal) }
            completionHandler(nil)
        case let .follow(next)
        where (next.httpBody != nil || entry.request.bodyFile != nil)
            && (response.statusCode == 307 || response.statusCode == 308):
            // Stop here and send the request again ourselves: following it, Linux would drop the body (a file
            // body too: the next task uploads from the file again).
            tracked.withLock { $0[task.taskIdentifier]?.ending = .resend(next, redirects: entry.redirects) }
            completionHandler(nil)
        case let .follow(next):
            tracked.withLock { $0[task.taskIdentifier]?.sent = next }
            completionHandler(next)
        }
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        #if canImport(Security)
        if let tlsPolicy = tlsPolicy(of: task),
            answer(challenge, for: task, under: tlsPolicy, completionHandler)
        {
            return
        }
        #endif
        let httpMethods = [
            NSURLAuthenticationMethodDefault, NSURLAuthenticationMethodHTTPBasic,
            NSURLAuthenticationMethodHTTPDigest,
            NSURLAuthenticationMethodNTLM, NSURLAuthenticationMethodNegotiate,
        ]
        guard httpMethods.contains(challenge.protectionSpace.authenticationMethod),
            let head = challenge.failureResponse as? HTTPURLResponse
        else { return completionHandler(.performDefaultHandling, nil) }
        // Credentials belong in the request (or a middleware); the challenge's 401 is the answer. Left to
        // its default handling, URLSession on Linux never finishes the task.
        tracked.withLock { $0[task.taskIdentifier]?.ending = .challenged(head) }
        completionHandler(.cancelAuthenticationChallenge, nil)
    }
}
