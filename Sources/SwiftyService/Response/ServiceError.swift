import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// Indirect: each case is boxed, so that an outcome (`Result<Response, ServiceError>`) is one reference, copied
// with a retain on every step of an answer's way to its caller rather than through its type's metadata.
/// Everything that can go wrong with a request, told apart by case; every description names the method,
/// the URL and the cause.
public indirect enum ServiceError: Error, Sendable, CustomStringConvertible, LocalizedError {
    /// The request could not be built (bad URL, header, method or parameter); nothing was sent.
    case invalidRequest(InvalidRequestReason, method: HTTPMethod, url: String)
    /// The request failed on the way: connection refused or reset, DNS, TLS, a backend's own failure…
    /// `attempts` counts the times it was sent (more than 1 after retries).
    case transport(URLRequest, underlying: any Error, attempts: Int = 1)
    /// No answer within the request's timeout.
    case timedOut(URLRequest, attempts: Int = 1)
    /// Cancelled through its handle or its task.
    case cancelled(URLRequest, attempts: Int = 1)
    /// The server answered with a status the endpoint does not accept; `errorBody` is the body decoded as
    /// the endpoint's or realm's declared error type, when one is declared and it decodes.
    case unacceptableStatusCode(Response, errorBody: (any Sendable)? = nil)
    /// The body could not be decoded into what was asked for.
    case decoding(Response, underlying: any Error)

    /// Why a request could not be built.
    public enum InvalidRequestReason: Sendable, Equatable, CustomStringConvertible {
        /// Neither the endpoint nor its realm has a base URL.
        case missingBaseURL
        /// The pieces do not make a URL, or make one no request can go to.
        case malformedURL(String)
        /// The method is not an RFC 9110 token.
        case invalidMethod(String)
        /// A header name is not an RFC 9110 token.
        case invalidHeaderName(String)
        /// A header value holds CR, LF, NUL or another control character (the value is not repeated).
        case invalidHeaderValue(name: String)
        /// A parameter cannot be written in the chosen encoding; `key` is its path, e.g. `filter[since]`.
        case unencodableParameter(key: String, reason: String)
        /// An `Encodable` body failed to encode.
        case unencodableBody(String)
        /// A resource identifier that is not one usable path segment.
        case invalidIdentifier(String)
        /// The endpoint asks for two bodies (e.g. a ``RequestBody`` and form or JSON parameters).
        case conflictingBody(String)
        /// A file or multipart body that cannot be sent: an unreadable file, a CR or LF in a part's name.
        case invalidBody(String)
        /// A download would overwrite a file, and the destination does not allow replacing it.
        case downloadDestinationExists(String)
        /// The timeout or the resource timeout is not a number of seconds more than 0.
        case invalidTimeout(String)
        /// The URL's scheme is not `http` or `https`, the only ones ever sent.
        case unsupportedScheme(String)
        /// The endpoint's path has a `.` or `..` segment, which would move the request out of its base path.
        case dotSegment(path: String)
        /// The URL is longer than 65,536 characters.
        case urlTooLong(length: Int)
        /// The realm's ``TLSPolicy`` asks for what the backend cannot do; sending without it would connect
        /// to a server the policy would refuse.
        case unsupportedTLSPolicy(backend: String, missing: TLSFeatures)
        /// The realm asks for a version of HTTP the backend cannot speak
        /// (``NetworkBackend/supportedHTTPVersions``).
        case unsupportedHTTPVersion(backend: String, version: HTTPVersionPreference)
        /// The body is a stream (``RequestBody/stream(_:length:contentType:)``) and the backend streams files but
        /// cannot stream this (``URLSessionBackend``); it is refused rather than held whole in memory.
        case unsupportedBodyStream(backend: String)

        /// The cause in words.
        public var description: String {
            switch self {
            case .missingBaseURL: "no base URL is set on the endpoint or its realm"
            case let .malformedURL(reason): reason
            case let .invalidMethod(method): "'\(method)' is not a valid HTTP method token"
            case let .invalidHeaderName(name): "header name '\(name)' is not a valid token"
            case let .invalidHeaderValue(name):
                "the value of header '\(name)' contains CR, LF or another control character"
            case let .unencodableParameter(key, reason): "parameter '\(key)' cannot be encoded: \(reason)"
            case let .unencodableBody(reason): "the body cannot be encoded: \(reason)"
            case let .invalidIdentifier(reason): reason
            case let .conflictingBody(reason): reason
            case let .invalidBody(reason): reason
            case let .downloadDestinationExists(path):
                "the download destination '\(path)' exists and may not be replaced"
            case let .invalidTimeout(reason): reason
            case let .unsupportedScheme(scheme):
                "the scheme '\(scheme)' is not allowed: only http and https requests are sent"
            case let .dotSegment(path):
                "the path '\(path)' has a '.' or '..' segment, which would leave the base path; put values "
                    + "from outside in a path with \\(pathSegment: value)"
            case let .urlTooLong(length):
                "the URL is \(length) characters long; at most \(HTTPLimits.maxURLLength) are sent"
            case let .unsupportedTLSPolicy(backend, missing):
                "the realm's TLS policy needs \(missing), which \(backend) cannot do here; use a backend "
                    + "that can (CurlBackend does all of it) or drop that part of the policy"
            case let .unsupportedHTTPVersion(backend, version):
                "the realm asks for \(version), which \(backend) cannot speak; use CurlBackend or the "
                    + "automatic version"
            case let .unsupportedBodyStream(backend):
                "the body is a stream, which \(backend) cannot send as it comes; use CurlBackend, or send "
                    + "the body as Data or a file"
            }
        }
    }

    /// A case without its payload, to compare or switch on: `#expect(error.kind == .timedOut)`.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// ``ServiceError/invalidRequest(_:method:url:)``
        case invalidRequest
        /// ``ServiceError/transport(_:underlying:attempts:)``
        case transport
        /// ``ServiceError/timedOut(_:attempts:)``
        case timedOut
        /// ``ServiceError/cancelled(_:attempts:)``
        case cancelled
        /// ``ServiceError/unacceptableStatusCode(_:errorBody:)``
        case unacceptableStatusCode
        /// ``ServiceError/decoding(_:underlying:)``
        case decoding
    }

    /// Which case this is.
    public var kind: Kind {
        switch self {
        case .invalidRequest: .invalidRequest
        case .transport: .transport
        case .timedOut: .timedOut
        case .cancelled: .cancelled
        case .unacceptableStatusCode: .unacceptableStatusCode
        case .decoding: .decoding
        }
    }

    /// The response, where the server gave one.
    public var response: Response? {
        switch self {
        case let .unacceptableStatusCode(response, _), let .decoding(response, _): response
        default: nil
        }
    }

    /// The request as built, where it could be built.
    public var request: URLRequest? {
        switch self {
        case .invalidRequest: nil
        case let .transport(request, _, _), let .timedOut(request, _), let .cancelled(request, _): request
        case let .unacceptableStatusCode(response, _), let .decoding(response, _): response.request
        }
    }

    /// The error underneath, from the backend or the decoder.
    public var underlyingError: (any Error)? {
        switch self {
        case let .transport(_, error, _), let .decoding(_, error): error
        default: nil
        }
    }

    /// How many times the request was sent: 0 if it could not be built, more than 1 after retries.
    public var attempts: Int {
        switch self {
        case .invalidRequest: 0
        case let .transport(_, _, attempts), let .timedOut(_, attempts), let .cancelled(_, attempts): attempts
        case let .unacceptableStatusCode(response, _), let .decoding(response, _): response.attempts
        }
    }

    /// The decoded error body of an unacceptable status, if it is a `T`: `error.errorBody(as: APIError.self)`.
    public func errorBody<T>(as type: T.Type) -> T? {
        if case let .unacceptableStatusCode(_, body) = self { return body as? T }
        return nil
    }

    /// The method of the request.
    public var method: HTTPMethod {
        switch self {
        case let .invalidRequest(_, method, _): method
        default: HTTPMethod(rawValue: request?.httpMethod ?? "GET")
        }
    }

    /// The URL of the request, as far as it could be built.
    public var url: String {
        switch self {
        case let .invalidRequest(_, _, url): url
        default: request?.url?.absoluteString ?? "?"
        }
    }

    /// `GET https://api.example.com/v1/user/info?uid=42: timed out after 60 s`, with `(3 attempts)`
    /// after retries.
    public var description: String {
        "\(method) \(url.abbreviatedURL): \(cause)" + (attempts > 1 ? " (\(attempts) attempts)" : "")
    }

    /// The same as ``description``.
    public var errorDescription: String? { description }

    private var cause: String {
        switch self {
        case let .invalidRequest(reason, _, _):
            "invalid request, nothing was sent: \(reason)"
        case let .transport(_, error, _):
            "transport failed: \(Self.describe(error))"
        case let .timedOut(request, _):
            "timed out after \(request.timeoutInterval.secondsDescription) (setTimeout bounds each silence, "
                + "setResourceTimeout the whole request, by default \(Self.defaultDeadlineInTimeouts) timeouts)"
        case .cancelled:
            "cancelled"
        case let .unacceptableStatusCode(response, _):
            "unacceptable status \(response.statusCode) (\(HTTPURLResponse.localizedString(forStatusCode: response.statusCode)), \(response.data.count) bytes)"
        case let .decoding(response, error):
            "status \(response.statusCode), but the body could not be decoded: \(Self.describe(error))"
        }
    }

    /// `5`: how many timeouts a buffered request's default deadline is, as descriptions name it.
    private static let defaultDeadlineInTimeouts = Int(HTTPLimits.defaultResourceTimeoutFactor)

    private static func describe(_ error: any Error) -> String {
        if let error = error as? URLError {
            return "\(error.localizedDescription) (URLError \(error.errorCode))"
        }
        if let error = error as? DecodingError {
            return describe(decoding: error)
        }
        if let error = error as? LocalizedError, let description = error.errorDescription {
            return description
        }
        return String(describing: error)
    }

    private static func describe(decoding error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let path = context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(
                separator: ".")
            return path.isEmpty ? context.debugDescription : "\(path): \(context.debugDescription)"
        }
        switch error {
        case let .typeMismatch(_, context), let .valueNotFound(_, context),
            let .keyNotFound(_, context), let .dataCorrupted(context):
            return path(context)
        @unknown default:
            return "\(error)"
        }
    }
}

