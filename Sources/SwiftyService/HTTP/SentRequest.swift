import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A request as it goes out: the builder's parts, or a `URLRequest` given whole (changed by a middleware, a
/// redirect's next hop, a request of the caller's own).
enum SentRequest: Sendable {
    case built(WireForm)
    case given(URLRequest)

    /// The request's URL, without making its `URLRequest`.
    var url: URL? {
        switch self {
        case let .built(wire): wire.url
        case let .given(request): request.url
        }
    }

    /// The request as a `URLRequest`: a built one's is made the first time it is asked for.
    var urlRequest: URLRequest {
        switch self {
        case let .built(wire): wire.urlRequest
        case let .given(request): request
        }
    }
}

/// The parts of a request a transport sends: as the builder wrote them, or read back from a `URLRequest` (a
/// request changed after the builder, a redirect's next hop).
///
/// The builder writes no `URLRequest`: on Linux, making one and setting its parts costs more than the rest of
/// the parts together, and a transport that reads the parts (CurlBackend) never needs it. It is made the first
/// time it is asked for (a middleware, URLSession, an error or a response that names it) and kept.
final class WireForm: Sendable {
    let url: URL?
    /// `url`'s text.
    let text: String
    let method: String
    let fields: [String: String]
    let body: Data?
    let timeout: TimeInterval
    let cachePolicy: URLRequest.CachePolicy
    /// The key transports group the request's connections by (`BackendRequest.hostKey(ofURL:)` of `text`).
    let host: String
    /// The `URLRequest` of these parts: the one they were read from, or made from them once asked for;
    /// under ``lock``.
    nonisolated(unsafe) private var made: URLRequest?

    private var lock: NSLock { SharedLocks.lock(for: self) }

    init(
        url: URL?, text: String, method: String, fields: [String: String], body: Data?, timeout: TimeInterval,
        cachePolicy: URLRequest.CachePolicy = .useProtocolCachePolicy, host: String
    ) {
        self.url = url
        self.text = text
        self.method = method
        self.fields = fields
        self.body = body
        self.timeout = timeout
        self.cachePolicy = cachePolicy
        self.host = host
    }

    /// The parts of `request`, read through its accessors, with the host key transports group it by.
    init(reading request: URLRequest, host: (String) -> String) {
        // Each accessor copies under the request's lock: the URL is read once.
        url = request.url
        text = url?.absoluteString ?? ""
        method = request.httpMethod ?? "GET"
        fields = request.allHTTPHeaderFields ?? [:]
        body = request.httpBody
        timeout = request.timeoutInterval
        cachePolicy = request.cachePolicy
        self.host = host(text)
        made = request
    }

    /// The parts as a `URLRequest`.
    var urlRequest: URLRequest {
        if let made = lock.withLock({ made }) { return made }
        // Made outside the lock; the first one made is kept.
        var request = URLRequest(url: url ?? .placeholder)
        // GET is URLRequest's default, and setting the method costs a normalization pass on Linux.
        if method != "GET" { request.httpMethod = method }
        request.timeoutInterval = timeout
        request.cachePolicy = cachePolicy
        if !fields.isEmpty { request.allHTTPHeaderFields = fields }
        request.httpBody = body
        return lock.withLock {
            if let made { return made }
            made = request
            return request
        }
    }
}
