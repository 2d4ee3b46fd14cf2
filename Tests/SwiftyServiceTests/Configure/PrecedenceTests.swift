import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Realm global → realm per-CRUD → endpoint → one-off override, for headers, cache policy and timeout.
@Suite struct PrecedenceTests {
    let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!)

    func header(_ name: String, _ endpoint: TestEndpoint) throws -> String? {
        try endpoint.urlRequest().value(forHTTPHeaderField: name)
    }

    @Test func eachLayerWinsOverTheOneBelowWithNamesComparedCaseInsensitively() throws {
        realm.addHeader("X-Layer", withValue: "realm")
        #expect(try header("X-Layer", TestEndpoint(realm, "x")) == "realm")

        realm.addHeader("x-layer", withValue: "retrieve", specificForCRUDMethod: .retrieve)
        #expect(try header("X-Layer", TestEndpoint(realm, "x")) == "retrieve")
        #expect(try header("X-Layer", TestEndpoint(realm, "x", method: .post)) == "realm")

        let endpoint = TestEndpoint(realm, "x", headers: ["X-LAYER": "endpoint"])
        #expect(try header("X-Layer", endpoint) == "endpoint")

        let overridden = try endpoint.override { $0.addHeader("x-Layer", withValue: "override") }.urlRequest()
        #expect(overridden.value(forHTTPHeaderField: "X-Layer") == "override")
        #expect(overridden.allHTTPHeaderFields?.keys.filter { $0.lowercased() == "x-layer" }.count == 1)

        let overriddenPerCRUD = try endpoint.override { configuration in
            configuration.addHeader("X-Layer", withValue: "override")
            configuration.addHeader(
                "X-Layer", withValue: "override-retrieve", specificForCRUDMethod: .retrieve)
        }.urlRequest()
        #expect(overriddenPerCRUD.value(forHTTPHeaderField: "X-Layer") == "override-retrieve")
    }

    @Test func anOverrideAppliesToItsOwnRequestOnly() throws {
        let endpoint = TestEndpoint(realm, "x")
        let once = try endpoint.override { $0.addHeader("X-Once", withValue: "1") }.urlRequest()
        #expect(once.value(forHTTPHeaderField: "X-Once") == "1")
        #expect(try header("X-Once", endpoint) == nil)
        #expect(realm.configuration.headers()["X-Once"] == nil)
    }

    @Test func perCRUDSettingsFollowTheCRUDMap() throws {
        realm.addHeaders(["X-Create": "c"], specificForCRUDMethod: .create)
            .addHeaders(["X-Retrieve": "r"], specificForCRUDMethod: .retrieve)
            .addHeaders(["X-Update": "u"], specificForCRUDMethod: .update)
            .addHeaders(["X-Destroy": "d"], specificForCRUDMethod: .destroy)
        func crudHeaders(_ method: HTTPMethod) throws -> Set<String> {
            let fields = try TestEndpoint(realm, "x", method: method).urlRequest().allHTTPHeaderFields ?? [:]
            return Set(fields.keys.filter { $0.hasPrefix("X-") })
        }
        #expect(try crudHeaders(.get) == ["X-Retrieve"])
        #expect(try crudHeaders(.post) == ["X-Create"])
        #expect(try crudHeaders(.put) == ["X-Update"])
        #expect(try crudHeaders(.delete) == ["X-Destroy"])
        #expect(try crudHeaders(.patch) == [])
        #expect(try crudHeaders(.head) == [])
        #expect(try crudHeaders(.options) == [])

        realm.overrideCrudMethod(.update, withHTTPMethod: .patch)
        #expect(try crudHeaders(.patch) == ["X-Update"])
        #expect(try crudHeaders(.put) == [])

        realm.overrideCrudMap([.create: .put, .update: .put])
        #expect(try crudHeaders(.put) == ["X-Create", "X-Update"])
        #expect(try crudHeaders(.post) == [])
    }

    @Test func whenTwoCRUDMethodsShareAnHTTPMethodTheLaterOneWinsAConflict() throws {
        realm.overrideCrudMap([.create: .post, .update: .post])
            .addHeader("X-Which", withValue: "create", specificForCRUDMethod: .create)
            .addHeader("X-Which", withValue: "update", specificForCRUDMethod: .update)
        #expect(try header("X-Which", TestEndpoint(realm, "x", method: .post)) == "update")
    }

    @Test func cachePolicyGoesFromGlobalToPerCRUDToOverride() throws {
        let get = TestEndpoint(realm, "x")
        let post = TestEndpoint(realm, "x", method: .post)
        #expect(try get.urlRequest().cachePolicy == .useProtocolCachePolicy)
        realm.overrideGlobalCachePolicy(.reloadIgnoringLocalCacheData)
        #expect(try get.urlRequest().cachePolicy == .reloadIgnoringLocalCacheData)
        realm.overrideCachePolicy(.returnCacheDataElseLoad, forCrudMethod: .retrieve)
        #expect(try get.urlRequest().cachePolicy == .returnCacheDataElseLoad)
        #expect(try post.urlRequest().cachePolicy == .reloadIgnoringLocalCacheData)
        #expect(
            try get.override { $0.overrideGlobalCachePolicy(.returnCacheDataDontLoad) }.urlRequest()
                .cachePolicy
                == .returnCacheDataDontLoad)
        #expect(
            try get.override {
                $0.overrideGlobalCachePolicy(.returnCacheDataDontLoad)
                $0.overrideCachePolicy(.reloadRevalidatingCacheData, forCrudMethod: .retrieve)
            }.urlRequest().cachePolicy == .reloadRevalidatingCacheData)
    }

    @Test func timeoutGoesFromTheDefaultToTheRealmToTheOverride() throws {
        let endpoint = TestEndpoint(realm, "x")
        #expect(try endpoint.urlRequest().timeoutInterval == 60)
        realm.setTimeout(12)
        #expect(try endpoint.urlRequest().timeoutInterval == 12)
        #expect(try endpoint.override { $0.setTimeout(3) }.urlRequest().timeoutInterval == 3)
        #expect(realm.timeout == 12)
    }

    @Test func anOverrideMaySendOneRequestThroughAnotherBackend() async throws {
        realm.use(StubBackend.failing(statusCode: 500))
        let endpoint = TestEndpoint(realm, "x", sampleData: Data("ok".utf8))
        let response = try await endpoint.override { $0.use(.stub) }.request()
        #expect(try response.mapString() == "ok")
        await #expect(throws: ServiceError.self) { try await endpoint.request() }
    }

    @Test func overridesChainAndTheLaterOneWins() throws {
        let request = try TestEndpoint(realm, "x")
            .override {
                $0.addHeader("X-A", withValue: "1"); $0.setTimeout(5)
            }
            .override { $0.addHeader("X-A", withValue: "2") }
            .urlRequest()
        #expect(request.value(forHTTPHeaderField: "X-A") == "2")
        #expect(request.timeoutInterval == 5)
    }

    @Test func aRequestKeepsTheRealmAsItWasWhenTheRequestWasMade() async throws {
        let spy = SpyBackend(StubBackend(.delayed(0.05)))
        realm.use(spy).addHeaders(["X-Version": "1", "X-Version-Copy": "1"])
        let recorder = CallbackRecorder<Result<Response, ServiceError>>()
        TestEndpoint(realm, "x").request { recorder.record($0) }
        realm.addHeaders(["X-Version": "2", "X-Version-Copy": "2"]).setBaseURL(
            URL(string: "https://changed.example")!)
        let response = try await recorder.first().get()
        #expect(response.request.value(forHTTPHeaderField: "X-Version") == "1")
        #expect(response.request.url?.host == "api.example.com")
        #expect(spy.requests.first?.value(forHTTPHeaderField: "X-Version-Copy") == "1")
    }

    @Test func concurrentRequestsNeverSeeAHalfChangedRealm() async throws {
        realm.use(StubBackend()).configure { $0.addHeaders(["X-Version": "0", "X-Version-Copy": "0"]) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for version in 1...2_000 {
                    realm.configure {
                        $0.addHeaders(["X-Version": "\(version)", "X-Version-Copy": "\(version)"])
                    }
                    if version.isMultiple(of: 50) { await Task.yield() }
                }
            }
            for _ in 0..<8 {
                group.addTask {
                    for index in 0..<500 {
                        if index.isMultiple(of: 50) { await Task.yield() }
                        let request = try await TestEndpoint(realm, "x").request().request
                        let version = request.value(forHTTPHeaderField: "X-Version")
                        #expect(
                            version != nil && version == request.value(forHTTPHeaderField: "X-Version-Copy"))
                    }
                }
            }
            try await group.waitForAll()
        }
    }
}