extension ServiceError {
    /// Turns whatever a backend or middleware reported into the case it means.
    init(_ error: any Error, request: URLRequest, attempts: Int = 1) {
        if let measured = error as? MeasuredFailure {
            self.init(measured.underlying, request: request, attempts: attempts)
            return
        }
        if let error = error as? ServiceError {
            self = error
            return
        }
        if error is CancellationError {
            self = .cancelled(request, attempts: attempts)
            return
        }
        if let passed = error as? CallDeadlinePassed {
            self = .deadlinePassed(request, after: passed.seconds)
            return
        }
        let nsError = error as NSError
        if nsError.domain == NSURLErrorDomain {
            switch nsError.code {
            case URLError.timedOut.rawValue: self = .timedOut(request, attempts: attempts)
            case URLError.cancelled.rawValue: self = .cancelled(request, attempts: attempts)
            // An adapter of a URLSession-based library passes Linux's code -1 on; its TLS failures get the
            // codes the shipped backends report.
            default: self = .transport(request, underlying: TLSFailure.classified(error), attempts: attempts)
            }
            return
        }
        self = .transport(request, underlying: error, attempts: attempts)
    }
}

/// A backend that keeps a call's deadline itself (``CallerDrivenBackend``) ended the call by it: the same
/// outcome as the exchange's own deadline.
struct CallDeadlinePassed: Error {
    let seconds: TimeInterval
}

