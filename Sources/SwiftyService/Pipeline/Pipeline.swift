import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One call's way to its head, whether its body is read whole or streamed: the exchange it lives in, the
/// middleware chain, one trip to the backend at a time. The verdict and the settlement (Verdict.swift,
/// Settlement.swift) judge what comes back; a streamed call then hands its body to the reader
/// (StreamedCall.swift).
extension PreparedRequest {
    /// One call of this request: its exchange, not started, and what the chain keeps of it.
    struct Call {
        let exchange: Exchange
        /// The chain's record of the call: `nil` on the fast path, which has no chain.
        let state: CallState?
        let mode: CallState.Mode
    }

    /// A call whose body is read as `mode` says; its answer is judged and settled by this request.
    func makeCall(_ mode: CallState.Mode = .buffered) -> Call {
        let state =
            middleware.isEmpty ? nil : CallState(mode: mode, sendingRules: sendingRules(), events: events)
        let settlement = CallSettlement(request: self, call: state, mode: mode)
        let exchange = Exchange(
            sent: backendRequest.sent, settling: settlement, endsWhenAbandoned: true, keepsBody: mode == .streamed)
        return Call(exchange: exchange, state: state, mode: mode)
    }

    /// Starts `call`: straight to the backend when there is no middleware (no task, no hop), through the
    /// chain in a task otherwise. `askingCache: false` when the leading cache has just said it has no
    /// immediate answer; `awaited` when the sender does nothing but await the call, so that a backend may
    /// carry the request out on its thread.
    func start(_ call: Call, askingCache: Bool = true, awaited: Bool = false) {
        events?.emit(.built(urlRequest))
        // A stream gets the deadline its settings chose, never the default of a buffered request.
        let deadline = call.mode == .streamed ? limits.resourceTimeout(for: .stream) : resourceTimeout
        guard let state = call.state else {
            // A backend that drives an awaited request as built keeps its deadline too: no timer to set and
            // call off around every request.
            let kept = awaited && call.mode == .buffered && drivenBackend != nil
                && backendRequest.goesAsBuilt(to: backend)
            if let deadline, !kept { call.exchange.expire(after: deadline) }
            call.exchange.start { exchange in
                transmit(
                    backendRequest, attempt: 1, mode: call.mode, awaited: awaited,
                    deadline: kept ? deadline : nil, to: exchange)
            }
            return
        }
        if let deadline { call.exchange.expire(after: deadline) }
        // A fresh hit of a cache first in the chain needs no task: nothing before it must see the request.
        if askingCache, let hit = leadingCache?.immediateAnswer(to: urlRequest) {
            events?.emit(.cacheHit)
            call.exchange.start { answer in
                answer(.success(hit))
                return .uncancellable
            }
            return
        }
        call.exchange.start { answer in
            let task = Task { answer(await throughChain(state)) }
            return BackendTask { task.cancel() }
        }
    }

    /// Sends the request and waits for the whole answer; cancelling the task cancels the request. The
    /// realm's callback queue plays no part: the caller's task resumes on its own executor.
    // Nonsending: it runs where its caller (`request()` and its kin, nonisolated already) runs, with no
    // executor switch on the way in or back. A caller isolated to an actor would run it, and any transfer a
    // backend drives on the sender's thread, on that actor: keep its callers nonisolated.
    nonisolated(nonsending) func response() async throws -> Response {
        // A fresh hit of a cache first in the chain needs no exchange either: an answer there before the
        // request starts has no backend, timer or task to race, and is settled as the exchange would.
        // Cancelled already, the request takes the exchange's way, which ends it as cancelled.
        let askingCache = leadingCache != nil && !Task.isCancelled
        if askingCache, let hit = leadingCache?.immediateAnswer(to: urlRequest) {
            events?.emit(.built(urlRequest))
            events?.emit(.cacheHit)
            return try settle(.success(hit), mode: .buffered, call: nil).get()
        }
        let call = makeCall(.buffered)
        // Cancelled before it starts, the request is never sent.
        return try await withTaskCancellationHandler {
            try await call.exchange.untilFinished { start(call, askingCache: !askingCache, awaited: true) }.get()
        } onCancel: {
            call.exchange.cancel()
        }
    }

