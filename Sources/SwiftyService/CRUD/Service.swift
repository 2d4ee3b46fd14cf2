import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A REST resource at a base URL, with create, retrieve, update and destroy calls (the iService style).
///
/// ```swift
/// let users = Service(baseURL: URL(string: "https://jsonplaceholder.typicode.com/users")!)
/// ServiceRealm.get("jsonplaceholder").register(users)
/// let user = try await users.retrieve("1").value(as: User.self)
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
    private let registration = Locked<ServiceRealm?>.make(nil)

    /// A resource at `baseURL`.
    public init(baseURL: URL) {
        self.baseURL = baseURL
        base = BaseURL(baseURL)
    }

    /// The realm the service is registered in, or ``ServiceRealm/default``.
    public var realm: ServiceRealm { registration.value ?? .default }

    /// `Service(https://…/users)`
    public var description: String { "Service(\(baseURL.absoluteString))" }

    /// Uses `realm`'s configuration from now on.
    public func registerForRealm(_ realm: ServiceRealm) {
        registration.withLock { $0 = realm }
    }

    /// A view of this service whose calls carry one-off settings on top of the realm's.
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
        return ServiceOverride(service: self, configuration: configuration)
    }

    /// Creates a resource from raw bytes: `POST base` (as mapped), sent as `application/octet-stream`
    /// unless a Content-Type is set.
    public func create(_ body: Data) -> ServicePromise {
        perform(.create, body: .data(body), override: nil)
    }

    /// Creates a resource from a value encoded as JSON: `POST base` (as mapped). Without an encoder,
    /// keys are sorted so the same value always makes the same bytes.
    public func create<Body: Encodable>(_ body: Body, encoder: JSONEncoder? = nil) -> ServicePromise {
        perform(.create, body: .json(body, encoder: encoder), override: nil)
    }

    /// Creates a resource from any ``RequestBody``: a file (streamed), a multipart form, bytes or JSON.
    public func create(_ body: RequestBody) -> ServicePromise {
        perform(.create, body: body, override: nil)
    }

    /// Retrieves the collection: `GET base` (as mapped), with optional query parameters.
    public func retrieve(query: [String: Any]? = nil) -> ServicePromise {
        perform(.retrieve, query: query, override: nil)
    }

    /// Retrieves one resource: `GET base/id` (as mapped), with optional query parameters.
    public func retrieve(_ id: String, query: [String: Any]? = nil) -> ServicePromise {
        perform(.retrieve, id: id, query: query, override: nil)
    }

    /// Replaces a resource with raw bytes: `PUT base/id` (as mapped).
    public func update(_ id: String, _ body: Data) -> ServicePromise {
        perform(.update, id: id, body: .data(body), override: nil)
    }

    /// Replaces a resource with a value encoded as JSON: `PUT base/id` (as mapped).
    public func update<Body: Encodable>(_ id: String, _ body: Body, encoder: JSONEncoder? = nil)
        -> ServicePromise
    {
        perform(.update, id: id, body: .json(body, encoder: encoder), override: nil)
    }

    /// Replaces a resource with any ``RequestBody``: a file (streamed), a multipart form, bytes or JSON.
    public func update(_ id: String, _ body: RequestBody) -> ServicePromise {
        perform(.update, id: id, body: body, override: nil)
    }

    /// Deletes a resource: `DELETE base/id` (as mapped).
    public func destroy(_ id: String) -> ServicePromise {
        perform(.destroy, id: id, override: nil)
    }

    func perform(
        _ crud: CRUDMethod, id: String? = nil, query: [String: Any]? = nil, body: RequestBody? = nil,
        override: RealmConfiguration?
    ) -> ServicePromise {
        let configuration = realm.configuration
        var draft = RequestDraft(verb: .crud(crud), base: base)
        draft.parameters = query
        draft.encoding = .query
        draft.body = body
        if let id {
            if let segment = PathEncoding.segment(id) {
                draft.path = segment
                draft.pathIsEncoded = true
            } else {
                draft.pathProblem = .invalidIdentifier(
                    id.isEmpty
                        ? "the resource identifier is empty"
                        : "the resource identifier '\(id)' cannot be one path segment: servers read it as a step up or in place")
            }
        }
        let queue = override?.callbackQueue ?? configuration.callbackQueue
        do {
            let prepared = try RequestBuilder.prepare(draft, realm: configuration, override: override)
            return ServicePromise(prepared)
        } catch {
            return ServicePromise(failedWith: error as! ServiceError, callbackQueue: queue)
        }
    }
}

/// A ``Service`` with one-off settings, made by ``Service/override(_:)``: its calls carry them, the
/// service's own calls do not.
public struct ServiceOverride: Sendable {
    /// The service underneath.
    public let service: Service
    /// The one-off settings.
    public let configuration: RealmConfiguration

    /// ``Service/create(_:)-(Data)`` with the one-off settings.
    public func create(_ body: Data) -> ServicePromise {
        service.perform(.create, body: .data(body), override: configuration)
    }

    /// ``Service/create(_:encoder:)`` with the one-off settings.
    public func create<Body: Encodable>(_ body: Body, encoder: JSONEncoder? = nil) -> ServicePromise {
        service.perform(.create, body: .json(body, encoder: encoder), override: configuration)
    }

    /// ``Service/create(_:)-(RequestBody)`` with the one-off settings.
    public func create(_ body: RequestBody) -> ServicePromise {
        service.perform(.create, body: body, override: configuration)
    }

    /// ``Service/retrieve(query:)`` with the one-off settings.
    public func retrieve(query: [String: Any]? = nil) -> ServicePromise {
        service.perform(.retrieve, query: query, override: configuration)
    }

    /// ``Service/retrieve(_:query:)`` with the one-off settings.
    public func retrieve(_ id: String, query: [String: Any]? = nil) -> ServicePromise {
        service.perform(.retrieve, id: id, query: query, override: configuration)
    }

    /// ``Service/update(_:_:)-(String,Data)`` with the one-off settings.
    public func update(_ id: String, _ body: Data) -> ServicePromise {
        service.perform(.update, id: id, body: .data(body), override: configuration)
    }

    /// ``Service/update(_:_:encoder:)`` with the one-off settings.
    public func update<Body: Encodable>(_ id: String, _ body: Body, encoder: JSONEncoder? = nil)
        -> ServicePromise
    {
        service.perform(.update, id: id, body: .json(body, encoder: encoder), override: configuration)
    }

    /// ``Service/update(_:_:)-(String,RequestBody)`` with the one-off settings.
    public func update(_ id: String, _ body: RequestBody) -> ServicePromise {
        service.perform(.update, id: id, body: body, override: configuration)
    }

    /// ``Service/destroy(_:)`` with the one-off settings.
    public func destroy(_ id: String) -> ServicePromise {
        service.perform(.destroy, id: id, override: configuration)
    }

    /// More one-off settings, on top of these.
    public func override(_ configure: (inout RealmConfiguration) -> Void) -> ServiceOverride {
        var configuration = configuration
        configure(&configuration)
        return ServiceOverride(service: service, configuration: configuration)
    }
}

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
