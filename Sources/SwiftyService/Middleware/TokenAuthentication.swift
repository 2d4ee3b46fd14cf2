import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An access token and, when known, when it expires.
public struct AccessToken: Sendable, Equatable {
    /// The token itself.
    public var value: String
    /// When it stops being accepted, if known; a token this close to expiry is refreshed before use.
    public var expiresAt: Date?

    /// A token, expiring at `expiresAt` if given.
    public init(_ value: String, expiresAt: Date? = nil) {
        self.value = value
        self.expiresAt = expiresAt
    }
}

/// The refresh of an access token failed; every request that waited for it fails with this.
public struct TokenRefreshFailed: Error, CustomStringConvertible {
    /// What the refresh threw.
    public let underlying: any Error
    /// `refreshing the access token failed: …`
    public var description: String { "refreshing the access token failed: \(underlying)" }
}

/// Too many refreshes in a short time: the server keeps refusing fresh tokens, so SwiftyService stops
/// instead of looping.
public struct TokenRefreshLimitReached: Error, CustomStringConvertible {
    /// The refreshes allowed per window.
    public let limit: Int
    /// The window in seconds.
    public let window: TimeInterval
    /// `the access token was refreshed 5 times in 30 s; …`
    public var description: String {
        "the access token was refreshed \(limit) times in \(window.secondsDescription) and is still refused; not refreshing again"
    }
}

/// Puts an access token on every request and refreshes it — once for everyone waiting — when it has
/// expired or the server answers 401.
///
/// ```swift
/// let auth = TokenAuthentication { try await authClient.refreshToken() }
/// ServiceRealm.get("users").addMiddleware(auth)
/// ```
/// Proactive: a token known to expire within `leeway` seconds is refreshed before it is sent. Reactive:
/// a 401 to a request that carried the current token triggers one refresh; concurrent 401s share it, and
/// each of their requests is sent once more with the new token (a second 401 is returned as is). A failed
/// refresh fails every waiting request with ``TokenRefreshFailed``; more than `maxRefreshes` refreshes
/// within `window` seconds fail with ``TokenRefreshLimitReached`` instead of looping.
public final class TokenAuthentication: Middleware {
    private struct State {
        var token: AccessToken?
        var refreshing: Task<AccessToken, any Error>?
        var refreshes: [Date] = []
    }

    private let state: Locked<State>
    private let refresh: @Sendable () async throws -> AccessToken
    private let header: String
    private let scheme: String?
    private let leeway: TimeInterval
    private let maxRefreshes: Int
    private let window: TimeInterval
    private let now: @Sendable () -> Date

    /// A middleware that gets tokens from `refresh`, starting with `initial` if given.
    /// - Parameters:
    ///   - initial: the token to start with, if one is known (saved from an earlier run, say).
    ///   - header: the header that carries the token (`Authorization`).
    ///   - scheme: written before the token (`Bearer`); `nil` for the bare token.
    ///   - leeway: how long before expiry a token is refreshed anyway.
    ///   - maxRefreshes: refreshes allowed within `window` seconds.
    ///   - window: the span, in seconds, that `maxRefreshes` counts over.
    ///   - now: the current time; tests replace it.
    ///   - refresh: gets a new token; called once for all requests waiting on it.
    public init(
        initial: AccessToken? = nil, header: String = "Authorization", scheme: String? = "Bearer",
        leeway: TimeInterval = 30, maxRefreshes: Int = 5, per window: TimeInterval = 30,
        now: @escaping @Sendable () -> Date = { Date() },
        refresh: @escaping @Sendable () async throws -> AccessToken
    ) {
        state = .make(State(token: initial))
        self.refresh = refresh
        self.header = header
        self.scheme = scheme
        self.leeway = leeway
        self.maxRefreshes = maxRefreshes
        self.window = window
        self.now = now
    }

    /// The token requests carry now, if there is one.
    public var currentToken: AccessToken? { state.withLock { $0.token } }

    /// Adds the token, sends, and on a 401 refreshes once and sends again.
    public func intercept(_ request: URLRequest, context: RequestContext, next: MiddlewareNext) async throws
        -> Response
    {
        let token = try await usableToken(context)
        let response = try await next(authorized(request, with: token))
        guard response.statusCode == 401 else { return response }
        let renewed = try await renewedToken(replacing: token, context)
        return try await next(authorized(request, with: renewed))
    }

    private func authorized(_ request: URLRequest, with token: AccessToken) -> URLRequest {
        var request = request
        request.setValue(scheme.map { "\($0) \(token.value)" } ?? token.value, forHTTPHeaderField: header)
        return request
    }

    private func isFresh(_ token: AccessToken) -> Bool {
        token.expiresAt.map { $0.timeIntervalSince(now()) > leeway } ?? true
    }

    /// The current token if it is fresh, otherwise a refreshed one.
    private func usableToken(_ context: RequestContext) async throws -> AccessToken {
        if let token = state.withLock({ $0.token }), isFresh(token) { return token }
        return try await renewedToken(replacing: nil, context)
    }

    /// A token newer than `rejected`: the one another request already got, or one from a refresh that
    /// this call starts or joins.
    /// The request that starts a refresh tells its observers when it starts and ends.
    private func renewedToken(replacing rejected: AccessToken?, _ context: RequestContext) async throws
        -> AccessToken
    {
        let (refreshing, started) = try state.withLock { state -> (Task<AccessToken, any Error>, Bool) in
            if let current = state.token, current != rejected, isFresh(current) {
                return (Task { current }, false)
            }
            if let refreshing = state.refreshing { return (refreshing, false) }
            let moment = now()
            state.refreshes.removeAll { moment.timeIntervalSince($0) >= window }
            guard state.refreshes.count < maxRefreshes else {
                throw TokenRefreshLimitReached(limit: maxRefreshes, window: window)
            }
            state.refreshes.append(moment)
            let refresh = refresh
            let task = Task { try await refresh() }
            state.refreshing = task
            return (task, true)
        }
        if started { context.events?.emit(.tokenRefreshStarted) }
        do {
            let token = try await refreshing.value
            if started { context.events?.emit(.tokenRefreshEnded(succeeded: true)) }
            state.withLock { state in
                if state.refreshing == refreshing {
                    state.token = token
                    state.refreshing = nil
                }
            }
            return token
        } catch {
            if started { context.events?.emit(.tokenRefreshEnded(succeeded: false)) }
            state.withLock { state in
                if state.refreshing == refreshing { state.refreshing = nil }
            }
            throw error as? TokenRefreshFailed ?? TokenRefreshFailed(underlying: error)
        }
    }
}
