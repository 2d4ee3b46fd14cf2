import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension PreparedRequest {
    /// Sends the request; `delivery` runs exactly once, on the realm's callback queue if it has one.
    func start(delivering delivery: @escaping RequestHandle.Delivery) -> RequestHandle {
        let handle = makeHandle()
        if let callbackQueue {
            start(handle) { result in callbackQueue.async { delivery(result) } }
        } else {
            start(handle, delivering: delivery)
        }
        return handle
    }

    /// Starts the request under `handle`: straight to the backend when there is no middleware (no task,
    /// no hop), through the chain in a task otherwise.
    func start(_ handle: RequestHandle, delivering delivery: @escaping RequestHandle.Delivery) {
        guard handle.begin(delivering: delivery) else { return }
        if let resourceTimeout { handle.expire(after: resourceTimeout) }
        guard middleware.isEmpty else {
            let task = Task {
                handle.finish(settling: await throughChain(), with: conclude, otherwise: discard)
            }
            handle.attach(BackendTask { task.cancel() })
            return
        }
        let sent: BackendRequest
        do {
            sent = try backendRequest.adapted(for: backend)
        } catch {
            handle.finish(.failure(ServiceError(error, request: urlRequest)))
            return
        }
        let request = urlRequest
        let task = backend.send(sent) { result in
            handle.finish(
                settling: result.mapError { ServiceError($0, request: request) }, with: conclude,
                otherwise: discard)
        }
        handle.attach(task)
    }

    /// The handle of this request, which stops its progress reports when it ends without its answer.
    func makeHandle() -> RequestHandle {
        RequestHandle(request: urlRequest, progress: backendRequest.progress)
    }

    /// Sends the request and waits for the answer; cancelling the task cancels the request.
    /// The realm's callback queue plays no part: the caller's task resumes on its own executor.
    func response() async throws -> Response {
        // The chain runs in the caller's task, which carries cancellation, unless a resource timeout must be
        // able to end the wait: then through a handle, as without middleware.
        if !middleware.isEmpty && resourceTimeout == nil { return try await conclude(throughChain()).get() }
        let handle = makeHandle()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                start(handle) { continuation.resume(with: $0) }
            }
        } onCancel: {
            handle.cancel()
        }
    }

    /// Runs the middleware chain: the response that comes out of it, whatever its status, or the failure.
    private func throughChain() async -> Result<Response, ServiceError> {
        let context = RequestContext(
            endpoint: backendRequest.endpoint, crudMethod: backendRequest.crudMethod,
            redaction: backendRequest.redaction, counter: AttemptCounter())
        do {
            return .success(try await link(0, context: context)(urlRequest))
        } catch {
            return .failure(ServiceError(error, request: urlRequest, attempts: context.attempts))
        }
    }

    /// The chain from middleware `index` on; past the last one, the backend.
    private func link(_ index: Int, context: RequestContext) -> MiddlewareNext {
        guard index < middleware.count else {
            return MiddlewareNext { request in try await sendOnce(request, context: context) }
        }
        let current = middleware[index]
        let next = link(index + 1, context: context)
        return MiddlewareNext { request in
            try Task.checkCancellation()
            return try await current.intercept(request, context: context, next: next)
        }
    }

    /// One trip to the backend for a request a middleware may have changed; every status comes back.
    private func sendOnce(_ request: URLRequest, context: RequestContext) async throws -> Response {
        // A middleware may have changed the request after it was checked: nothing unsafe goes out.
        if let problem = TransportRules.problem(with: request) {
            throw ServiceError.invalidRequest(
                problem, method: HTTPMethod(rawValue: request.httpMethod ?? "GET"),
                url: (request.url?.absoluteString ?? "?").abbreviatedURL)
        }
        let attempt = context.counter.increment()
        var attemptRequest = backendRequest
        attemptRequest.urlRequest = request
        // A middleware may set any timeout; backends (a legacy library's among them) get one they can use.
        let timeout = request.timeoutInterval
        if timeout.usableTimeout != timeout {
            attemptRequest.urlRequest.timeoutInterval = timeout.usableTimeout
        }
        attemptRequest = try attemptRequest.adapted(for: backend)
        let handle = RequestHandle(request: request)
        let backend = backend
        var response = try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation {
                (continuation: CheckedContinuation<Response, any Error>) in
                guard
                    handle.begin(delivering: { result in
                        continuation.resume(with: result.mapError { $0.counting(attempt) })
                    })
                else { return }
                let task = backend.send(attemptRequest) { result in
                    handle.finish(
                        Self.outcome(of: result, request: request, validStatusCodes: .all, errorBody: nil))
                }
                handle.attach(task)
            }
        } onCancel: {
            handle.cancel()
        }
        response.attempts = attempt
        return response
    }

    /// Judges the backend's answer: status, decoded error body, a download moved into place, and the
    /// final 100% progress reports.
    func conclude(_ result: Result<Response, ServiceError>) -> Result<Response, ServiceError> {
        guard case var .success(response) = result else {
            discardDownload()
            return Self.outcome(
                of: result.mapError { $0 }, request: urlRequest, validStatusCodes: validStatusCodes,
                errorBody: errorBody)
        }
        if let limit = backendRequest.maxResponseSize, response.data.count > limit {
            // The backend could not stop it earlier; at least it goes no further.
            return .failure(
                .transport(
                    urlRequest, underlying: ResponseTooLarge(limit: limit), attempts: response.attempts))
        }
        let accepted = validStatusCodes.contains(response.statusCode)
        if let download = backendRequest.download, let staging = backendRequest.downloadFile {
            do {
                try download.prepareDirectory()
                if response.fileURL == nil { try response.data.write(to: staging) }
                if accepted {
                    try download.settle(from: response.fileURL ?? staging)
                    response.fileURL = download.url
                    response.data = Data()
                } else {
                    response.fileURL = nil
                    response.data = Self.head(of: staging)
                    discardDownload()
                }
            } catch {
                discardDownload()
                return .failure(ServiceError(error, request: urlRequest, attempts: response.attempts))
            }
        }
        if let progress = backendRequest.progress {
            let uploaded = urlRequest.httpBody.map { Int64($0.count) } ?? backendRequest.bodySource?.size ?? 0
            if uploaded > 0 { progress.finish(.upload, total: uploaded) }
            let downloaded =
                response.fileURL.flatMap { BodyFile(url: $0, isTemporary: false).size }
                ?? Int64(response.data.count)
            progress.finish(.download, total: downloaded)
        }
        return Self.outcome(
            of: .success(response), request: urlRequest, validStatusCodes: validStatusCodes,
            errorBody: errorBody)
    }

    /// Cleans up after an answer that is not delivered (the request was cancelled or timed out first).
    func discard(_ answer: Result<Response, ServiceError>) {
        discardDownload()
    }

    /// Removes what a failed or refused download left behind.
    func discardDownload() {
        if let staging = backendRequest.downloadFile { try? FileManager.default.removeItem(at: staging) }
    }

    /// The start of a file (1 MB at most): enough of a refused download's body to explain the refusal.
    private static func head(of file: URL) -> Data {
        guard let handle = try? FileHandle(forReadingFrom: file) else { return Data() }
        defer { try? handle.close() }
        return (try? handle.read(upToCount: 1 << 20)) ?? Data()
    }

    static func outcome(
        of result: Result<Response, any Error>, request: URLRequest, validStatusCodes: StatusCodes,
        errorBody: ErrorBody?
    ) -> Result<Response, ServiceError> {
        switch result {
        case let .success(response):
            guard !validStatusCodes.contains(response.statusCode) else { return .success(response) }
            return .failure(.unacceptableStatusCode(response, errorBody: errorBody?.decode(response.data)))
        case let .failure(error):
            return .failure(ServiceError(error, request: request))
        }
    }
}

