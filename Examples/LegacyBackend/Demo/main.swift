import Foundation
import LegacyNetworking
import SwiftyService

// The seed article's situation: the app must keep the company's callback library, yet wants Swifty,
// Moya-style endpoints. One realm per module, each on the library it needs; call sites keep their blocks.
//
//   eval "$(scripts/httpbin start)" && swift run LegacyBackend "$HTTPBIN_URL"

guard let base = CommandLine.arguments.dropFirst().first.flatMap(URL.init(string:)) else {
    print("usage: LegacyBackend <base-url>    e.g. an httpbin started with scripts/httpbin start")
    exit(2)
}

/// The user module: endpoints on the legacy library, delivered to the old success/failure blocks.
enum UserService: LegacyServiceProtocol {
    case info(uid: Int64)
    case follow(uid: Int64)

    var realm: ServiceRealm { .get("legacy-users") }
    var path: String {
        switch self {
        case .info: "anything/user/info"
        case .follow: "anything/user/follow"
        }
    }
    var method: HTTPMethod {
        switch self {
        case .info: .get
        case .follow: .post
        }
    }
    var parameters: [String: Any]? {
        switch self {
        case let .info(uid): ["uid": uid]
        case let .follow(uid): ["id": uid]
        }
    }
}

/// The feed module: plain Swift callbacks and async/await, on the newer async client.
enum FeedService: SwiftyServiceProtocol {
    case latest(limit: Int)

    var realm: ServiceRealm { .get("modern-feed") }
    var path: String { "anything/feed/latest" }
    var method: HTTPMethod { .get }
    var parameters: [String: Any]? {
        switch self {
        case let .latest(limit): ["limit": limit]
        }
    }
}

ServiceRealm.get("legacy-users").setBaseURL(base).addHeader("X-Client", withValue: "legacy").use(
    LegacyBackend())
let modernClient = ModernHTTPClient()
ServiceRealm.get("modern-feed").setBaseURL(base).addHeader("X-Client", withValue: "modern")
    .use(ModernClientBackend(client: modernClient))

let done = DispatchSemaphore(value: 0)
UserService.info(uid: 42).request(
    completion: LegacyCallbacks(
        success: { json in
            let url = (json as? [String: Any])?["url"] ?? "?"
            print("legacy  GET  user/info  → success, server saw \(url)")
            done.signal()
        },
        failure: { error in
            print("legacy  GET  user/info  → failure: \(error.localizedDescription)")
            done.signal()
        }))
done.wait()

UserService.follow(uid: 7).request(
    completion: LegacyCallbacks(
        success: { json in
            let body = (json as? [String: Any])?["data"] ?? "?"
            print("legacy  POST user/follow → success, body \(body)")
            done.signal()
        },
        failure: { error in
            print("legacy  POST user/follow → failure: \(error.localizedDescription)")
            done.signal()
        }))
done.wait()

let response = try await FeedService.latest(limit: 10).request()
print("modern  GET  feed/latest → \(response.statusCode), \(response.data.count) bytes via the async client")
print("modern client sent \(await modernClient.requestCount) request(s)")
