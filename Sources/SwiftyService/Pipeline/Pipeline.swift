import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A built request's way to its outcome: the exchange it lives in, the middleware chain, one attempt at a
/// time to the backend; the verdict and the settlement (Verdict.swift, Settlement.swift) when it answers.
extension PreparedRequest {
    /// The request's exchange, not started: its answer is judged and settled by this request.
    func makeExchange() -> Exchange {
        Exchange(request: urlRequest, settling: self, endsWhenAbandoned: true)
    }

    /// Starts the request in `exchange`: straight to the backend when there is no middleware (no task, no
    /// hop), through the chain in a task otherwise.
    func start(_ exchange: Exchange) {
        if let resourceTimeout { exchange.expire(after: resourceTimeout) }
        guard middleware.isEmpty else {
            exchange.start { answer in
                let task = Task { answer(await throughChain()) }
                return BackendTask { task.cancel() }
            }
            return
        }
        let request = urlRequest
        exchange.start { answer in
            var sent = backendRequest
            do {
                try sent.adapt(for: backend)
            } catch {
                answer(.failure(ServiceError(error, request: request)))
                return .uncancellable
            }
            sent.addCookies()
            let jar = sent.cookieJar
            return backend.send(sent) { result in
                if case let .success(response) = result { response.keepCookies(in: jar) }
                answer(result.mapError { ServiceError($0, request: request) })
            }
        }
    }

    /// Sends the request and waits for the answer; cancelling the task cancels the request. The realm's
    /// callback queue plays no part: the caller's task resumes on its own executor.
    func response() async throws -> Response {
        let exchange = makeExchange()
        // Cancelled before it starts, the request is never sent.
        return try await withTaskCancellationHandler {
            start(exchange)
            return try await exchange.outcome(cancelling: true).get()
        } onCancel: {
            exchange.cancel()
        }
    }

    /// Runs the middleware chain: the response that comes out of it, whatever its status, or the failure.
    private func throughChain() async -> Exchange.Outcome {
        let context = RequestContext(
            builtFrom: backendRequest.builtFrom, crudMethod: backendRequest.crudMethod,
            redaction: backendRequest.redaction, counter: AttemptCounter())
        do {
            return .success(try await link(0, context: context)(urlRequest))
        } catch {
            return .failure(ServiceError(error, request: urlRequest, attempts: context.attempts))
        }
    }

    /// The chain from middleware `index` on; past the last one, one attempt at the backend.
    private func link(_ index: Int, context: RequestContext) -> MiddlewareNext {
        guard index < middleware.count else {
            return MiddlewareNext { request in try await self.attempt(request, context: context) }
        }
        let current = middleware[index]
        let next = link(index + 1, context: context)
        return MiddlewareNext { request in
            try Task.checkCancellation()
            return try await current.intercept(request, context: context, next: next)
        }
    }

    /// One trip to the backend, in an exchange of its own, for a request a middleware may have changed;
    /// every status comes back. Cancelling the task cancels the attempt.
    private func attempt(_ request: URLRequest, context: RequestContext) async throws -> Response {
        // A middleware may have changed the request after it was checked: nothing unsafe goes out.
        if let problem = TransportRules.problem(with: request) {
            throw ServiceError.invalidRequest(
                problem, method: HTTPMethod(rawValue: request.httpMethod ?? "GET"),
                url: (request.url?.absoluteString ?? "?").abbreviatedURL)
        }
        let number = context.counter.increment()
        var sent = backendRequest
        sent.urlRequest = request
        // A middleware may set any timeout; backends (a legacy library's among them) get one they can use.
        let timeout = request.timeoutInterval
        if timeout.usableTimeout != timeout { sent.urlRequest.timeoutInterval = timeout.usableTimeout }
        try sent.adapt(for: backend)
        sent.addCookies()
        let attempt = Exchange(request: request)
        let backend = backend
        let outcome = await withTaskCancellationHandler {
            attempt.start { [sent] answer in
                backend.send(sent) { result in
                    if case let .success(response) = result { response.keepCookies(in: sent.cookieJar) }
                    answer(result.mapError { ServiceError($0, request: request) })
                }
            }
            return await attempt.outcome(cancelling: true)
        } onCancel: {
            attempt.cancel()
        }
        var response = try outcome.mapError { $0.counting(number) }.get()
        response.attempts = number
        return response
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

extension Exchange {
    /// `waiter`, told on `queue` when there is one.
    static func waiter(_ waiter: @escaping Waiter, on queue: DispatchQueue?) -> Waiter {
        guard let queue else { return waiter }
        return { outcome in queue.async { waiter(outcome) } }
    }
}

extension BackendRequest {
    /// Makes the request one `backend` can take: a backend that does not stream gets the file body in
    /// memory and no download file (SwiftyService writes the download after it answers).
    mutating func adapt(for backend: any NetworkBackend) throws {
        guard bodySource != nil || downloadFile != nil, !backend.supportsStreaming else { return }
        if let file = bodySource {
            urlRequest.httpBody = try Data(contentsOf: file.url)
            bodySource = nil
        }
        downloadFile = nil
    }
}