extension ServiceError {
    /// The same error, saying it happened on attempt `attempt`.
    func counting(_ attempt: Int) -> ServiceError {
        switch self {
        case let .transport(request, underlying, _):
            .transport(request, underlying: underlying, attempts: attempt)
        case let .timedOut(request, _): .timedOut(request, attempts: attempt)
        case let .cancelled(request, _): .cancelled(request, attempts: attempt)
        default: self
        }
    }
}

/// Delivers a failure that happened before anything could be sent, on the realm's callback queue if set.
func deliverEarly(
    _ error: ServiceError, on queue: DispatchQueue?, to delivery: @escaping RequestHandle.Delivery
) -> RequestHandle {
    if let queue {
        queue.async { delivery(.failure(error)) }
    } else {
        delivery(.failure(error))
    }
    return .finished
}

extension BackendRequest {
    /// The request as `backend` can take it: a backend that does not stream gets the file body in memory
    /// and no download file (SwiftyService writes the download after it answers).
    func adapted(for backend: any NetworkBackend) throws -> BackendRequest {
        guard !backend.supportsStreaming, bodySource != nil || downloadFile != nil else { return self }
        var request = self
        if let file = bodySource {
            request.urlRequest.httpBody = try Data(contentsOf: file.url)
            request.bodySource = nil
        }
        request.downloadFile = nil
        return request
    }
}
