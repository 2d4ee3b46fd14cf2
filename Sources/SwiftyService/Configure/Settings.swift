import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Every per-request setting, as one value of optionals: `nil` (or empty) means "not set here", and the
/// layer below decides. A realm holds one, an endpoint makes one of what it declares, and each one-off
/// override adds one on top (``SettingsStack``).
///
/// The values sit behind one reference that never changes once made: a copy — one per layer per request —
/// is one retain, however many settings there are, and reading one setting loads that field alone. A change
/// makes a new reference; changes happen while configuring, and a request's own layer is made in one go.
///
/// A new setting is a field of ``Values`` and a mutator on ``RealmConfiguration``; a simple one (an optional
/// value where the top layer wins) is read with ``SettingsStack/top(_:)`` and needs nothing more.
@dynamicMemberLookup
struct Settings: Sendable {
    struct Values: Sendable {
        var base: BaseURL?
        var headers = HeaderFields()
        var crudHeaders: [CRUDMethod: HeaderFields] = [:]
        var cachePolicy: URLRequest.CachePolicy?
        var crudCachePolicies: [CRUDMethod: URLRequest.CachePolicy] = [:]
        var crudMap: CRUDMap = [:]
        var timeout: TimeInterval?
        var resourceTimeout: LimitSetting<TimeInterval>?
        var maxResponseSize: LimitSetting<Int>?
        var maxConnectionsPerHost: Int?
        var httpVersion: HTTPVersionPreference?
        var backend: ChosenBackend?
        var callbackQueue: DispatchQueue?
        /// Secrets add up across layers.
        var redaction: Redaction?
        /// Middleware adds up across layers, lower layers outermost.
        var middleware: [any Middleware] = []
        var validStatusCodes: StatusCodes?
        var errorBody: ErrorBody?
        /// The realm's coalescing, innermost in the chain.
        var coalescer: (any Middleware)?
        var cache: HTTPCache?
        var cookieJar: CookieJar?
        /// Observers add up across layers.
        var observers: [any RequestObserver] = []
        var collectsMetrics: Bool?
        /// `.system` where a layer sets `nil`: the system's rules, whatever a layer below says.
        var tlsPolicy: TLSChoice?
        var decoder: JSONDecoder?
    }

    private final class Storage: Sendable {
        let values: Values
        /// What a stack of this layer alone decides, made with the layer when it is a realm's.
        let decisionsAlone: SettingsDecisions?

        init(_ values: Values, decisionsAlone: SettingsDecisions? = nil) {
            self.values = values
            self.decisionsAlone = decisionsAlone
        }
    }

    private var storage: Storage

    /// Shared by every layer that sets nothing: most endpoints' own.
    private static let empty = Storage(Values())

    /// Nothing set.
    init() {
        storage = Self.empty
    }

    /// These values, set in one go.
    init(_ values: Values) {
        storage = Storage(values)
    }

    /// Whether the layer sets nothing.
    var isEmpty: Bool { storage === Self.empty }

    /// This layer, with what a stack of it alone decides made now and kept: a realm's, whose every request
    /// would otherwise decide the same again.
    func keepingDecisions() -> Settings {
        var kept = self
        kept.storage = Storage(storage.values, decisionsAlone: SettingsDecisions(SettingsStack(realm: self)))
        return kept
    }

    /// What a stack of this layer alone decides, when the layer kept it (``keepingDecisions()``).
    var decisionsAlone: SettingsDecisions? { storage.decisionsAlone }

    subscript<Value>(dynamicMember keyPath: WritableKeyPath<Values, Value>) -> Value {
        @inline(__always) get { storage.values[keyPath: keyPath] }
        set {
            var values = storage.values
            values[keyPath: keyPath] = newValue
            storage = Storage(values)
        }
    }
}

