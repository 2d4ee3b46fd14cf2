import Foundation
import SwiftyService
import Testing

/// The app's own conditional and range requests through the cache, against the cache server.
@Suite(.tags(.realServer), .timeLimit(.minutes(5)))
struct CacheConditionalRequestTests {
    @Test(arguments: CacheServer.backends)
    func theOriginsAnswerToAnAppsOwnConditionalIsHandedBackAndNeverStored(_ kind: ConformingBackend)
        async throws
    {
        let resource = try ScriptedResource(kind, headers: ["Cache-Control: max-age=3600", #"ETag: "v1""#])
        let conditional = try await resource.get(["If-None-Match": #""v1""#])
        #expect(conditional.statusCode == 304 && conditional.source == .network)

        let plain = try await resource.get()
        #expect(plain.statusCode == 200 && plain.source == .network, "a 304 is never a stored response")
        #expect(!plain.data.isEmpty)
        let hit = try await resource.get()
        #expect(hit.statusCode == 200 && hit.source == .cache && hit.data == plain.data)
        #expect(resource.sent == 2)
    }

    @Test(arguments: CacheServer.backends)
    func anAppsConditionalMatchingAFreshStoredResponseIsAnswered304ByTheCache(_ kind: ConformingBackend)
        async throws
    {
        let resource = try ScriptedResource(kind, headers: ["Cache-Control: max-age=3600", #"ETag: "v1""#])
        let stored = try await resource.get()
        let matching = try await resource.get(["If-None-Match": #"W/"v0", "v1""#])
        #expect(matching.statusCode == 304 && matching.source == .cache && matching.data.isEmpty)
        #expect(matching.header("ETag") == #""v1""#)
        #expect(resource.sent == 1)

        let other = try await resource.get(["If-None-Match": #""v0""#])
        #expect(other.statusCode == 200 && other.source == .network, "not the stored tag: asked and answered")
        #expect(resource.sent == 2)
        #expect(stored.statusCode == 200)
    }

    @Test(arguments: CacheServer.backends)
    func ifModifiedSinceIsAnsweredFromTheStoredLastModified(_ kind: ConformingBackend) async throws {
        let resource = try ScriptedResource(
            kind, headers: ["Cache-Control: max-age=3600", "Last-Modified: @now-3600"])
        _ = try await resource.get()
        let later = resource.clock.httpDate(-60)
        let earlier = resource.clock.httpDate(-7200)
        #expect(try await resource.get(["If-Modified-Since": later]).statusCode == 304)
        #expect(resource.sent == 1)
        let changed = try await resource.get(["If-Modified-Since": earlier])
        #expect(changed.statusCode == 200 && changed.source == .network)
    }

    @Test(arguments: CacheServer.backends)
    func aRangeOfAFreshCompleteResponseIsA206FromTheCache(_ kind: ConformingBackend) async throws {
        let resource = try ScriptedResource(
            kind, headers: ["Cache-Control: max-age=3600"], options: ["body": "0123456789"])
        _ = try await resource.get()
        let middle = try await resource.get(["Range": "bytes=2-5"])
        #expect(middle.statusCode == 206 && middle.source == .cache)
        #expect(try middle.mapString() == "2345")
        #expect(middle.header("Content-Range") == "bytes 2-5/10")
        let tail = try await resource.get(["Range": "bytes=-3"])
        #expect(try tail.mapString() == "789")
        #expect(resource.sent == 1)
    }

    @Test(arguments: CacheServer.backends)
    func onlyIfCachedWithNothingStoredIs504AndSendsNothing(_ kind: ConformingBackend) async throws {
        let resource = try ScriptedResource(kind, headers: ["Cache-Control: max-age=3600"])
        let missing = try await resource.get(["Cache-Control": "only-if-cached"])
        #expect(missing.statusCode == 504 && resource.sent == 0)
        _ = try await resource.get()
        #expect(try await resource.get(["Cache-Control": "only-if-cached"]).source == .cache)
    }
}
