import Foundation

/// A body written out: in memory, or in a file that is removed when the last reference goes.
enum EncodedBody: Sendable {
    case data(Data)
    case file(BodyFile)
}

/// A file a request body is streamed from; a temporary one is deleted when no request holds it any more.
final class BodyFile: Sendable {
    let url: URL
    let isTemporary: Bool

    init(url: URL, isTemporary: Bool) {
        self.url = url
        self.isTemporary = isTemporary
    }

    deinit {
        if isTemporary { try? FileManager.default.removeItem(at: url) }
    }

    var size: Int64? {
        (try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? Int64
    }
}
