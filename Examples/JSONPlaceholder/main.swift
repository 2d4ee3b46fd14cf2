import Foundation
import SwiftyService

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// Two modules (users, posts), each with its own enum and realm, and a CRUD resource (comments).
// Offline by default, on StubBackend with sample data; `--live <base-url>` sends the same requests with
// URLSessionBackend, e.g. `--live https://jsonplaceholder.typicode.com`.

let arguments = Array(CommandLine.arguments.dropFirst())
let live: URL? = arguments.firstIndex(of: "--live").flatMap { index in
    arguments.indices.contains(index + 1) ? URL(string: arguments[index + 1]) : nil
}
if arguments.contains("--live") && live == nil {
    print("usage: JSONPlaceholder [--live <base-url>]")
    exit(2)
}

ServiceRealm.get("users")
    .setBaseURL(live ?? URL(string: "https://users.example.com/v1")!)
    .addHeaders(["Authorization": "Token users-secret", "Accept": "application/json"])
    .addHeader("X-Cache-Hint", withValue: "users", specificForCRUDMethod: .retrieve)
    .setTimeout(10)
ServiceRealm.get("posts")
    .setBaseURL(live ?? URL(string: "https://posts.example.com/api")!)
    .addHeaders(["X-Api-Key": "posts-key", "Accept": "application/json"])
    .setTimeout(10)
let comments = Service(
    baseURL: (live ?? URL(string: "https://posts.example.com/api")!).appendingPathComponent("comments"))
ServiceRealm.get("comments").addHeader("X-Api-Key", withValue: "posts-key").register(comments)

if live == nil {
    ServiceRealm.get("users").use(.stub)
    ServiceRealm.get("posts").use(.stub(.delayed(0.05)))
    // A stub can answer from a closure too: comments echo what they are sent, and 404 for unknown ids.
    ServiceRealm.get("comments").use(
        StubBackend { request in
            switch (request.crudMethod, request.urlRequest.url?.lastPathComponent) {
            case (.create?, _): .init(statusCode: 201, data: request.urlRequest.httpBody)
            case (.retrieve?, "1"):
                .json(#"{"postId": 1, "name": "id labore ex et quam laborum", "body": "laudantium"}"#)
            default: .init(statusCode: 404, data: Data("{}".utf8))
            }
        })
}

func show(_ request: URLRequest) {
    let headers = (request.allHTTPHeaderFields ?? [:]).sorted { $0.key < $1.key }
        .map { "\($0.key): \($0.key == "Authorization" ? "<redacted>" : $0.value)" }.joined(separator: ", ")
    print("→ \(request.httpMethod ?? "?") \(request.url?.absoluteString ?? "?")  [\(headers)]")
    if let body = request.httpBody, !body.isEmpty { print("  body \(String(decoding: body, as: UTF8.self))") }
}

func show(_ error: ServiceError) {
    print("✗ \(error)")
}

print(
    "SwiftyService example: \(live.map { "live against \($0.absoluteString)" } ?? "offline, on StubBackend")\n"
)

// 1. Callback style, exactly as the seed article calls it.
let done = DispatchSemaphore(value: 0)
show(try UserService.user(id: 1).urlRequest())
UserService.user(id: 1).request { result in
    switch result {
    case let .success(response): print("✓ \(response.statusCode) \(try! response.mapString())\n")
    case let .failure(error): show(error)
    }
    done.signal()
}
done.wait()

// 2. async/await with a decoded model.
do {
    show(try UserService.search(name: "Leanne Graham").urlRequest())
    let users = try await UserService.search(name: "Leanne Graham").request(as: [User].self)
    print("✓ found \(users.map(\.username))\n")

    show(try UserService.rename(id: 1, name: "Leanne").urlRequest())
    let renamed = try await UserService.rename(id: 1, name: "Leanne").request(as: User.self)
    print("✓ renamed to \(renamed.name)\n")

    show(try PostService.posts(userID: 1).urlRequest())
    let posts = try await PostService.posts(userID: 1).request(as: [Post].self)
    print("✓ \(posts.count) posts: \(posts.map(\.title))\n")

    let draft = NewPost(userId: 1, title: "Hello", body: "From SwiftyService")
    show(try PostService.publish(draft).urlRequest())
    let published = try await PostService.publish(draft).request(as: Post.self)
    print("✓ published post \(published.id)\n")

    // 3. A one-off override: this request only gets a shorter timeout and a trace header.
    let traced = PostService.post(id: 1).override { configuration in
        configuration.setTimeout(2)
        configuration.addHeader("X-Trace-Id", withValue: "example-1")
    }
    show(try traced.urlRequest())
    let post = try await traced.request(as: Post.self)
    print("✓ post 1: \(post.title)\n")
} catch let error as ServiceError {
    show(error)
}

// 4. The CRUD resource, iService style: promises with then, or await .value.
do {
    let response = try await comments.retrieve("1").value
    show(response.request)
    let comment = try response.decode(Comment.self)
    print("✓ comment 1 by \(comment.name)\n")

    let created = try await comments.create(Comment(postId: 1, name: "Swifty", body: "Nice post")).value
    show(created.request)
    print("✓ \(created.statusCode) created \(try created.mapString())\n")
} catch let error as ServiceError {
    show(error)
}

comments.retrieve("../admin").then { result in
    if let request = result.request { show(request) }
    if let error = result.error { show(error) }
    print("  (the id stayed one path segment)")
    done.signal()
}
done.wait()
