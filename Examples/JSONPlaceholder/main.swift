import Foundation
import SwiftyService
import SwiftyServiceTesting

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// Two modules (users, posts), each with its own enum and realm, and a CRUD resource (comments).
//
//   swift run JSONPlaceholder                           offline, on StubBackend with sample data
//   swift run JSONPlaceholder --replay [cassette]       offline, replaying a recorded cassette
//   swift run JSONPlaceholder --live <base-url>         the same requests over URLSession
//   … --record <cassette>                               also record what happens to a cassette

let arguments = Array(CommandLine.arguments.dropFirst())
func value(after flag: String) -> String? {
    arguments.firstIndex(of: flag).flatMap { arguments.indices.contains($0 + 1) ? arguments[$0 + 1] : nil }
}
let live = value(after: "--live").flatMap(URL.init(string:))
let shippedCassette = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .appendingPathComponent("jsonplaceholder.cassette.json")
let replay: URL? =
    arguments.contains("--replay")
    ? value(after: "--replay").flatMap { $0.hasPrefix("--") ? nil : URL(fileURLWithPath: $0) }
        ?? shippedCassette
    : nil
let record = value(after: "--record").map { URL(fileURLWithPath: $0) }
if (arguments.contains("--live") && live == nil) || (arguments.contains("--record") && record == nil) {
    print("usage: JSONPlaceholder [--live <base-url> | --replay [cassette]] [--record <cassette>]")
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
    .declareSecrets(headers: ["X-Api-Key"])
    .setTimeout(10)
let comments = Service(
    baseURL: (live ?? URL(string: "https://posts.example.com/api")!).appendingPathComponent("comments"))
ServiceRealm.get("comments").addHeader("X-Api-Key", withValue: "posts-key").declareSecrets(headers: [
    "X-Api-Key"
])
.register(comments)

// Every completed call's phases, printed as a table at the end (observers turn metrics on).
let phases = PhaseTable()
for module in ["users", "posts", "comments"] { ServiceRealm.get(module).addObserver(phases) }

/// Offline answers: each endpoint's sample data, and for the comments resource a small in-memory API.
let offline = StubBackend { request in
    guard let crud = request.crudMethod else { return .sampleData }
    switch (crud, request.urlRequest.url?.lastPathComponent) {
    case (.create, _): return .init(statusCode: 201, data: request.urlRequest.httpBody)
    case (.retrieve, "1"):
        return .json(#"{"postId": 1, "name": "id labore ex et quam laborum", "body": "laudantium"}"#)
    default: return .status(404, data: Data("{}".utf8))
    }
}
.on(.path("/api/posts/1"), answer: StubBackend.Answer.sampleData.delayed(0.05))

var backend: any NetworkBackend =
    if let replay { try ReplayBackend(cassette: replay) } else if live != nil { URLSessionBackend() } else {
        offline
    }
if let record { backend = try RecordingBackend(recording: backend, to: record) }
for key in ["users", "posts", "comments"] { ServiceRealm.get(key).use(backend) }

/// What the realms declare secret (Authorization always; X-Api-Key by the posts and comments realms).
let redaction = ["users", "posts", "comments"].map { ServiceRealm.get($0).configuration.redaction }
    .reduce(Redaction.default) { $0.union($1) }

func show(_ request: URLRequest) {
    let headers = redaction.redacting(headers: request.allHTTPHeaderFields ?? [:]).sorted { $0.key < $1.key }
        .map { "\($0.key): \($0.value)" }.joined(separator: ", ")
    let url = request.url.map { redaction.redacting($0).absoluteString } ?? "?"
    print("→ \(request.httpMethod ?? "?") \(url)  [\(headers)]")
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

// 2. async/await with typed endpoints: each returns its model, decoded after the status is checked.
do {
    show(try UserService.matching(name: "Leanne Graham").urlRequest())
    let users = try await UserService.matching(name: "Leanne Graham").request()
    print("✓ found \(users.map(\.username))\n")

    show(try UserService.renaming(id: 1, to: "Leanne").urlRequest())
    let renamed = try await UserService.renaming(id: 1, to: "Leanne").request()
    print("✓ renamed to \(renamed.name)\n")

    show(try PostService.all(userID: 1).urlRequest())
    let posts = try await PostService.all(userID: 1).request()
    print("✓ \(posts.count) posts: \(posts.map(\.title))\n")

    let draft = NewPost(userId: 1, title: "Hello", body: "From SwiftyService")
    show(try PostService.publishing(draft).urlRequest())
    let published = try await PostService.publishing(draft).request()
    print("✓ published post \(published.id)\n")

    // 3. A one-off override: this request only gets a shorter timeout and a trace header.
    let traced = PostService.one(id: 1).override { configuration in
        configuration.setTimeout(2)
        configuration.addHeader("X-Trace-Id", withValue: "example-1")
    }
    show(try traced.urlRequest())
    let post = try await traced.request()
    print("✓ post 1: \(post.title)\n")

    // A typed callback: Result<User, ServiceError>.
    UserService.profile(id: 1).request { result in
        switch result {
        case let .success(user): print("✓ typed callback: \(user.name) <\(user.email)>\n")
        case let .failure(error): show(error)
        }
        done.signal()
    }
    done.wait()
} catch let error as ServiceError {
    show(error)
}

// 4. The CRUD resource, iService style: promises with then, or await .value.
do {
    show(try await comments.retrieve("1").value.request)
    let comment = try await comments.retrieve("1").value(as: Comment.self)
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

// 5. The HTTP cache (offline only): a hit, a revalidation, and an answer with the network gone.
if live == nil && replay == nil {
    let feedServer = StubBackend { request in
        let etag = #""feed-v1""#
        if request.urlRequest.value(forHTTPHeaderField: "If-None-Match") == etag {
            return .init(statusCode: 304, headers: ["ETag": etag])
        }
        let control = request.urlRequest.url?.path == "/api/news" ? "no-cache" : "max-age=60"
        return .init(headers: ["Cache-Control": control, "ETag": etag], data: Data(#"{"items": 3}"#.utf8))
    }
    let feed = ServiceRealm.get("feed").setBaseURL(URL(string: "https://posts.example.com/api")!)
        .use(feedServer).useCache(try HTTPCache())
    let trending = Service(baseURL: URL(string: "https://posts.example.com/api/trending")!)
    let news = Service(baseURL: URL(string: "https://posts.example.com/api/news")!)
    feed.register(trending).register(news)
    for (label, service) in [
        ("trending (max-age=60)", trending), ("trending again", trending),
        ("news (no-cache, ETag)", news), ("news again", news),
    ] {
        let response = try await service.retrieve().value
        print("✓ \(label): \(response.statusCode) from \(response.source)")
    }
    feed.use(StubBackend.failing(URLError(.notConnectedToInternet))).overrideGlobalCachePolicy(
        .returnCacheDataDontLoad)
    let offline = try await news.retrieve().value
    print(
        "✓ news with the network gone: \(offline.statusCode) from \(offline.source), \(try offline.mapString())"
    )
}

phases.print()

// 6. Streaming (offline only): server-sent events read as they arrive, the loop left after the third one.
if live == nil && replay == nil {
    let feedServer = StubBackend().on(
        .path("/api/posts/1/activity"),
        answer: .streamed(activityPieces, every: 0.08, headers: ["Content-Type": "text/event-stream"]))
    ServiceRealm.get("activity").setBaseURL(URL(string: "https://posts.example.com/api")!).use(feedServer)
    let activity = try await ActivityFeed.live(postID: 1).stream()
    print(
        "✓ activity stream open: \(activity.response.statusCode) \(activity.response.header("Content-Type") ?? "")"
    )
    var seen = 0
    for try await event in activity.serverSentEvents {
        print("  \(event.event) #\(event.id): \(event.data.replacingOccurrences(of: "\n", with: " / "))")
        seen += 1
        if seen == 3 { break }  // leaving the loop stops the transfer
    }
    print("✓ read \(seen) events, \(activity.byteCount) bytes, then stopped\n")
}

// 7. A client generated from an OpenAPI description (offline only): openapi.yaml beside this file becomes
// TodosService, its typed endpoints and its models when the example is built (the SwiftyServiceGenerator plugin).
if live == nil && replay == nil {
    let todoServer = StubBackend { request in
        guard request.urlRequest.httpMethod == "POST" else {
            return .json(#"[{"id": 1, "userId": 1, "title": "Describe the API", "completed": true}]"#)
        }
        let todo = try JSONSerialization.jsonObject(with: request.urlRequest.httpBody ?? Data()) as? [String: Any]
        let title = todo?["title"] as? String ?? ""
        return .json(#"{"id": 201, "userId": 1, "title": "\#(title)", "completed": false}"#, statusCode: 201)
    }
    Todos.configure().use(todoServer)
    show(try TodosService.listTodos(userId: 1, completed: true).urlRequest())
    let todos = try await TodosService.Typed.listTodos(userId: 1, completed: true).request()
    print("✓ \(todos.count) todo done: \(todos.map(\.title))\n")
    let draft = NewTodo(userId: 1, title: "Generate the client", completed: false)
    show(try TodosService.createTodo(body: draft).urlRequest())
    let created = try await TodosService.Typed.createTodo(body: draft).request()
    print("✓ added todo \(created.id): \(created.title)")
}
