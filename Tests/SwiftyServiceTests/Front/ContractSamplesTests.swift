import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// The code samples of CONTRACT.md sections 1, 2 and 4 (and the README's quick start), written as users
// write them, then sent for real against httpbin. The realms "users" and "jsonplaceholder" are shared
// with nothing else in the suite.

enum UserService: SwiftyServiceProtocol {
    case info(uid: Int64)
    case follow(uid: Int64)
    case unFollow(uid: Int64)

    var realm: ServiceRealm { .get("users") }
    var path: String {
        switch self {
        case .info: "user/info"
        case .follow: "user/follow"
        case .unFollow: "user/unfollow"
        }
    }
    var method: HTTPMethod {
        switch self {
        case .info: .get
        default: .post
        }
    }
    var parameters: [String: Any]? {
        switch self {
        case let .info(uid): ["uid": uid]
        case let .follow(uid), let .unFollow(uid): ["id": uid]
        }
    }
}

struct User: Decodable {
    let args: [String: String]
}

@Suite(.serialized, .tags(.realServer)) struct ContractSamplesTests {
    /// Section 1, as written; then the realm is pointed at httpbin's `/anything` to send for real.
    func configureUsersRealmAsInTheContract() throws {
        ServiceRealm.get("users")
            .setBaseURL(URL(string: "https://api.example.com/v1")!)
            .addHeaders([
                "Authorization": "Token sagsrbiusd90322sdf4f3gd4",
                "Content-Type": "application/json",
            ])
            .addHeader("Accept-Language", withValue: "en", specificForCRUDMethod: .retrieve)
            .overrideGlobalCachePolicy(.reloadIgnoringLocalAndRemoteCacheData)
            .overrideCachePolicy(.returnCacheDataElseLoad, forCrudMethod: .retrieve)
            .overrideCrudMethod(.update, withHTTPMethod: .patch)
            .use(URLSessionBackend())  // this module's backend; swap freely, e.g. .use(StubBackend())
    }

    @Test func theRealmSampleBuildsTheRequestsItDescribes() throws {
        try configureUsersRealmAsInTheContract()
        #expect(ServiceRealm.get("users") === ServiceRealm.get("users"))
        #expect(ServiceRealm.get("users").baseURL?.absoluteString == "https://api.example.com/v1")

        let info = try UserService.info(uid: 42).urlRequest()
        #expect(info.url?.absoluteString == "https://api.example.com/v1/user/info?uid=42")
        #expect(info.httpMethod == "GET")
        #expect(info.value(forHTTPHeaderField: "Authorization") == "Token sagsrbiusd90322sdf4f3gd4")
        #expect(info.value(forHTTPHeaderField: "Accept-Language") == "en")
        #expect(info.cachePolicy == .returnCacheDataElseLoad)
        #expect(info.timeoutInterval == 60)

        let follow = try UserService.follow(uid: 7).urlRequest()
        #expect(follow.url?.absoluteString == "https://api.example.com/v1/user/follow")
        #expect(follow.httpMethod == "POST")
        #expect(follow.httpBody == Data(#"{"id":7}"#.utf8))
        #expect(follow.value(forHTTPHeaderField: "Accept-Language") == nil)
        #expect(follow.cachePolicy == .reloadIgnoringLocalAndRemoteCacheData)
        #expect(
            ServiceRealm.defaultCRUDMap == [
                .create: .post, .retrieve: .get, .update: .put, .destroy: .delete,
            ])
        #expect(ServiceRealm.get("users").configuration.crudMap[.update] == .patch)
    }

    @Test func theEndpointSampleSendsEveryWayTheContractShows() async throws {
        try configureUsersRealmAsInTheContract()
        ServiceRealm.get("users").setBaseURL(try HTTPBin.anything())  // httpbin: /anything echoes

        let recorder = CallbackRecorder<Result<Response, ServiceError>>()
        UserService.info(uid: 42).request { result in  // Result<Response, ServiceError>
            recorder.record(result)  // called exactly once
        }
        let callbackResult = try await recorder.first()
        #expect(try callbackResult.get().statusCode == 200)
        #expect(try await recorder.count() == 1)

        let response = try await UserService.info(uid: 42).request()  // Response
        let echo = try response.decode(Echo.self)
        #expect(echo.method == "GET")
        #expect(echo.args["uid"] == .one("42"))
        #expect(echo.header("Authorization") == "Token sagsrbiusd90322sdf4f3gd4")

        let user = try await UserService.info(uid: 42).request(as: User.self)  // JSON-decoded
        #expect(user.args == ["uid": "42"])

        let urlRequest = try UserService.info(uid: 42).urlRequest()  // what would be sent
        #expect(urlRequest.url == response.request.url)

        let followed = try await UserService.follow(uid: 7).request().decode(Echo.self)
        #expect(followed.method == "POST")
        #expect(followed.json == .object(["id": .number(7)]))
    }

    @Test func theRealmSampleSwapsToAStubWithoutTouchingTheEndpoint() async throws {
        try configureUsersRealmAsInTheContract()
        ServiceRealm.get("users").use(StubBackend { _ in .json(#"{"args": {"uid": "stubbed"}}"#) })
        let user = try await UserService.info(uid: 42).request(as: User.self)
        #expect(user.args == ["uid": "stubbed"])
    }

    @Test func aModuleCanNameTheTypesAroundAClashWithOtherLibraries() {
        let response: SwiftyService.Response? = nil
        let method: SwiftyService.HTTPMethod = .get
        let crud: Service.CRUDMethod = .retrieve
        let sameCRUD: SwiftyService.CRUDMethod = crud
        let verb: Service.HTTPMethod = method
        #expect(response == nil && sameCRUD == .retrieve && verb == .get)
        #expect(HTTPMethod(rawValue: "PROPFIND").rawValue == "PROPFIND")
        let seedName: SwiftyServiceMethod = .post
        #expect(seedName == .post)
    }
}
