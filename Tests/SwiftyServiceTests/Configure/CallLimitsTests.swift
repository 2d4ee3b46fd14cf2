import Foundation
import Testing

@testable import SwiftyService

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Which limits a call gets when its realm sets none, per the way it keeps its answer, and how a layer's
/// choice (a value, `nil` for the default, `.unlimited`) wins over the layers below it. What the backend is
/// asked for is read from the stub's `received`.
@Suite struct CallLimitsTests {
    let realm = uniqueRealm("limits").setBaseURL(URL(string: "https://api.example.com")!)
    let temporaryFiles = TemporaryFiles()

    /// The size limit the backend was given for `endpoint`.
    func sizeLimit(_ send: (ServiceRealm) async throws -> Void) async throws -> Int? {
        let stub = StubBackend()
        realm.use(stub)
        try await send(realm)
        return try #require(stub.received.last).maxResponseSize
    }

    @Test func aBufferedRequestAndAnUploadFromAFileGetTheDefaultCapADownloadNone() async throws {
        #expect(try await sizeLimit { _ = try await TestEndpoint($0, "a").request() } == 64 << 20)
        let file = temporaryFiles.uniquePath("upload")
        try Data("body".utf8).write(to: file)
        let upload = try await sizeLimit {
            _ = try await TestEndpoint($0, "upload", method: .post, body: .file(file)).request()
        }
        #expect(upload == 64 << 20, "an upload's answer is kept in memory")
        let destination = temporaryFiles.uniquePath("limits").appendingPathComponent("d.bin")
        let download = try await sizeLimit {
            _ = try await DownloadEndpoint(realm: $0, path: "d", destination: .file(destination)).request()
        }
        #expect(download == nil)
    }

    @Test func aLayersChoiceWinsAndNilInAnOverrideIsTheDefaultNotTheRealms() async throws {
        realm.setMaxResponseSize(1_000)
        #expect(try await sizeLimit { _ = try await TestEndpoint($0, "a").request() } == 1_000)
        let overridden = try await sizeLimit {
            _ = try await TestEndpoint($0, "a").override { $0.setMaxResponseSize(nil) }.request()
        }
        #expect(overridden == 64 << 20)
        let unlimited = try await sizeLimit {
            _ = try await TestEndpoint($0, "a").override { $0.setMaxResponseSize(.unlimited) }.request()
        }
        #expect(unlimited == nil)
        realm.setMaxResponseSize(.unlimited)
        #expect(try await sizeLimit { _ = try await TestEndpoint($0, "a").request() } == nil)
    }

    @Test func theDeadlineIsFiveTimeoutsForBufferedRequestsOnly() {
        let limits = RequestLimits(size: nil, deadline: nil, timeout: 10)
        #expect(limits.resourceTimeout(for: .buffered) == 50)
        #expect(limits.resourceTimeout(for: .uploadFromFile) == nil)
        #expect(limits.resourceTimeout(for: .downloadToFile) == nil)
        #expect(limits.resourceTimeout(for: .stream) == nil)
        let set = RequestLimits(size: .value(5), deadline: .value(3), timeout: 10)
        for mode in [CallMode.buffered, .uploadFromFile, .downloadToFile, .stream] {
            #expect(set.resourceTimeout(for: mode) == 3, "a deadline set applies to every call")
            #expect(set.maxResponseSize(for: mode) == 5)
        }
        let forever = RequestLimits(size: nil, deadline: nil, timeout: .infinity)
        #expect(forever.resourceTimeout(for: .buffered) == .longestTimeout)
    }

    @Test func anInvalidDeadlineStillFailsTheRequestUnsent() async throws {
        let stub = StubBackend()
        realm.use(stub).setResourceTimeout(0)
        let error = await #expect(throws: ServiceError.self) { try await TestEndpoint(realm, "a").request() }
        #expect(error?.kind == .invalidRequest)
        #expect(stub.received.isEmpty)
    }

    @Test func aDeadlineErrorNamesItsLimitAndTheSettings() {
        var request = URLRequest(url: URL(string: "https://api.example.com/slow")!)
        request.timeoutInterval = 60
        let error = ServiceError.deadlinePassed(request, after: 300)
        #expect(error.kind == .timedOut)
        #expect(error.description.contains("timed out after 300 s"), "\(error)")
        #expect(error.description.contains("setResourceTimeout"))
        #expect(error.description.contains("setTimeout"))
        #expect(error.request?.url == request.url)
        let tooLarge = ResponseTooLarge(limit: 64 << 20).description
        #expect(tooLarge.contains("67108864-byte limit") && tooLarge.contains("setMaxResponseSize"))
    }
}

/// Long deadlines — every buffered request's default one — share one sweeping timer.
@Suite struct DeadlineSweeperTests {
    @Test func aSweptDeadlineFiresNearItsTimeAndACancelledOneNever() async throws {
        let fired = Locked.make([String: TimeInterval]())
        let start = Date()
        let kept = Deadline(after: 0.3, swept: true) {
            fired.withLock { $0["kept"] = Date().timeIntervalSince(start) }
        }
        let cancelled = Deadline(after: 0.3, swept: true) { fired.withLock { $0["cancelled"] = 0 } }
        cancelled.cancel()
        let firedAt = try await poll(for: 10) { fired.withLock { $0["kept"] } }
        let seconds = try #require(firedAt)
        #expect(seconds >= 0.3)
        // A sweep late at most, but a CI run on 2 loaded cores saw the timer itself 1.2 s late.
        #expect(seconds < 0.3 + Deadline.sweepInterval + 4, "fired after \(seconds) s")
        try await Task.sleep(for: .milliseconds(300))
        #expect(fired.withLock { $0["cancelled"] } == nil)
        withExtendedLifetime(kept) {}
    }

    /// A called-off deadline's slot takes the next deadline: calling the first off again leaves that one
    /// alone.
    @Test func aDeadlineCalledOffTwiceLeavesTheNextOneInItsSlotAlone() async throws {
        let first = Deadline(after: 0.2, swept: true) {}
        first.cancel()
        let fired = Locked.make(false)
        let second = Deadline(after: 0.2, swept: true) { fired.withLock { $0 = true } }
        first.cancel()
        let didFire = try await poll(for: 10) { fired.withLock { $0 } ? true : nil }
        #expect(didFire == true)
        second.cancel()
    }

    @Test func longDeadlinesAreSweptAndLeaveNothingBehindWhenCalledOff() {
        let deadlines = (0..<1_000).map { _ in Deadline(after: 300) {} }
        #expect(DeadlineSweeper.shared.state.waiting >= 1_000)
        #expect(DeadlineSweeper.shared.state.timerRuns)
        for deadline in deadlines { deadline.cancel() }
        #expect(DeadlineSweeper.shared.state.waiting < 1_000)
    }
}
