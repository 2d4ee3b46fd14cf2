import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// Hand-written. The other samples are only compiled; these run. They are the CRUD samples because the realm
// they use, "jsonplaceholder", is used by no other test in the process (ContractSamplesTests owns "users").

/// The README's "CRUD services" sample and Migrating from iService's, sent to a stub in place of
/// jsonplaceholder.typicode.com: each call sends the request the docs describe.
@Test func theCRUDSamplesSendTheRequestsTheyDescribe() async throws {
    let stub = StubBackend { _ in .json(#"{"id": 1, "name": "Leanne Graham"}"#) }
    ServiceRealm.get("jsonplaceholder").use(stub)

    try await ReadmeSamples.sample19()
    try await MigratingFromIServiceSamples.sample1()

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