/// A backend's failure with the metrics of the attempt that failed (when the realm collects them): the
/// pipeline keeps the metrics for the call's observers and reports the failure itself.
struct MeasuredFailure: Error {
    let underlying: any Error
    let metrics: TransferMetrics
}

/// A response body over the realm's ``RealmConfiguration/maxResponseSize`` (64 MiB unless the realm says
/// otherwise); arrives as ``ServiceError/transport(_:underlying:attempts:)``.
public struct ResponseTooLarge: Error, CustomStringConvertible {
    /// The limit, in bytes.
    public let limit: Int
    /// `the response body is larger than the 67108864-byte limit on bodies kept in memory (64 MiB by
    /// default: raise it with setMaxResponseSize, or download the body to a file)`
    public var description: String {
        "the response body is larger than the \(limit)-byte limit on bodies kept in memory "
            + "(\(HTTPLimits.defaultMaxResponseSize >> 20) MiB by default: raise it with "
            + "setMaxResponseSize, or download the body to a file)"
    }

    /// The failure for a body over `limit` bytes.
    public init(limit: Int) {
        self.limit = limit
    }
}

extension ServiceError {
    /// The attempts' metrics, where the error carries a response (an unacceptable status, a body that did
    /// not decode) and the realm collects them. A transfer that failed reports its attempts' metrics to the
    /// realm's observers instead (``RequestEvent/Kind/failed(_:metrics:)``).
    public var metrics: [TransferMetrics] {
        switch self {
        case let .unacceptableStatusCode(response, _), let .decoding(response, _): response.metrics
        default: []
        }
    }
}
