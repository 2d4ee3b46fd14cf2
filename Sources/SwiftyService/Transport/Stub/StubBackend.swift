import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A backend that answers without a network: each endpoint's ``SwiftyServiceProtocol/sampleData`` by
/// default, scripted answers per request, sequences, delays and failures; it keeps a log of what it got.
///
/// ```swift
/// ServiceRealm.get("users").use(.stub)                      // 200 with each endpoint's sampleData
/// ServiceRealm.get("users").use(.stub(.delayed(0.2)))       // the same, 0.2 s later
///
/// let stub = StubBackend(unmatched: .fail)                  // anything not scripted fails loudly
///     .on(.endpoint(UserService.info(uid: 42)), answer: .status(503), .json(#"{"id": 42}"#))
///     .on(.path("/v1/user/follow"), answer: .connectionRefused)
/// ServiceRealm.get("users").use(stub)
/// // … exercise the app …
/// #expect(stub.received.map(\.urlRequest.httpMethod) == ["GET", "GET", "POST"])
/// ```
/// The newest matching rule answers. A rule with several answers gives them in turn and then repeats
/// the last (first 503, then 200 from then on). A delay longer than the request's timeout ends in
/// ``ServiceError/timedOut(_:attempts:)`` at the timeout, as a slow server would; cancelling a delayed
/// answer calls back at once with `URLError(.cancelled)`, as a network backend does.
public final class StubBackend: NetworkBackend {
    /// When a stub answers.
    public enum Timing: Sendable, Hashable {
        /// Before `send` returns, on the caller's thread.
        case immediate
        /// After this many seconds (none for NaN or less than 0), on a background queue.
        case delayed(TimeInterval)
    }

    /// What a request that no rule matches gets.
    public enum Unmatched: Sendable {
        /// `200` with the endpoint's sample data.
        case sampleData
        /// A failure, ``ServiceError/transport(_:underlying:attempts:)`` with ``UnmatchedRequest``, naming it.
        case fail
    }

    /// The failure of a request no rule matched, under ``Unmatched/fail``.
    public struct UnmatchedRequest: Error, CustomStringConvertible {
        /// `no stub matches GET https://…; rules: …`
        public let description: String
    }

    private struct Rule {
        let match: Match
        let answers: [Answer]
        var next = 0
    }

    private struct State {
        var rules: [Rule] = []
        var log: [BackendRequest] = []
        var logged = 0
    }

    /// When this stub answers, unless an answer has a delay of its own.
    public let timing: Timing
    let unmatched: @Sendable (BackendRequest) throws -> Answer
    private let logLimit: Int
    private let state = Locked.make(State())

    /// A stub that answers unmatched requests per `unmatched` (by default 200 with the sample data).
    /// - Parameters:
    ///   - timing: when answers arrive, unless an answer has a delay of its own.
    ///   - unmatched: what a request no rule matches gets.
    ///   - logLimit: how many of the latest requests ``received`` keeps.
    public init(_ timing: Timing = .immediate, unmatched: Unmatched = .sampleData, logLimit: Int = 1_000) {
        self.timing = timing
        self.logLimit = logLimit
        switch unmatched {
        case .sampleData:
            self.unmatched = { _ in .sampleData }
        case .fail:
            let rules = state
            self.unmatched = { request in
                let descriptions = rules.withLock { $0.rules.map(\.match.description) }
                let method = request.urlRequest.httpMethod ?? "GET"
                let url = request.urlRequest.url?.absoluteString ?? "?"
                throw UnmatchedRequest(
                    description: "no stub matches \(method) \(url); rules: "
                        + (descriptions.isEmpty ? "none" : descriptions.reversed().joined(separator: ", ")))
            }
        }
    }

    /// A stub that answers every request no rule matches with what `answer` returns, or fails with what
    /// it throws.
    public init(
        _ timing: Timing = .immediate, logLimit: Int = 1_000,
        answer: @escaping @Sendable (BackendRequest) throws -> Answer
    ) {
        self.timing = timing
        self.logLimit = logLimit
        unmatched = answer
    }

    /// A stub that answers every request with `statusCode` (and `data`).
    public static func failing(statusCode: Int, data: Data = Data(), timing: Timing = .immediate)
        -> StubBackend
    {
        StubBackend(timing) { _ in Answer(statusCode: statusCode, data: data) }
    }

    /// A stub that fails every request with `error`, e.g. `URLError(.cannotConnectToHost)`.
    public static func failing(_ error: any Error, timing: Timing = .immediate) -> StubBackend {
        StubBackend(timing) { _ in throw error }
    }

    /// Answers requests that `match` with `answer`, then each of `more` in turn, repeating the last;
    /// newer rules win over older ones.
    @discardableResult
    public func on(_ match: Match, answer: Answer, _ more: Answer...) -> StubBackend {
        state.withLock { $0.rules.append(Rule(match: match, answers: [answer] + more)) }
        return self
    }

