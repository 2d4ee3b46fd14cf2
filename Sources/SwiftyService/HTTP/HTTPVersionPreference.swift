/// Which version of HTTP a realm's requests speak (``RealmConfiguration/setHTTPVersion(_:)``).
public enum HTTPVersionPreference: Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// HTTP/2 over TLS where the server offers it (ALPN), HTTP/1.1 otherwise: the default.
    case automatic
    /// HTTP/1.1 only, even where a server offers HTTP/2.
    case http1_1
    /// HTTP/2 from the first byte, with no negotiation: cleartext HTTP/2 (`h2c`) on `http:` URLs (RFC 9113,
    /// section 3.3), for internal services that speak it; over TLS, a server that does not offer HTTP/2 fails.
    case http2PriorKnowledge

    /// `automatic`, `HTTP/1.1 only`, `HTTP/2 with prior knowledge (h2c)`.
    public var description: String {
        switch self {
        case .automatic: "automatic"
        case .http1_1: "HTTP/1.1 only"
        case .http2PriorKnowledge: "HTTP/2 with prior knowledge (h2c)"
        }
    }
}
