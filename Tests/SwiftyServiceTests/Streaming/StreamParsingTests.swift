import Foundation
import SwiftyService
import Testing

/// The WHATWG EventSource parsing rules, one row each, and the line rules under them.
@Suite struct ServerSentEventParserTests {
    struct Row: CustomTestStringConvertible, Sendable {
        let rule: String
        let input: String
        let events: [ServerSentEvent]
        var testDescription: String { rule }
    }

    static let table: [Row] = [
        Row(rule: "a blank line dispatches", input: "data: a\n\n", events: [ServerSentEvent(data: "a")]),
        Row(rule: "no blank line, no event", input: "data: a\n", events: []),
        Row(
            rule: "a leading BOM is skipped", input: "\u{FEFF}data: a\n\n",
            events: [ServerSentEvent(data: "a")]),
        Row(
            rule: "only one BOM is skipped", input: "\u{FEFF}\u{FEFF}data: a\n\ndata: b\n\n",
            events: [ServerSentEvent(data: "b")]),
        Row(
            rule: "comments are ignored", input: ": hi\ndata: a\n: there\n\n",
            events: [ServerSentEvent(data: "a")]),
        Row(
            rule: "data lines join with LF", input: "data: a\ndata: b\ndata\n\n",
            events: [ServerSentEvent(data: "a\nb\n")]),
        Row(
            rule: "one space after the colon goes", input: "data:  a \n\n",
            events: [ServerSentEvent(data: " a ")]),
        Row(rule: "no space after the colon", input: "data:a\n\n", events: [ServerSentEvent(data: "a")]),
        Row(rule: "a field without a colon is empty", input: "data\n\n", events: [ServerSentEvent(data: "")]),
        Row(
            rule: "an empty data field still dispatches", input: "data:\n\n",
            events: [ServerSentEvent(data: "")]),
        Row(rule: "no data, no event", input: "event: x\nid: 1\n\n", events: []),
        Row(
            rule: "event sets the type, for one event", input: "event: add\ndata: 1\n\ndata: 2\n\n",
            events: [ServerSentEvent(event: "add", data: "1"), ServerSentEvent(data: "2")]),
        Row(
            rule: "id carries over", input: "id: 7\ndata: a\n\ndata: b\n\n",
            events: [ServerSentEvent(data: "a", id: "7"), ServerSentEvent(data: "b", id: "7")]),
        Row(
            rule: "an empty id resets it", input: "id: 7\ndata: a\n\nid\ndata: b\n\n",
            events: [ServerSentEvent(data: "a", id: "7"), ServerSentEvent(data: "b", id: "")]),
        Row(
            rule: "an id with NUL is ignored", input: "id: 1\ndata: a\n\nid: 2\u{0}\ndata: b\n\n",
            events: [ServerSentEvent(data: "a", id: "1"), ServerSentEvent(data: "b", id: "1")]),
        Row(
            rule: "retry takes digits", input: "retry: 250\ndata: a\n\n",
            events: [ServerSentEvent(data: "a", retry: 250)]),
        Row(
            rule: "retry ignores the rest", input: "retry: 2s\ndata: a\n\n",
            events: [ServerSentEvent(data: "a")]),
        Row(
            rule: "unknown fields are ignored", input: "foo: bar\ndata: a\n\n",
            events: [ServerSentEvent(data: "a")]),
        Row(
            rule: "field names are case-sensitive", input: "Data: a\ndata: b\n\n",
            events: [ServerSentEvent(data: "b")]),
        Row(
            rule: "CRLF ends lines", input: "data: a\r\ndata: b\r\n\r\n",
            events: [ServerSentEvent(data: "a\nb")]),
        Row(rule: "CR ends lines", input: "data: a\rdata: b\r\r", events: [ServerSentEvent(data: "a\nb")]),
        Row(
            rule: "mixed line ends", input: "data: a\r\n\rdata: b\n\r\n",
            events: [ServerSentEvent(data: "a"), ServerSentEvent(data: "b")]),
        Row(
            rule: "a colon in the value stays", input: "data: a: b\n\n",
            events: [ServerSentEvent(data: "a: b")]),
        Row(rule: "UTF-8 data", input: "data: héllo €\n\n", events: [ServerSentEvent(data: "héllo €")]),
    ]

    @Test(arguments: table)
    func parsesByTheRule(_ row: Row) throws {
        var parser = ServerSentEventParser()
        var events = try parser.parse(Data(row.input.utf8))
        try parser.finish()
        events += try parser.parse(Data())
        #expect(events == row.events, "\(row.rule)")
    }

    @Test func anEventPastTheLimitThrows() throws {
        var parser = ServerSentEventParser(maxEventSize: 10)
        #expect(throws: StreamItemTooLarge.self) {
            _ = try parser.parse(Data("data: 123456\ndata: 123456\n\n".utf8))
        }
        var lines = ServerSentEventParser(maxEventSize: 10)
        #expect(throws: StreamItemTooLarge.self) {
            _ = try lines.parse(Data(String(repeating: "x", count: 20).utf8))
        }
    }

    @Test func theReconnectionTimeIsKept() throws {
        var parser = ServerSentEventParser()
        _ = try parser.parse(Data("retry: 1500\n\n".utf8))
        #expect(parser.reconnectionTime == 1500)
    }
}

@Suite struct LineSplitterTests {
    @Test func everyLineEndCounts() throws {
        var splitter = LineSplitter()
        var lines = try splitter.split(Data("a\nb\r\nc\rd\r".utf8))
        lines += try splitter.split(Data("\ne".utf8))
        lines += try splitter.finish().map { [$0] } ?? []
        #expect(lines == ["a", "b", "c", "d", "e"])
    }

    @Test func aCharacterSplitAcrossChunksComesBackWhole() throws {
        var splitter = LineSplitter()
        let bytes = Array("é€😀\n".utf8)
        var lines: [String] = []
        for byte in bytes { lines += try splitter.split(Data([byte])) }
        #expect(lines == ["é€😀"])
    }

    @Test func aLongLineThrowsEvenInPieces() throws {
        var splitter = LineSplitter(maxLineLength: 8)
        _ = try splitter.split(Data("12345".utf8))
        #expect(throws: StreamItemTooLarge.self) { _ = try splitter.split(Data("6789".utf8)) }
        #expect(
            StreamItemTooLarge(item: "line", limit: 8).description == "a streamed line is longer than 8 bytes"
        )
    }
}

/// The chunks a body arrives in change nothing: split at random boundaries, the same lines and events.
@Suite struct StreamSplitPropertyTests {
    static let bodies: [String] = [
        "\u{FEFF}data: a\r\ndata: b\r\n\r\n: comment\nid: 7\nevent: tick\nretry: 300\ndata\n\n",
        "data: h\u{E9}llo \u{20AC} \u{1F600}\rdata:x\r\r\nid\nid: 1\u{0}\ndata: y\n\nline without end",
        "a\r\nb\rc\nd\r\r\n\n",
        String(repeating: "data: token \u{1F600}\r\nid: 42\r\n\r\n", count: 50),
    ]

    @Test func randomChunkingGivesTheSameLinesAndEvents() throws {
        for body in Self.bodies {
            for _ in 0..<200 {
                // The fuzz target is the oracle; a random seed makes each run another split.
                try FuzzTargets.streamSplitChunks(
                    body: Array(body.utf8), seed: UInt64.random(in: 0...UInt64.max))
            }
        }
    }
}
