import Foundation
import LegacyNetworking
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A module's own callback shape, as in the seed article: an old-style `(data, error)` closure.
typealias OldStyleCompletion = @Sendable (_ data: Data?, _ error: NSError?) -> Void

enum OldStyleService: SwiftyServiceProtocol {
    typealias SwiftyServiceCallBackType = OldStyleCompletion

    case ping(realm: ServiceRealm)

    var realm: ServiceRealm {
        switch self {
        case let .ping(realm): realm
        }
    }
    var path: String { "ping" }
    var method: HTTPMethod { .get }
    var sampleData: Data { Data("pong".utf8) }

    static func deliver(_ result: Result<Response, ServiceError>, to callback: OldStyleCompletion) {
        switch result {
        case let .success(response): callback(response.data, nil)
        case let .failure(error):
            callback(nil, NSError(domain: "OldStyle", code: error.response?.statusCode ?? 0))
        }
    }
}

enum LegacyPing: LegacyServiceProtocol {
    case ping(realm: ServiceRealm)

    var realm: ServiceRealm {
        switch self {
        case let .ping(realm): realm
        }
    }
    var path: String { "ping" }
    var method: HTTPMethod { .get }
    var sampleData: Data { Data(#"{"pong": true}"#.utf8) }
}

@Suite struct CallbackShapeTests {
    let realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!)

    @Test func aModuleReceivesResultsInItsOwnCallbackShape() async throws {
        realm.use(.stub)
        let recorder = CallbackRecorder<String>()
        OldStyleService.ping(realm: realm).request { data, error in
            recorder.record(data.map { String(decoding: $0, as: UTF8.self) } ?? "error \(error?.code ?? -1)")
        }
        #expect(try await recorder.first() == "pong")

        realm.use(StubBackend.failing(statusCode: 418))
        let failed = CallbackRecorder<String>()
        OldStyleService.ping(realm: realm).request { data, error in
            failed.record(data == nil ? "error \(error?.code ?? -1)" : "data")
        }
        #expect(try await failed.first() == "error 418")
        #expect(try await failed.count(after: 0.05) == 1)
    }

    @Test func theLegacyExampleGetsItsSuccessAndFailureBlocks() async throws {
        realm.use(.stub)
        let recorder = CallbackRecorder<String>()
        LegacyPing.ping(realm: realm).request(
            completion: LegacyCallbacks(
                success: { json in
                    recorder.record("success \((json as? [String: Any])?["pong"] as? Bool ?? false)")
                },
                failure: { error in recorder.record("failure \(error.code)") }))
        #expect(try await recorder.first() == "success true")

        realm.use(StubBackend.failing(statusCode: 404))
        let failed = CallbackRecorder<String>()
        LegacyPing.ping(realm: realm).request(
            completion: LegacyCallbacks(
                success: { _ in failed.record("success") },
                failure: { error in failed.record("failure \(error.code) \(error.localizedDescription)") }))
        let message = try await failed.first()
        #expect(message.hasPrefix("failure 404 GET https://api.example.com/ping"))
        #expect(try await failed.count(after: 0.05) == 1)
    }

    @Test func theAsyncFormIsTheSameForEveryCallbackShape() async throws {
        realm.use(.stub)
        #expect(try await OldStyleService.ping(realm: realm).request().mapString() == "pong")
    }

    @Test func callbacksRunOnTheRealmsCallbackQueueWhenItHasOne() async throws {
        let queue = DispatchQueue(label: "callbacks")
        let key = DispatchSpecificKey<Bool>()
        queue.setSpecific(key: key, value: true)
        realm.use(.stub(.delayed(0.01))).setCallbackQueue(queue)
        let recorder = CallbackRecorder<Bool>()
        TestEndpoint(realm, "x").request { _ in recorder.record(DispatchQueue.getSpecific(key: key) == true) }
        #expect(try await recorder.first() == true)

        let invalid = CallbackRecorder<Bool>()
        TestEndpoint(realm, "x", headers: ["Bad Name": "1"]).request { _ in
            invalid.record(DispatchQueue.getSpecific(key: key) == true)
        }
        #expect(try await invalid.first() == true)
    }
}
