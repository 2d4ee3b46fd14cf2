import Foundation
import SwiftyService

/// The users module: its own realm, base URL and headers.
enum UserService: SwiftyServiceProtocol {
    case user(id: Int)
    case search(name: String)
    case rename(id: Int, name: String)

    var realm: ServiceRealm { .get("users") }
    var path: String {
        switch self {
        case let .user(id), let .rename(id, _): "users/\(id)"
        case .search: "users"
        }
    }
    var method: HTTPMethod {
        switch self {
        case .user, .search: .get
        case .rename: .patch
        }
    }
    var parameters: [String: Any]? {
        switch self {
        case .user: nil
        case let .search(name): ["name": name]
        case let .rename(_, name): ["name": name]
        }
    }
    var sampleData: Data {
        switch self {
        case .user:
            Data(
                #"{"id": 1, "name": "Leanne Graham", "username": "Bret", "email": "Sincere@april.biz"}"#.utf8)
        case .search:
            Data(
                #"[{"id": 1, "name": "Leanne Graham", "username": "Bret", "email": "Sincere@april.biz"}]"#
                    .utf8)
        case let .rename(id, name):
            Data(
                #"{"id": \#(id), "name": "\#(name)", "username": "Bret", "email": "Sincere@april.biz"}"#.utf8)
        }
    }
}

/// Typed views of the cases: what each answers with, named once here instead of at every call site.
extension UserService {
    static func profile(id: Int) -> TypedEndpoint<User> { user(id: id).returning(User.self) }
    static func matching(name: String) -> TypedEndpoint<[User]> { search(name: name).returning([User].self) }
    static func renaming(id: Int, to name: String) -> TypedEndpoint<User> {
        rename(id: id, name: name).returning(User.self)
    }
}

struct User: Decodable {
    let id: Int
    let name: String
    let username: String
    let email: String
}
