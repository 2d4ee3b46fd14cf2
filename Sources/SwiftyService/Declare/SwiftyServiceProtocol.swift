import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An API endpoint, usually one case of a module's enum: where it lives, how it is called, what it sends.
///
/// Only ``path`` and ``method`` are required; everything else has a default.
///
/// ```swift
/// enum UserService: SwiftyServiceProtocol {
///     case info(uid: Int64)
///     var realm: ServiceRealm { .get("users") }
///     var path: String { "user/info" }
///     var method: HTTPMethod { .get }
///     var parameters: [String: Any]? {
///         switch self { case let .info(uid): ["uid": uid] }
///     }
/// }
///
/// let response = try await UserService.info(uid: 42).request()
/// ```
///
/// A case that answers with a model gets a typed view (``TypedEndpoint``), declared once beside the enum:
/// `static func user(uid: Int64) -> TypedEndpoint<User> { info(uid: uid).returning(User.self) }`.
public protocol SwiftyServiceProtocol: Sendable {
    /// What ``request(completion:)`` takes. Bind it to a legacy library's own callback shape and supply
    /// ``deliver(_:to:)`` to keep call sites unchanged while the transport moves to SwiftyService.
    associatedtype SwiftyServiceCallBackType: Sendable = @Sendable (Result<Response, ServiceError>) -> Void

    /// The realm that supplies base URL, headers, policies and backend; ``ServiceRealm/default`` unless set.
    var realm: ServiceRealm { get }
    /// The base URL the path is appended to; the realm's unless set.
    var baseURL: URL? { get }
    /// The path after the base URL, unencoded: `"user/info"`. Characters a path cannot hold are
    /// percent-encoded; `/` separates segments.
    var path: String { get }
    /// The HTTP method.
    var method: HTTPMethod { get }
    /// Values to send: strings, numbers, bools, arrays, dictionaries, `NSNull` and optionals.
    var parameters: [String: Any]? { get }
    /// Where and how ``parameters`` are written; ``ParameterEncoding/automatic`` unless set.
    var parameterEncoding: ParameterEncoding { get }
    /// A body of its own (raw data or an `Encodable` value); ``parameters`` then go into the query.
    var body: RequestBody? { get }
    /// Headers of this endpoint; they win over the realm's.
    var headers: HTTPHeaderDictionary? { get }
    /// What ``StubBackend`` answers for this endpoint; empty unless set.
    var sampleData: Data { get }
    /// The statuses that count as success; others fail with
    /// ``ServiceError/unacceptableStatusCode(_:errorBody:)``.
    var validStatusCodes: StatusCodes { get }
    /// Middleware of this endpoint, inside the realm's: outermost first.
    var middleware: [any Middleware] { get }
    /// How bodies of unacceptable statuses are decoded; the realm's unless set.
    var errorBody: ErrorBody? { get }
    /// Where to write the response body instead of memory; `nil` (the default) keeps it in `data`.
    var download: DownloadDestination? { get }
    /// The decoder of this endpoint's typed responses; the realm's (``ServiceRealm/setDecoder(_:)``) unless set.
    var decoder: JSONDecoder? { get }

    /// Hands a result to a callback of this module's own shape.
    static func deliver(_ result: Result<Response, ServiceError>, to callback: SwiftyServiceCallBackType)
    /// The one-off settings this endpoint carries: `nil`, unless it is an ``OverriddenEndpoint``. Not for
    /// your endpoints to implement. (A requirement rather than a cast, which cost every request a
    /// conformance lookup.)
    @_documentation(visibility: internal) var _oneOffSettings: _OneOffSettings? { get }
}

extension SwiftyServiceProtocol {
    /// None: an endpoint carries one-off settings only as an ``OverriddenEndpoint``.
    @_documentation(visibility: internal) public var _oneOffSettings: _OneOffSettings? { nil }
}

extension SwiftyServiceProtocol {
    /// ``ServiceRealm/default``.
    public var realm: ServiceRealm { .default }
    /// The realm's base URL.
    public var baseURL: URL? { realm.baseURL }
    /// No parameters.
    public var parameters: [String: Any]? { nil }
    /// Query string for GET, HEAD and DELETE, JSON body otherwise.
    public var parameterEncoding: ParameterEncoding { .automatic }
    /// No body of its own.
    public var body: RequestBody? { nil }
    /// No headers of its own.
    public var headers: HTTPHeaderDictionary? { nil }
    /// Empty.
    public var sampleData: Data { Data() }
    /// The realm's: `200..<300` unless the realm sets others.
    public var validStatusCodes: StatusCodes { .realmDefault }
    /// None.
    public var middleware: [any Middleware] { [] }
    /// The realm's.
    public var errorBody: ErrorBody? { nil }
    /// None: the body stays in memory.
    public var download: DownloadDestination? { nil }
    /// The realm's.
    public var decoder: JSONDecoder? { nil }
}

extension SwiftyServiceProtocol
where SwiftyServiceCallBackType == @Sendable (Result<Response, ServiceError>) -> Void {
    /// Calls the callback with the result.
    public static func deliver(
        _ result: Result<Response, ServiceError>, to callback: SwiftyServiceCallBackType
    ) {
        callback(result)
    }
}

extension BackendRequest {
    /// The endpoint the request was built from, if it came from an endpoint enum.
    public var endpoint: (any SwiftyServiceProtocol)? { builtFrom as? any SwiftyServiceProtocol }

    /// Creates a backend request; SwiftyService makes these, tests of a backend may too.
    public init(
        urlRequest: URLRequest, endpoint: (any SwiftyServiceProtocol)? = nil, crudMethod: CRUDMethod? = nil,
        sampleData: Data = Data(), redaction: Redaction = .default
    ) {
        self.init(
            sent: .given(urlRequest), builtFrom: endpoint, crudMethod: crudMethod, sampleData: sampleData,
            redaction: redaction)
    }
}

extension RequestContext {
    /// The endpoint the request was built from, if it came from an endpoint enum.
    public var endpoint: (any SwiftyServiceProtocol)? { builtFrom as? any SwiftyServiceProtocol }
}
