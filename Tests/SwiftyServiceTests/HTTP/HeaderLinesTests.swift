import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@testable import SwiftyService

/// A head's lines as CurlBackend keeps them, parsed into fields only when asked for.
@Suite struct HeaderLinesTests {
    static func lines(_ text: [String]) -> HeaderLines {
        var lines = HeaderLines()
        for var line in text { line.withUTF8 { lines.append(UnsafeRawBufferPointer($0)) } }
        return lines
    }

    @Test func fieldsAreTrimmedAndARepeatedNameIsJoinedUnderItsFirstSpelling() {
        let fields = Self.lines([
            "Content-Type:  application/json \t", "X-Seen: 1", "Vary: Accept", "x-seen:2", "no colon here",
            "X-SEEN: 3", "Empty:",
        ]).fields
        #expect(fields.fields.map(\.name) == ["Content-Type", "X-Seen", "Vary", "Empty"])
        #expect(fields.value(for: "content-type") == "application/json")
        #expect(fields.value(for: "X-Seen") == "1, 2, 3")
        #expect(fields.value(for: "Empty") == "")
    }

    @Test func noLinesAreNoFields() {
        #expect(HeaderLines().fields.isEmpty)
        var lines = Self.lines(["A: 1"])
        lines.removeAll()
        #expect(lines.fields.isEmpty)
    }

    /// The fields are parsed once, under a lock that making the `HTTPURLResponse` also takes: readers on many
    /// threads at once, in either order, all see the same fields.
    @Test(.timeLimit(.minutes(5)))
    func aResponsesFieldsAndItsHTTPURLResponseAgreeWhenReadFromManyTasksAtOnce() async {
        let request = URLRequest(url: URL(string: "http://example.test/x")!)
        for round in 0..<50 {
            let response = Response(
                sent: .given(request), statusCode: 200,
                lines: Self.lines(["ETag: \"\(round)\"", "Age: 1", "age: 2"]), data: Data())
            let seen = await withTaskGroup(of: [String?].self) { group in
                for task in 0..<8 {
                    group.addTask {
                        if task % 2 == 0 { _ = response.response }
                        return [
                            response.header("etag"), response.header("Age"),
                            response.response.value(forHTTPHeaderField: "ETag"),
                        ]
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(seen.count == 8)
            #expect(seen.allSatisfy { $0 == ["\"\(round)\"", "1, 2", "\"\(round)\""] })
        }
    }
}
