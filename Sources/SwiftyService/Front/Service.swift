import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A REST resource at a base URL, with create, retrieve, update and destroy calls (the iService style).
///
/// ```swift
/// let users = Service(baseURL: URL(string: "https://jsonplaceholder.typicode.com/users")!)
/// ServiceRealm.get("jsonplaceholder").register(users)
/// let user = try await users.retrieve("1").value(as: User.self)   // decoded with the realm's decoder
/// ```
/// Each call's HTTP method comes from its realm's CRUD map; the realm's headers, cache policy, timeout
/// and backend apply. An unregistered service uses ``ServiceRealm/default``.
public final class Service: Sendable, CustomStringConvertible {
    /// The same type as the top-level ``SwiftyService/CRUDMethod``.
    public typealias CRUDMethod = SwiftyService.CRUDMethod
    /// The same type as the top-level ``SwiftyService/HTTPMethod``.
    public typealias HTTPMethod = SwiftyService.HTTPMethod

    /// The resource's URL: the collection, e.g. `…/users`.
    public let baseURL: URL
    private let base: BaseURL
    /// Shared with every override view of this service: registering either registers both.
    private let registration: Locked<ServiceRealm?>
    /// The one-off settings of an override view, oldest first; none for the service itself.
    private let oneOff: [Settings]

    /// A resource at `baseURL`.
    public init(baseURL: URL) {
        self.baseURL = baseURL
        base = BaseURL(baseURL)
        registration = .make(nil)
        oneOff = []
    }

    private init(viewing service: Service, adding layer: Settings) {
        baseURL = service.baseURL
        base = service.base
        registration = service.registration
        oneOff = service.oneOff + [layer]
    }

    /// The realm the service is registered in, or ``ServiceRealm/default``.
    public var realm: ServiceRealm { registration.value ?? .default }

    /// `Service(https://…/users)`
    public var description: String { "Service(\(baseURL.absoluteString))" }

    /// Uses `realm`'s configuration from now on.
    public func registerForRealm(_ realm: ServiceRealm) {
        registration.withLock { $0 = realm }
    }

    /// A view of this service whose calls carry one-off settings on top of the realm's (and of this view's
    /// own, when it is an override already).
    ///
    /// ```swift
    /// users.override { configuration in
    ///     configuration.addHeader("Content-Type", withValue: "application/json")
    /// }.create(body)
    /// users.retrieve("1")   // no override here
    /// ```
    /// The configuration starts empty; what is set there wins over the realm.
    public func override(_ configure: (inout RealmConfiguration) -> Void) -> ServiceOverride {
        var configuration = RealmConfiguration()
        configure(&configuration)
        return Service(viewing: self, adding: configuration.settings)
    }

    /// Creates a resource from raw bytes: `POST base` (as mapped), sent as `application/octet-stream`
    /// unless a Content-Type is set.
    public func create(_ body: Data) -> ServicePromise {
        perform(.create, body: .data(body))
    }

    /// Creates a resource from a value encoded as JSON: `POST base` (as mapped). Without an encoder,
    /// keys are sorted so the same value always makes the same bytes.
    public func create<Body: Encodable>(_ body: Body, encoder: JSONEncoder? = nil) -> ServicePromise {
        perform(.create, body: .json(body, encoder: encoder))
    }

    /// Creates a resource from any ``RequestBody``: a file (streamed), a multipart form, bytes or JSON.
    public func create(_ body: RequestBody) -> ServicePromise {
        perform(.create, body: body)
    }

    /// Retrieves the collection: `GET base` (as mapped), with optional query parameters.
    public func retrieve(query: [String: Any]? = nil) -> ServicePromise {
        perform(.retrieve, query: query)
    }

    /// Retrieves one resource: `GET base/id` (as mapped), with optional query parameters.
    public func retrieve(_ id: String, query: [String: Any]? = nil) -> ServicePromise {
        perform(.retrieve, id: id, query: query)
    }

    /// Replaces a resource with raw bytes: `PUT base/id` (as mapped).
    public func update(_ id: String, _ body: Data) -> ServicePromise {
        perform(.update, id: id, body: .data(body))
    }

    /// Replaces a resource with a value encoded as JSON: `PUT base/id` (as mapped).
    public func update<Body: Encodable>(_ id: String, _ body: Body, encoder: JSONEncoder? = nil)
        -> ServicePromise
    {
        perform(.update, id: id, body: .json(body, encoder: encoder))
    }

    /// Replaces a resource with any ``RequestBody``: a file (streamed), a multipart form, bytes or JSON.
    public func update(_ id: String, _ body: RequestBody) -> ServicePromise {
        perform(.update, id: id, body: body)
    }

    /// Deletes a resource: `DELETE base/id` (as mapped).
    public func destroy(_ id: String) -> ServicePromise {
        perform(.destroy, id: id)
    }

    /// Retrieves the collection, or the resource `id`, as a stream (`GET`, as mapped): the head once it has
    /// arrived and its status was accepted, then the body as it arrives — for exports and feeds too large
    /// to hold. See ``SwiftyServiceProtocol/stream()``.
    /// - Throws: ``ServiceError`` only.
    public func stream(_ id: String? = nil, query: [String: Any]? = nil) async throws -> ResponseStream {
        try await prepare(.retrieve, id: id, query: query, configuration: realm.configuration).openStream()
    }

    func perform(
        _ crud: CRUDMethod, id: String? = nil, query: [String: Any]? = nil, body: RequestBody? = nil
    ) -> ServicePromise {
        let configuration = realm.configuration
        do {
            return ServicePromise(
                try prepare(crud, id: id, query: query, body: body, configuration: configuration))
        } catch {
            let queue =
                oneOff.last(where: { $0.callbackQueue != nil })?.callbackQueue ?? configuration.callbackQueue
            return ServicePromise(failedWith: error, callbackQueue: queue)
        }
    }

    private func prepare(
        _ crud: CRUDMethod, id: String?, query: [String: Any]?, body: RequestBody? = nil,
        configuration: RealmConfiguration
    ) throws(ServiceError) -> PreparedRequest {
        var draft = RequestDraft(verb: .crud(crud), parameters: query, encoding: .query)
        var layer = Settings.Values()
        layer.base = base
        draft.layer = Settings(layer)
        draft.body = body
        if let id {
            if let segment = PathEncoding.segment(id) {
                draft.path = segment
                draft.pathIsEncoded = true
            } else {
                draft.pathProblem = .invalidIdentifier(
                    id.isEmpty
                        ? "the resource identifier is empty"
                        : "the resource identifier '\(id)' cannot be one path segment: servers read it as a step up or in place"
                )
            }
        }
        return try RequestBuilder.prepare(draft, realm: configuration, overrides: oneOff)
    }
}

/// A ``Service`` with one-off settings, made by ``Service/override(_:)``: a view of the same resource
/// and registration, whose calls carry the settings (the service's own calls do not).
public typealias ServiceOverride = Service

extension ServiceRealm {
    /// Registers `service` in this realm: its calls use this realm's configuration from now on.
    @discardableResult
    public func register(_ service: Service) -> ServiceRealm {
        service.registerForRealm(self)
        return self
    }

    /// Registers `service` in the realm at `key`, creating the realm on first use.
    public static func register(_ service: Service, forRealmAtKey key: String) {
        get(key).register(service)
    }
}