    /// Runs the middleware chain: the response that comes out of it, whatever its status, or the failure.
    /// The bodies of attempts that did not become the answer stop here, if nothing stopped them before.
    private func throughChain(_ call: CallState) async -> Exchange.Outcome {
        let context = RequestContext(
            builtFrom: backendRequest.builtFrom, crudMethod: backendRequest.crudMethod,
            redaction: backendRequest.redaction, call: call, events: events, metricsLog: metricsLog)
        let outcome: Exchange.Outcome
        do {
            outcome = .success(try await link(0, context: context)(urlRequest))
        } catch {
            outcome = .failure(ServiceError(error, request: urlRequest, attempts: context.attempts))
        }
        call.stopBodies(but: outcome.streamedBody)
        return outcome
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

    /// One trip to the backend, in an exchange of its own that the head answers, for a request a
    /// middleware may have changed; every status comes back. Cancelling the task cancels the attempt.
    private func attempt(_ request: URLRequest, context: RequestContext) async throws -> Response {
        let (number, sent) = try attemptRequest(request, context: context)
        let attempt = Exchange(request: request)
        let mode = context.call.mode
        let outcome = await withTaskCancellationHandler {
            attempt.start { exchange in transmit(sent, attempt: number, mode: mode, awaited: true, to: exchange) }
            return await attempt.outcome(cancelling: true)
        } onCancel: {
            attempt.cancel()
        }
        var response = try outcome.mapError { $0.counting(number) }.get()
        if let body = response.arrivingBody { context.call.keep(body) }
        response.attempts = number
        context.events?.emit(.responseHead(attempt: number, response.response))
        if metricsLog != nil {
            log(response.metrics, attempt: number)
            response.metrics = metricsLog?.all ?? []
        }
        return response
    }

    /// Keeps an attempt's metrics in the call's log, numbered.
    private func log(_ metrics: [TransferMetrics], attempt: Int) {
        guard let metricsLog else { return }
        for var entry in metrics {
            entry.attempt = attempt
            metricsLog.add(entry)
        }
    }

    /// One trip to the backend for `request`: made fit for it (the TLS policy checked, a file body read
    /// for a backend that does not stream, the jar's cookies added), then sent whole or streamed as the
    /// call reads its body. `exchange` hears the head (with the body whole, or arriving) or the failure,
    /// named with its own request; the cookies the head sets are kept first.
    private func transmit(
        _ request: BackendRequest, attempt: Int, mode: CallState.Mode, awaited: Bool,
        deadline: TimeInterval? = nil, to exchange: Exchange
    ) -> BackendTask {
        // Most requests go as built: no copy to change, no policy to check.
        if mode == .buffered, request.goesAsBuilt(to: backend) {
            events?.emit(.attemptStarted(attempt: attempt, request.urlRequest))
            return send(
                request, awaited: awaited, deadline: deadline,
                completion: answering(exchange, attempt: attempt, keeping: nil))
        }
        let original = request.urlRequest
        let streaming = mode == .streamed ? backend as? any StreamingBackend : nil
        var sent = request
        if mode == .streamed {
            // A stream's body goes to its reader, not to a file; only its lines and events have a size limit,
            // unless the realm sets one (held to it here when the backend answers whole).
            sent.downloadFile = nil
            sent.maxResponseSize = streaming != nil ? nil : limits.maxResponseSize(for: .stream)
        }
        if sent.cookieJar != nil || sent.tlsPolicy != nil || sent.httpVersion != .automatic
            || sent.needsAdapting(for: backend)
        {
            do {
                try sent.adapt(for: backend, attempt: attempt)
                try sent.addCookies()
            } catch {
                exchange.answer(.failure(ServiceError(error, request: original)))
                return .uncancellable
            }
        }
        // A download that resumes asks for the rest of its partial file, into a segment of this attempt's own.
        if let resumption = sent.resumption, sent.downloadFile != nil { resumption.prepare(&sent) }
        events?.emit(.attemptStarted(attempt: attempt, sent.urlRequest))
        let heard = answering(exchange, attempt: attempt, keeping: sent.cookieJar)
        if let stream = sent.bodyStream, !(backend is any BodyStreamingBackend) {
            return collecting(stream, into: sent, original: original, for: exchange) { [self] collected in
                dispatch(
                    collected, mode: mode, streaming: streaming, awaited: false, original: original, heard)
            }
        }
        return dispatch(sent, mode: mode, streaming: streaming, awaited: awaited, original: original, heard)
    }

    /// Sends a request made fit for the backend, whole or streamed as the call reads its body.
    private func dispatch(
        _ sent: BackendRequest, mode: CallState.Mode, streaming: (any StreamingBackend)?, awaited: Bool,
        original: URLRequest, _ heard: @escaping @Sendable (Result<Response, any Error>) -> Void
    ) -> BackendTask {
        guard mode == .streamed else {
            guard let resumption = sent.resumption, sent.downloadFile != nil else {
                return send(sent, awaited: awaited, completion: heard)
            }
            return send(sent, awaited: awaited) { result in
                if case let .success(response) = result, let file = response.fileURL { resumption.answered(file) }
                heard(result)
            }
        }
        // A backend that does not stream answers whole; its body still reaches the chain as a stream does,
        // so that middleware sees every stream the same way.
        let sink = StreamSink(request: original, onHead: heard)
        let task =
            if let streaming {
                streaming.stream(sent, into: sink)
            } else {
                backend.send(sent) { result in sink.deliver(result) }
            }
        sink.attach(task)
        return task
    }

    /// Reads a stream body into memory for a backend that does not stream it, then sends the request with it;
    /// a failure of the sequence fails the attempt. Stopping the task stops the reading, or the request sent.
    private func collecting(
        _ stream: BodyStream, into request: BackendRequest, original: URLRequest, for exchange: Exchange,
        then send: @escaping @Sendable (BackendRequest) -> BackendTask
    ) -> BackendTask {
        let sent = Locked<BackendTask?>.make(nil)
        let task = Task {
            var request = request
            do {
                request.urlRequest.httpBody = try await stream.collect()
            } catch {
                exchange.answer(.failure(ServiceError(error, request: original)))
                return
            }
            request.bodyStream = nil
            let started = send(request)
            sent.withLock { $0 = started }
            if Task.isCancelled { started.cancel() }
        }
        return BackendTask {
            task.cancel()
            stream.stop()
            sent.value?.cancel()
        }
    }

    /// What a backend's answer does: the cookies the head sets kept in `jar`, a failed attempt's metrics kept
    /// in the call's log, then `exchange` answered, a failure named with the exchange's own request.
    private func answering(_ exchange: Exchange, attempt: Int, keeping jar: CookieJar?)
        -> @Sendable (Result<Response, any Error>) -> Void
    {
        let log = metricsLog
        guard log != nil || jar != nil else {
            // A closure that holds one object alone has that object for its context: nothing is allocated.
            return { result in exchange.answer(result.mapError { ServiceError($0, request: exchange.request) }) }
        }
        return { result in
            switch result {
            case let .success(response):
                if let jar { response.keepCookies(in: jar) }
            case let .failure(error):
                if let log, var metrics = (error as? MeasuredFailure)?.metrics {
                    metrics.attempt = attempt
                    log.add(metrics)
                }
            }
            exchange.answer(result.mapError { ServiceError($0, request: exchange.request) })
        }
    }

    /// Hands `request` to the backend: on the sender's thread where the backend can and the sender only
    /// awaits the answer (see ``CallerDrivenBackend``). A call, not a function value to call: making one of
    /// an existential's method costs an allocation per request.
    private func send(
        _ request: BackendRequest, awaited: Bool, deadline: TimeInterval? = nil,
        completion: @escaping @Sendable (Result<Response, any Error>) -> Void
    ) -> BackendTask {
        if awaited, let driven = drivenBackend {
            return driven.sendDriving(request, deadline: deadline, completion: completion)
        }
        return backend.send(request, completion: completion)
    }

    /// The next attempt's number and the request it sends: `request` as a middleware left it, checked
    /// again (nothing unsafe goes out), with a timeout every backend can use (a middleware may set any).
    private func attemptRequest(_ request: URLRequest, context: RequestContext) throws(ServiceError)
        -> (number: Int, sent: BackendRequest)
    {
        if let problem = TransportRules.problem(with: request) {
            throw .invalidRequest(
                problem, method: HTTPMethod(rawValue: request.httpMethod ?? "GET"),
                url: (request.url?.absoluteString ?? "?").abbreviatedURL)
        }
        var sent = backendRequest
        sent.urlRequest = request
        // The call hears what the backend reports of the attempt, for its observers and its middleware.
        sent.reports = context.call
        let timeout = request.timeoutInterval
        if timeout.usableTimeout != timeout { sent.urlRequest.timeoutInterval = timeout.usableTimeout }
        return (context.call.nextAttempt(), sent)
    }

    /// What besides the request decides what a trip sends and trusts, for a call that may share one; `nil`
    /// when it may not, or when the backend cannot be told apart from another (a value, not an object).
    private func sendingRules() -> (any Hashable & Sendable)? {
        guard coalesces, type(of: backend as Any) is AnyClass else { return nil }
        return SendingRules(
            backend: ObjectIdentifier(backend as AnyObject), tlsPolicy: backendRequest.tlsPolicy,
            httpVersion: backendRequest.httpVersion, cookieJar: backendRequest.cookieJar.map(ObjectIdentifier.init),
            maxResponseSize: backendRequest.maxResponseSize, collectsMetrics: backendRequest.collectsMetrics,
            bodyFile: backendRequest.bodyFile, bodyStream: backendRequest.bodyStream.map(ObjectIdentifier.init),
            redaction: backendRequest.redaction,
            crudMethod: backendRequest.crudMethod, sampleData: backendRequest.sampleData,
            endpoint: backendRequest.builtFrom.map { ObjectIdentifier(type(of: $0)) })
    }
}

/// Everything besides the `URLRequest` that decides what a trip to the backend sends and what it trusts:
/// two calls share a trip only when these are equal as well.
private struct SendingRules: Hashable {
    let backend: ObjectIdentifier
    let tlsPolicy: TLSPolicy?
    let httpVersion: HTTPVersionPreference
    let cookieJar: ObjectIdentifier?
    let maxResponseSize: Int?
    let collectsMetrics: Bool
    let bodyFile: URL?
    /// A stream body, which another call's trip would not send.
    let bodyStream: ObjectIdentifier?
    let redaction: Redaction
    let crudMethod: CRUDMethod?
    /// What a stub answers with.
    let sampleData: Data
    /// The endpoint's type, which a stub may answer by.
    let endpoint: ObjectIdentifier?
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

extension BackendRequest {
    /// Whether the request goes to `backend` as it was built: no cookies to add, no policy or version to
    /// check, nothing to adapt, no download to resume.
    func goesAsBuilt(to backend: any NetworkBackend) -> Bool {
        cookieJar == nil && tlsPolicy == nil && httpVersion == .automatic && resumption == nil
            && !needsAdapting(for: backend)
    }

