import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The cache tests' own server, Tests/Servers/cache_server.py: each answer is what its URL says.
enum CacheServer {
    static func url() throws -> URL {
        guard let value = ProcessInfo.processInfo.environment["CACHE_SERVER_URL"],
            let url = URL(string: value)
        else {
            throw SetupError(
                description: "CACHE_SERVER_URL is not set: run the tests with scripts/test, which starts it")
        }
        return url
    }

    /// The backends that talk to real servers and are shipped.
    static let backends: [ConformingBackend] = [.urlSession, .curl]
}

/// One scripted resource of the cache server, on a realm with a cache and a spy that sees what reaches
/// the network.
struct ScriptedResource {
    let realm: ServiceRealm
    let spy: SpyBackend
    let clock: ManualClock
    let path = "script/\(UUID().uuidString)"
    var parameters: [String: any Sendable]

    /// `headers` as `Name: value`, with `@now±N` for dates the server makes; `options` are the script's
    /// other parameters (see cache_server.py).
    init(
        _ kind: ConformingBackend, headers: [String], options: [String: String] = [:],
        cache: HTTPCache? = nil, clock: ManualClock = ManualClock(startingAt: Date())
    ) throws {
        spy = SpyBackend(try kind.make())
        self.clock = clock
        let cache = try cache ?? HTTPCache(now: { clock.now })
        realm = uniqueRealm("cache").setBaseURL(try CacheServer.url()).use(spy).useCache(cache)
        var parameters: [String: any Sendable] = ["h": headers]
        for (name, value) in options { parameters[name] = value }
        self.parameters = parameters
    }

    /// A GET of the resource, any status accepted.
    func get(_ headers: HTTPHeaderDictionary? = nil) async throws -> Response {
        try await TestEndpoint(realm, path, parameters: parameters, headers: headers, validStatusCodes: .all)
            .request()
    }

    /// How many requests reached the network.
    var sent: Int { spy.requests.count }
}
