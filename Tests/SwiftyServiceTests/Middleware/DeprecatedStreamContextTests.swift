import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a middleware written before heads and bodies went one way read of a stream: `context.isStream` and
/// `context.whenStreamEnds`. Reached through a protocol, as old code compiled against them would be, so that
/// this file itself uses nothing deprecated.
protocol StreamContextOfOldMiddleware {
    var isStream: Bool { get }
    func whenStreamEnds(_ handler: @escaping @Sendable (_ bytes: Int64, _ error: ServiceError?) -> Void)
}

extension RequestContext: StreamContextOfOldMiddleware {}

/// A middleware of the old kind: it notes whether the call streams, and the end of its body.
struct OldStreamWatcher: Middleware {
    let seen: CallbackRecorder<String>

    func intercept(_ request: URLRequest, context: RequestContext, next: MiddlewareNext) async throws -> Response {
        let old: any StreamContextOfOldMiddleware = context
        seen.record("stream: \(old.isStream)")
        old.whenStreamEnds { [seen] bytes, error in seen.record("ended: \(bytes) \(error?.kind.rawValue ?? "whole")") }
        return try await next(request)
    }
}

@Suite struct DeprecatedStreamContextTests {
    func realm(_ seen: CallbackRecorder<String>) -> ServiceRealm {
        let stub = StubBackend()
            .on(.path("/feed"), answer: .streamed([Data("ab".utf8), Data("cde".utf8)]))
            .on(.path("/refused"), answer: .init(statusCode: 503, data: Data("busy".utf8)))
        return uniqueRealm("old-middleware").setBaseURL(URL(string: "https://old.test")!).use(stub)
            .addMiddleware(OldStreamWatcher(seen: seen))
    }

    @Test func aStreamStillTellsOldMiddlewareItStreamsAndWhenItsBodyEnds() async throws {
        let seen = CallbackRecorder<String>()
        for try await _ in try await TestEndpoint(realm(seen), "feed").stream() {}
        #expect(try await waitUntil(for: 30) { seen.calls.count == 2 })
        #expect(seen.calls == ["stream: true", "ended: 5 whole"])
    }

    @Test func aRefusedStreamTellsOldMiddlewareWithTheError() async throws {
        let seen = CallbackRecorder<String>()
        await #expect(throws: ServiceError.self) { _ = try await TestEndpoint(realm(seen), "refused").stream() }
        #expect(try await waitUntil(for: 30) { seen.calls.count == 2 })
        #expect(seen.calls.last == "ended: 4 unacceptableStatusCode")
    }

    @Test func aPlainRequestIsNoStreamAndNeverEnds() async throws {
        let seen = CallbackRecorder<String>()
        _ = try await TestEndpoint(realm(seen), "feed").request()
        #expect(try await seen.count() == 1)
        #expect(seen.calls == ["stream: false"])
    }
}
