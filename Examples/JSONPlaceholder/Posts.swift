import Foundation
import SwiftyService

/// The posts module: another realm, another host, other headers.
enum PostService: SwiftyServiceProtocol {
    case posts(userID: Int)
    case post(id: Int)
    case publish(NewPost)

    var realm: ServiceRealm { .get("posts") }
    var path: String {
        switch self {
        case .posts, .publish: "posts"
        case let .post(id): "posts/\(id)"
        }
    }
    var method: HTTPMethod {
        switch self {
        case .posts, .post: .get
        case .publish: .post
        }
    }
    var parameters: [String: Any]? {
        switch self {
        case let .posts(userID): ["userId": userID]
        case .post, .publish: nil
        }
    }
    var body: RequestBody? {
        switch self {
        case let .publish(post): .json(post)
        case .posts, .post: nil
        }
    }
    var sampleData: Data {
        switch self {
        case .posts:
            Data(
                #"[{"userId": 1, "id": 1, "title": "sunt aut facere", "body": "quia et suscipit"}, {"userId": 1, "id": 2, "title": "qui est esse", "body": "est rerum tempore"}]"#
                    .utf8)
        case .post:
            Data(#"{"userId": 1, "id": 1, "title": "sunt aut facere", "body": "quia et suscipit"}"#.utf8)
        case .publish: Data(#"{"userId": 1, "id": 101, "title": "Hello", "body": "From SwiftyService"}"#.utf8)
        }
    }
}

extension PostService {
    static func all(userID: Int) -> TypedEndpoint<[Post]> { posts(userID: userID).returning([Post].self) }
    static func one(id: Int) -> TypedEndpoint<Post> { post(id: id).returning(Post.self) }
    static func publishing(_ draft: NewPost) -> TypedEndpoint<Post> { publish(draft).returning(Post.self) }
}

struct Post: Codable {
    let userId: Int
    let id: Int
    let title: String
    let body: String
}

struct NewPost: Codable, Sendable {
    let userId: Int
    let title: String
    let body: String
}

struct Comment: Codable, Sendable {
    var postId: Int
    var name: String
    var body: String
}