    /// Whether ``adapt(for:)`` would change anything.
    func needsAdapting(for backend: any NetworkBackend) -> Bool {
        (bodySource != nil || downloadFile != nil) && !backend.supportsStreaming || bodyStream != nil
    }

    /// Makes the request one `backend` can take: a backend that does not stream gets the file body in
    /// memory and no download file (SwiftyService writes the download after it answers). A TLS policy the
    /// backend cannot carry out, or a version of HTTP it cannot speak, fails the request here, before anything
    /// is sent.
    /// A stream body is claimed here for the attempt: a later attempt finds it claimed and fails with
    /// ``BodyStreamError/cannotResendForRetry(attempt:)``.
    mutating func adapt(for backend: any NetworkBackend, attempt: Int) throws {
        try checkTLSPolicy(for: backend)
        try checkHTTPVersion(for: backend)
        if let bodyStream {
            if backend.supportsStreaming, !(backend is any BodyStreamingBackend) {
                throw ServiceError.invalidRequest(
                    .unsupportedBodyStream(backend: String(describing: type(of: backend))),
                    method: HTTPMethod(rawValue: urlRequest.httpMethod ?? "GET"),
                    url: (urlRequest.url?.absoluteString ?? "?").abbreviatedURL)
            }
            guard bodyStream.claim() else { throw BodyStreamError.cannotResendForRetry(attempt: attempt) }
        }
        guard needsAdapting(for: backend) else { return }
        guard (bodySource != nil || downloadFile != nil) && !backend.supportsStreaming else { return }
        if let file = bodySource {
            urlRequest.httpBody = try Data(contentsOf: file.url)
            bodySource = nil
        }
        downloadFile = nil
    }
}
