import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// Hand-written. The other samples are only compiled; these run. They are the CRUD samples because the realm
// they use, "jsonplaceholder", is used by no other test in the process (ContractSamplesTests owns "users").

/// The "CRUD services" article's sample, sent to a stub in place of jsonplaceholder.typicode.com: each call
/// sends the request the article describes.
@Test func theCRUDSamplesSendTheRequestsTheyDescribe() async throws {
    let stub = StubBackend { _ in .json(#"{"id": 1, "name": "Leanne Graham"}"#) }
    ServiceRealm.get("jsonplaceholder").use(stub)

    try await CRUDServicesSamples.sample1()

    // Two calls are not awaited (their results go to `then`): wait until they reach the stub too.
    let deadline = Date().addingTimeInterval(15)
    while stub.received.count < 6, Date() < deadline { try await Task.sleep(nanoseconds: 2_000_000) }
    let sent = stub.received.map(\.urlRequest)
    let users = "https://jsonplaceholder.typicode.com/users"
    let lines = sent.map { "\($0.httpMethod ?? "?") \($0.url?.absoluteString ?? "?")" }
    #expect(lines.sorted() == Array(repeating: "GET \(users)/1", count: 5) + ["POST \(users)"])

    // `create(user)` sends, as JSON, the user that `value(as: User.self)` decoded.
    let create = try #require(sent.first { $0.httpMethod == "POST" })
    #expect(create.value(forHTTPHeaderField: "Content-Type") == "application/json")
    let created = try JSONDecoder().decode(User.self, from: try #require(create.httpBody))
    #expect(created.id == 1 && created.name == "Leanne Graham")
    // The retrieves, the one after the override included, carry no Content-Type.
    let retrieves = sent.filter { $0.httpMethod == "GET" }
    #expect(retrieves.allSatisfy { $0.value(forHTTPHeaderField: "Content-Type") == nil })
}

/// The "Streaming" article's samples, on stubs that stream what the servers would: they run to the end.
@Test func theStreamingSamplesRunOnAStub() async throws {
    let tokens = ["Tux", " waddles", " on", "[DONE]", "never read"].map { Data("data: \($0)\n\n".utf8) }
    let assistant = StubBackend().on(
        .path("/v1/complete", method: .post), answer: .streamed(tokens, every: 0.01))
    ServiceRealm.get("assistant").setBaseURL(URL(string: "https://assistant.test")!).use(assistant)
    try await StreamingSamples.sample1()
    #expect(assistant.received.count == 1)

    let lines = (1...3).map { Data(#"{"id": \#($0), "kind": "update"}"#.utf8 + [10]) }
    let feed = StubBackend().on(.path("/changes"), answer: .streamed(lines))
    ServiceRealm.get("feed").setBaseURL(URL(string: "https://feed.test")!).use(feed)
    try await StreamingSamples.sample2()
    #expect(feed.received.first?.urlRequest.url?.query == "since=0")

    // The callback form and a Service's stream.
    let exports = StubBackend().on(.path("/v1/exports"), answer: .streamed(lines))
    ServiceRealm.get("exports").use(exports)
    try await StreamingSamples.sample3()
    #expect(exports.received.first?.urlRequest.url?.query == "format=jsonl")
    let deadline = Date().addingTimeInterval(10)
    while feed.received.count < 2, Date() < deadline { try await Task.sleep(nanoseconds: 2_000_000) }
    #expect(feed.received.count == 2, "the callback form sent its request")
}