    /// Every feature: a stub makes no connection, so a realm's TLS policy has nothing to refuse and is kept
    /// in ``received`` (``BackendRequest/tlsPolicy``) for tests to check. Stubbing a TLS failure is a
    /// scripted error (`URLError(.serverCertificateUntrusted)`…).
    public var supportedTLSFeatures: TLSFeatures { .all }

    /// Every one: a stub connects nowhere.
    public var supportedHTTPVersions: Set<HTTPVersionPreference> { Set(HTTPVersionPreference.allCases) }

    /// The requests this stub received, oldest first (at most `logLimit` of the latest).
    public var received: [BackendRequest] {
        state.withLock { state in
            guard state.logged > state.log.count else { return state.log }
            let start = state.logged % state.log.count
            return Array(state.log[start...] + state.log[..<start])
        }
    }

    /// The requests received that `match`, oldest first.
    public func received(matching match: Match) -> [BackendRequest] {
        received.filter(match.matches)
    }

    /// Forgets the rules' positions in their sequences and the log; the rules stay.
    public func reset() {
        state.withLock { state in
            for index in state.rules.indices { state.rules[index].next = 0 }
            state.log = []
            state.logged = 0
        }
    }

    /// Answers the request, now or later.
    public func send(
        _ request: BackendRequest, completion: @escaping @Sendable (Result<Response, any Error>) -> Void
    ) -> BackendTask {
        let scripted = record(request)
        let answer: Result<Answer, any Error> =
            scripted.map { .success($0) } ?? Result { try unmatched(request) }
        let asked: TimeInterval? =
            switch (try? answer.get())?.delay {
            case let delay?: delay
            case nil: if case let .delayed(delay) = timing { delay } else { nil }
            }
        let start = request.collectsMetrics ? Date() : nil
        guard let asked else {
            completion(Self.respond(request, with: answer, measuredFrom: start))
            return .uncancellable
        }
        // A NaN delay would schedule a timer that never fires: it and negative delays are none.
        let delay = asked > 0 ? asked : 0
        let timeout = request.urlRequest.timeoutInterval.usableTimeout
        // The answer or the cancellation, whichever comes first, calls back; the other does nothing.
        let once = OnceCompletion(completion)
        DispatchQueue.global().asyncAfter(deadline: .now() + min(delay, timeout)) {
            guard let completion = once.take() else { return }
            completion(
                delay > timeout
                    ? .failure(URLError(.timedOut)) : Self.respond(request, with: answer, measuredFrom: start)
            )
        }
        return BackendTask {
            guard let completion = once.take() else { return }
            DispatchQueue.global().async { completion(.failure(URLError(.cancelled))) }
        }
    }

    /// Logs the request and picks the scripted answer, if a rule matches.
    func record(_ request: BackendRequest) -> Answer? {
        state.withLock { state in
            if logLimit > 0 {
                if state.log.count < logLimit {
                    state.log.append(request)
                } else {
                    state.log[state.logged % logLimit] = request
                }
                state.logged += 1
            }
            guard let index = state.rules.lastIndex(where: { $0.match.matches(request) }) else { return nil }
            let rule = state.rules[index]
            state.rules[index].next = min(rule.next + 1, rule.answers.count - 1)
            return rule.answers[rule.next]
        }
    }

    /// The answer as a response; measured from `start` when the realm collects metrics: the stub's delay
    /// is its time to the first byte and its total.
    private static func respond(
        _ request: BackendRequest, with answer: Result<Answer, any Error>, measuredFrom start: Date?
    ) -> Result<Response, any Error> {
        answer.flatMap { answer in
            if let failure = answer.failure { return .failure(failure) }
            if let upgrade = request.webSocketUpgrade {
                guard let script = answer.webSocketScript else {
                    if answer.statusCode == 101 {
                        return .failure(WebSocketError.handshakeFailed("the stub's 101 answer has no WebSocket script"))
                    }
                    return .success(
                        Response(
                            request: request.urlRequest, statusCode: answer.statusCode, headers: answer.headers,
                            data: answer.data ?? Data()))
                }
                upgrade.deposit(StubWebSocket(script))
            }
            var response = Response(
                request: request.urlRequest, statusCode: answer.statusCode, headers: answer.headers,
                data: answer.data ?? request.sampleData)
            if let start {
                var metrics = TransferMetrics(start: start)
                metrics.firstByte = Date().timeIntervalSince(start)
                metrics.total = metrics.firstByte
                metrics.bytesReceived = Int64(response.data.count)
                response.metrics = [metrics]
            }
            return .success(response)
        }
    }
}

extension NetworkBackend where Self == StubBackend {
    /// A stub that answers at once with each endpoint's sample data: `.use(.stub)`.
    public static var stub: StubBackend { StubBackend() }

    /// A stub that answers with each endpoint's sample data, at once or later: `.use(.stub(.delayed(0.2)))`.
    public static func stub(_ timing: StubBackend.Timing) -> StubBackend { StubBackend(timing) }
}
