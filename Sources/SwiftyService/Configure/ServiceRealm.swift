import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A named, shared, thread-safe container of request configuration: one per module or host.
///
/// ```swift
/// ServiceRealm.get("users")
///     .setBaseURL(URL(string: "https://api.example.com/v1")!)
///     .addHeaders(["Authorization": "Token …"])
///     .use(URLSessionBackend())
/// ```
///
/// Every configuration call returns the realm so calls chain. A request copies the realm's
/// ``configuration`` when it is built, so changing a realm never affects a request already made.
public final class ServiceRealm: Sendable, CustomStringConvertible {
    /// The key the realm is registered under.
    public let key: String
    private let state: Locked<RealmConfiguration>

    private static let registry = Locked<[String: ServiceRealm]>.make([:])

    /// The key of ``default``.
    public static let defaultKey = "default"

    /// `[.create: .post, .retrieve: .get, .update: .put, .destroy: .delete]`
    public static let defaultCRUDMap: CRUDMap = [
        .create: .post, .retrieve: .get, .update: .put, .destroy: .delete,
    ]

    private init(key: String) {
        self.key = key
        state = .make(RealmConfiguration().keepingDecisions())
    }

    /// The realm registered under `key`, created on first use; the same instance for the same key.
    public static func get(_ key: String) -> ServiceRealm {
        registry.withLock { realms in
            if let realm = realms[key] { return realm }
            let realm = ServiceRealm(key: key)
            realms[key] = realm
            return realm
        }
    }

    /// The realm an endpoint, or an unregistered ``Service``, uses when it names none.
    public static var `default`: ServiceRealm { ServiceRealm.get(defaultKey) }

    /// A copy of the realm's current configuration.
    public var configuration: RealmConfiguration { state.value }

    /// The base URL endpoint paths are appended to.
    public var baseURL: URL? { configuration.baseURL }

    /// The backend that sends this realm's requests; ``DefaultBackend/shared`` unless one is set.
    public var backend: any NetworkBackend { configuration.backend }

    /// The request timeout in seconds (60 unless set).
    public var timeout: TimeInterval { configuration.timeout }

    /// `ServiceRealm("users")`
    public var description: String { "ServiceRealm(\"\(key)\")" }

    /// Changes the configuration in one step, so that readers never see half of a change.
    @discardableResult
    public func configure(_ change: (inout RealmConfiguration) -> Void) -> ServiceRealm {
        state.withLock { configuration in
            change(&configuration)
            // Made here, once per change, rather than for every request built on the realm's settings.
            configuration = configuration.keepingDecisions()
        }
        return self
    }

    /// Removes every setting: headers, base URL, policies, map, timeout and backend.
    @discardableResult
    public func reset() -> ServiceRealm {
        configure { $0 = RealmConfiguration() }
    }
}
