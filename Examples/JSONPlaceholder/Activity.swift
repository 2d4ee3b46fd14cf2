import Foundation
import SwiftyService

/// A live activity feed as server-sent events: the streaming demo (offline, a stub plays the server).
enum ActivityFeed: SwiftyServiceProtocol {
    case live(postID: Int)

    var realm: ServiceRealm { .get("activity") }
    var path: String {
        switch self {
        case let .live(postID): "posts/\(postID)/activity"
        }
    }
    var method: HTTPMethod { .get }
    var headers: HTTPHeaderDictionary? { ["Accept": "text/event-stream"] }
}

/// What the stub streams: events in pieces 80 ms apart, one split in the middle of a line.
let activityPieces: [Data] = [
    "retry: 3000\n\n",
    "id: 1\nevent: comment\ndata: Leanne: great post!\n\n",
    ": keep-alive\n\n",
    "id: 2\nevent: like\ndata: Ervin liked it\n\nid: 3\nevent: com",
    "ment\ndata: Clementine: agreed,\ndata: and shared it\n\n",
].map { Data($0.utf8) }
