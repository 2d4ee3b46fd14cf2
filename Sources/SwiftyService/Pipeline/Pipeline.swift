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
    /// hop), through the chain in a task otherwise. `askingCache: false` when the leading cache has just
    /// said it has no immediate answer; `awaited` when the sender does nothing but await the exchange, so
    /// that a backend may carry the request out on its thread.
    func start(_ exchange: Exchange, askingCache: Bool = true, awaited: Bool = false) {
        backendRequest.events?.emit(.built(urlRequest))
        if let resourceTimeout { exchange.expire(after: resourceTimeout) }
        guard middleware.isEmpty else {
            // A fresh hit of a cache first in the chain needs no task: nothing before it must see the request.
            if askingCache, let hit = leadingCache?.immediateAnswer(to: urlRequest) {
                backendRequest.events?.emit(.cacheHit)
                exchange.start { answer in
                    answer(.success(hit))
                    return .uncancellable
                }
                return
            }
            exchange.start { answer in
                let task = Task { answer(await throughChain()) }
                return BackendTask { task.cancel() }
            }
            return
        }
        let request = urlRequest
        exchange.start { answer in
            let jar = backendRequest.cookieJar
            let completion: @Sendable (Result<Response, any Error>) -> Void = { result in
                if let jar, case let .success(response) = result { response.keepCookies(in: jar) }
                answer(result.mapError { ServiceError($0, request: request) })
            }
            backendRequest.events?.emit(.attemptStarted(attempt: 1, request))
            // Most requests go as built: no copy to change, no policy to check.
            if jar == nil, backendRequest.tlsPolicy == nil, !backendRequest.needsAdapting(for: backend) {
                return send(backendRequest, awaited: awaited, completion: completion)
            }
            var sent = backendRequest
            do {
                try sent.adapt(for: backend)
            } catch {
                answer(.failure(ServiceError(error, request: request)))
                return .uncancellable
            }
            sent.addCookies()
            return send(sent, awaited: awaited, completion: completion)
        }
    }

    /// Hands `request` to the backend: on the sender's thread where the backend can and the sender only
    /// awaits the answer (see ``CallerDrivenBackend``). A call, not a function value to call: making one of
    /// an existential's method costs an allocation per request.
    private func send(
        _ request: BackendRequest, awaited: Bool,
        completion: @escaping @Sendable (Result<Response, any Error>) -> Void
    ) -> BackendTask {
        if awaited, let driven = backend as? any CallerDrivenBackend {
            return driven.sendDriving(request, completion: completion)
        }
        return backend.send(request, completion: completion)
    }

    /// Sends the request and waits for the answer; cancelling the task cancels the request. The realm's
    /// callback queue plays no part: the caller's task resumes on its own executor.
    func response() async throws -> Response {
        // A fresh hit of a cache first in the chain needs no exchange either: an answer there before the
        // request starts has no backend, timer or task to race, and is settled as the exchange would.
        // Cancelled already, the request takes the exchange's way, which ends it as cancelled.
        let askingCache = leadingCache != nil && !Task.isCancelled
        if askingCache, let hit = leadingCache?.immediateAnswer(to: urlRequest) {
            backendRequest.events?.emit(.built(urlRequest))
            backendRequest.events?.emit(.cacheHit)
            return try settle(.success(hit)).get()
        }
        let exchange = makeExchange()
        // Cancelled before it starts, the request is never sent.
        return try await withTaskCancellationHandler {
            start(exchange, askingCache: !askingCache, awaited: true)
            return try await exchange.untilFinished().get()
        } onCancel: {
            exchange.cancel()
        }
    }

    /// Runs the middleware chain: the response that comes out of it, whatever its status, or the failure.
    private func throughChain() async -> Exchange.Outcome {
        let context = RequestContext(
            builtFrom: backendRequest.builtFrom, crudMethod: backendRequest.crudMethod,
            redaction: backendRequest.redaction, counter: AttemptCounter(), events: backendRequest.events,
            metricsLog: metricsLog)
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
        var (number, sent) = try attemptRequest(request, context: context)
        try sent.adapt(for: backend)
        sent.addCookies()
        context.events?.emit(.attemptStarted(attempt: number, sent.urlRequest))
        let attempt = Exchange(request: request)
        let outcome = await withTaskCancellationHandler {
            attempt.start { [sent] answer in
                send(sent, awaited: true) { result in
                    if let jar = sent.cookieJar, case let .success(response) = result {
                        response.keepCookies(in: jar)
                    }
                    answer(result.mapError { ServiceError($0, request: request) })
                }
            }
            return await attempt.outcome(cancelling: true)
        } onCancel: {
            attempt.cancel()
        }
        var response = try outcome.mapError { $0.counting(number) }.get()
        response.attempts = number
        context.events?.emit(.responseHead(attempt: number, response.response))
        if let log = context.metricsLog {
            for var metrics in response.metrics {
                metrics.attempt = number
                log.add(metrics)
            }
            response.metrics = log.all
        }
        return response
    }
}

extension PreparedRequest {
    /// The next attempt's number and the request it sends: `request` as a middleware left it, checked
    /// again (nothing unsafe goes out), with a timeout every backend can use (a middleware may set any).
    func attemptRequest(_ request: URLRequest, context: RequestContext) throws(ServiceError)
        -> (number: Int, sent: BackendRequest)
    {
        if let problem = TransportRules.problem(with: request) {
            throw .invalidRequest(
                problem, method: HTTPMethod(rawValue: request.httpMethod ?? "GET"),
                url: (request.url?.absoluteString ?? "?").abbreviatedURL)
        }
        var sent = backendRequest
        sent.urlRequest = request
        sent.connectionWaits = context.connectionWaits
        let timeout = request.timeoutInterval
        if timeout.usableTimeout != timeout { sent.urlRequest.timeoutInterval = timeout.usableTimeout }
        return (context.counter.increment(), sent)
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
    /// Whether ``adapt(for:)`` would change anything.
    func needsAdapting(for backend: any NetworkBackend) -> Bool {
        (bodySource != nil || downloadFile != nil) && !backend.supportsStreaming
    }

    /// Makes the request one `backend` can take: a backend that does not stream gets the file body in
    /// memory and no download file (SwiftyService writes the download after it answers). A TLS policy the
    /// backend cannot carry out fails the request here, before anything is sent.
    mutating func adapt(for backend: any NetworkBackend) throws {
        try checkTLSPolicy(for: backend)
        guard needsAdapting(for: backend) else { return }
        if let file = bodySource {
            urlRequest.httpBody = try Data(contentsOf: file.url)
            bodySource = nil
        }
        downloadFile = nil
    }
}