/// The layers one request's settings come from, lowest first: the realm's, the endpoint's, then one-off
/// overrides in the order they were made. The precedence rule in one place: the top layer that sets a value
/// wins; headers merge name by name, middleware and secrets add up.
struct SettingsStack {
    /// The realm's settings: copied in once, so that reading a layer never copies one again.
    let realm: Settings
    /// The endpoint's own (empty where it sets nothing).
    let endpoint: Settings
    let overrides: [Settings]

    /// A realm's layer alone.
    init(realm: Settings) {
        self.realm = realm
        endpoint = Settings()
        overrides = []
    }

    init(realm: RealmConfiguration, endpoint: Settings = Settings(), overrides: [Settings]) {
        self.realm = realm.settings
        self.endpoint = endpoint
        self.overrides = overrides
    }

    /// What this stack decides for every request built on it: for a realm's layer alone, what the realm made
    /// when its configuration last changed.
    var decisions: SettingsDecisions {
        if endpoint.isEmpty, overrides.isEmpty, let kept = realm.decisionsAlone { return kept }
        return SettingsDecisions(self)
    }

    /// The value of the topmost layer that sets it: `settings.top { $0.timeout }`.
    @inline(__always)
    func top<T>(_ setting: (Settings) -> T?) -> T? {
        for layer in overrides.reversed() {
            if let value = setting(layer) { return value }
        }
        return setting(endpoint) ?? setting(realm)
    }

    /// Calls `body` with each layer, lowest first (without making an array of them: this runs per request).
    @inline(__always)
    private func forEachLayer(_ body: (Settings) -> Void) {
        body(realm)
        body(endpoint)
        for layer in overrides { body(layer) }
    }

    /// The CRUD map: the default one with every layer's changes.
    var crudMap: CRUDMap {
        var map = ServiceRealm.defaultCRUDMap
        forEachLayer { layer in if !layer.crudMap.isEmpty { map.merge(layer.crudMap) { $1 } } }
        return map
    }

    /// The headers of a request of `crudMethods`: each layer's global headers, then its per-CRUD ones.
    func headers(for crudMethods: [CRUDMethod]) -> HeaderFields {
        var headers = HeaderFields()
        forEachLayer { layer in
            headers.merge(layer.headers)
            guard !layer.crudHeaders.isEmpty else { return }
            for crud in crudMethods { if let specific = layer.crudHeaders[crud] { headers.merge(specific) } }
        }
        return headers
    }

    /// The cache policy of a request of `crudMethods`: the topmost layer's per-CRUD or global one.
    func cachePolicy(for crudMethods: [CRUDMethod]) -> URLRequest.CachePolicy {
        var policy = URLRequest.CachePolicy.useProtocolCachePolicy
        forEachLayer { layer in
            if let set = layer.cachePolicy { policy = set }
            guard !layer.crudCachePolicies.isEmpty else { return }
            for crud in crudMethods.reversed() {
                if let set = layer.crudCachePolicies[crud] {
                    policy = set
                    return
                }
            }
        }
        return policy
    }

    /// Whether any layer sets headers or a cache policy per CRUD method.
    var hasPerCRUDSettings: Bool {
        var found = false
        forEachLayer { layer in
            if !layer.crudHeaders.isEmpty || !layer.crudCachePolicies.isEmpty { found = true }
        }
        return found
    }

    /// Every layer's middleware, the realm's outermost.
    var middleware: [any Middleware] { appended { $0.middleware } }

    /// Every layer's observers, the realm's first.
    var observers: [any RequestObserver] { appended { $0.observers } }

    /// Every layer's `field`, lowest layer first; a single layer's array as it is.
    @inline(__always)
    private func appended<Element>(_ field: (Settings) -> [Element]) -> [Element] {
        var all: [Element] = []
        forEachLayer { layer in
            let values = field(layer)
            guard !values.isEmpty else { return }
            if all.isEmpty { all = values } else { all += values }
        }
        return all
    }

    /// What every layer declares secret.
    var redaction: Redaction {
        var all = Redaction.default
        forEachLayer { layer in if let declared = layer.redaction { all = all.union(declared) } }
        return all
    }
}
