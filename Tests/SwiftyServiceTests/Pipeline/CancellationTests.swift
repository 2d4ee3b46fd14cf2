import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A backend that never answers by itself and counts the cancellations that reach it.
final class HangingBackend: NetworkBackend, @unchecked Sendable {
    private let lock = NSLock()
    private var sends = 0
    private var cancels = 0
    private var completions: [@Sendable (Result<Response, any Error>) -> Void] = []

    var counts: (sends: Int, cancels: Int) {
        lock.lock()
        defer { lock.unlock() }
        return (sends, cancels)
    }

    func send(
        _ request: BackendRequest, completion: @escaping @Sendable (Result<Response, any Error>) -> Void
    ) -> BackendTask {
        lock.lock()
        sends += 1
        completions.append(completion)
        lock.unlock()
        return BackendTask { [self] in
            lock.lock()
            cancels += 1
            lock.unlock()
        }
    }

    /// Answers every pending request late, as a backend that ignores cancellation would.
    func answerAll(_ request: URLRequest) {
        lock.lock()
        let pending = completions
        completions = []
        lock.unlock()
        for completion in pending { completion(.success(Response(request: request, statusCode: 200))) }
    }
}

@Suite struct CancellationTests {
    let backend = HangingBackend()
    let realm: ServiceRealm

    init() {
        realm = uniqueRealm().setBaseURL(URL(string: "https://api.example.com")!).use(backend)
    }

    @Test func cancellingTheHandleDeliversCancelledOnceAndReachesTheBackend() async throws {
        let recorder = CallbackRecorder<Result<Response, ServiceError>>()
        let handle = TestEndpoint(realm, "x").request { recorder.record($0) }
        #expect(!handle.isFinished)
        handle.cancel()
        guard case .failure(.cancelled) = try await recorder.first() else {
            Issue.record("expected .cancelled"); return
        }
        #expect(backend.counts.cancels == 1)
        backend.answerAll(try TestEndpoint(realm, "x").urlRequest())
        handle.cancel()
        #expect(try await recorder.count(after: 0.1) == 1)
        #expect(handle.isCancelled)
    }

    @Test func cancellingAfterTheAnswerChangesNothing() async throws {
        realm.use(.stub)
        let recorder = CallbackRecorder<Result<Response, ServiceError>>()
        let handle = TestEndpoint(realm, "x").request { recorder.record($0) }
        handle.cancel()
        #expect(try await recorder.count(after: 0.05) == 1)
        #expect(try recorder.calls[0].get().statusCode == 200)
        #expect(!handle.isCancelled)
    }

    @Test func cancellingTheTaskThrowsCancelledAndReachesTheBackend() async throws {
        let task = Task { try await TestEndpoint(realm, "x").request() }
        while backend.counts.sends == 0 { try await Task.sleep(nanoseconds: 1_000_000) }
        task.cancel()
        await #expect {
            try await task.value
        } throws: { error in
            if case ServiceError.cancelled = error { true } else { false }
        }
        #expect(backend.counts.cancels == 1)
    }

    @Test func aTaskCancelledBeforeItsRequestStartsSendsNothing() async throws {
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await TestEndpoint(realm, "x").request()
        }
        await #expect {
            try await task.value
        } throws: { error in
            if case ServiceError.cancelled = error { true } else { false }
        }
        #expect(backend.counts.sends == 0)
    }

    @Test func everyCallbackRunsExactlyOnceUnderRacingCancellations() async throws {
        // The requests that are cancelled (even indices, /cancelled) are answered an hour later, under a
        // 2-hour timeout: only the cancel can end them, however long a loaded machine stalls a thread
        // between request() and cancel(). The others (/answered) are answered after 0.05 s.
        let stub = StubBackend(.delayed(0.05))
            .on(.path("/cancelled"), answer: StubBackend.Answer.sampleData.delayed(3600))
        realm.setTimeout(7200).use(stub)
        let count = 2_000
        let recorders = (0..<count).map { _ in CallbackRecorder<Result<Response, ServiceError>>() }
        let realm = realm
        // Off the cooperative pool: concurrentPerform blocks its thread until every iteration is done.
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                DispatchQueue.concurrentPerform(iterations: count) { index in
                    let cancelled = index.isMultiple(of: 2)
                    let endpoint = TestEndpoint(realm, cancelled ? "cancelled" : "answered")
                    let handle = endpoint.request { recorders[index].record($0) }
                    if cancelled { handle.cancel() }
                }
                done.resume()
            }
        }
        for recorder in recorders { _ = try await recorder.first() }
        try await Task.sleep(nanoseconds: 100_000_000)
        #expect(recorders.allSatisfy { $0.calls.count == 1 })
        for index in stride(from: 0, to: count, by: 2) {
            guard case .failure(.cancelled) = recorders[index].calls[0] else {
                Issue.record(
                    "request \(index) was cancelled before it could answer, yet got \(recorders[index].calls[0])"
                )
                break
            }
        }
    }

    @Test func aCancelledCRUDPromiseTellsEveryWaiter() async throws {
        let service = Service(baseURL: URL(string: "https://api.example.com/users")!)
        realm.register(service)
        let promise = service.retrieve("1")
        let early = CallbackRecorder<ServiceResult>()
        promise.then { early.record($0) }
        let waiter = Task { try await promise.value }
        try await Task.sleep(nanoseconds: 20_000_000)
        promise.cancel()
        let late = CallbackRecorder<ServiceResult>()
        promise.then { late.record($0) }
        for recorder in [early, late] {
            guard case .cancelled? = try await recorder.first().error else {
                Issue.record("expected .cancelled"); return
            }
        }
        await #expect(throws: ServiceError.self) { try await waiter.value }
        #expect(backend.counts.cancels == 1)
    }

    @Test func cancellingTheOnlyTaskAwaitingAPromiseCancelsItsRequest() async throws {
        let service = Service(baseURL: URL(string: "https://api.example.com/users")!)
        realm.register(service)
        let task = Task { try await service.retrieve("1").value }
        while backend.counts.sends == 0 { try await Task.sleep(nanoseconds: 1_000_000) }
        task.cancel()
        await #expect(throws: ServiceError.self) { try await task.value }
        #expect(backend.counts.cancels == 1)
    }
}
