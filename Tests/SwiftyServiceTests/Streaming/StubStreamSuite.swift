import Foundation
import SwiftyService

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What the suites that stream from a ``StubBackend`` share: a realm of their own on it, and chunks from text.
protocol StubStreamSuite {}

extension StubStreamSuite {
    func realm(_ stub: StubBackend) -> ServiceRealm {
        uniqueRealm("stream").setBaseURL(URL(string: "https://stream.test")!).use(stub)
    }

    func chunks(_ texts: [String]) -> [Data] { texts.map { Data($0.utf8) } }
}
