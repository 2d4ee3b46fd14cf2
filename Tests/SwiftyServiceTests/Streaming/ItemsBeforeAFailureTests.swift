import Foundation
import SwiftyService
import Testing

/// An item that fails — a line or event past its limit — ends the items, but never costs the ones before it:
/// they come out in order, then the error, whether the body came whole or byte by byte.
@Suite struct ItemsBeforeAFailureTests {
    /// Two short lines, one of 20 bytes, then one more: with a limit of 8, the third is too long.
    static let lines = Data("a\nbb\n\(String(repeating: "x", count: 20))\nlast\n".utf8)
    /// Two events, then one whose data is 20 bytes, then one more: with a limit of 8, the third is too large.
    static let events = Data(
        "id: 1\ndata: a\n\nid: 2\ndata: bb\n\nid: 3\ndata: \(String(repeating: "x", count: 20))\n\ndata: last\n\n"
            .utf8)

    /// What a reader gets feeding `chunks` one by one to `parse`, then `finish`: the items, and whether an
    /// error came after them.
    static func read<Item>(
        _ chunks: [Data], _ parse: (Data) throws -> [Item], finish: () throws -> Void
    ) -> (items: [Item], failed: Bool) {
        var items: [Item] = []
        do {
            for chunk in chunks { items += try parse(chunk) }
            try finish()
            return (items, false)
        } catch {
            return (items, true)
        }
    }

    static func bytes(of data: Data) -> [Data] { data.map { Data([$0]) } }

    @Test func theLinesBeforeATooLongOneComeFirstThenTheError() throws {
        var splitter = LineSplitter(maxLineLength: 8)
        #expect(try splitter.split(Self.lines) == ["a", "bb"], "the chunk's lines before the long one")
        #expect(throws: StreamItemTooLarge.self) { _ = try splitter.finish() }
        #expect(throws: StreamItemTooLarge.self, "and every call after") {
            _ = try splitter.split(Data("c\n".utf8))
        }
    }

    @Test func theLinesAreTheSameWholeOrByteByByte() {
        for chunks in [[Self.lines], Self.bytes(of: Self.lines)] {
            var splitter = LineSplitter(maxLineLength: 8)
            let read = Self.read(chunks, { try splitter.split($0) }, finish: { _ = try splitter.finish() })
            #expect(read.items == ["a", "bb"] && read.failed, "\(chunks.count) chunks")
        }
    }

    @Test func aChunkWithNothingBeforeTheLongLineThrowsAtOnce() {
        var splitter = LineSplitter(maxLineLength: 8)
        #expect(throws: StreamItemTooLarge.self) { _ = try splitter.split(Data("123456789\n".utf8)) }
    }

    @Test func theEventsBeforeATooLargeOneComeFirstThenTheError() throws {
        var parser = ServerSentEventParser(maxEventSize: 8)
        let events = try parser.parse(Self.events)
        #expect(events == [ServerSentEvent(data: "a", id: "1"), ServerSentEvent(data: "bb", id: "2")])
        #expect(parser.lastEventID == "2", "the third block never ended: its id does not count")
        #expect(throws: StreamItemTooLarge.self) { try parser.finish() }
    }

    @Test func theEventsAreTheSameWholeOrByteByByte() {
        for chunks in [[Self.events], Self.bytes(of: Self.events)] {
            var parser = ServerSentEventParser(maxEventSize: 8)
            let read = Self.read(chunks, { try parser.parse($0) }, finish: { try parser.finish() })
            #expect(read.items.map(\.data) == ["a", "bb"] && read.failed, "\(chunks.count) chunks")
        }
    }
}

/// The last event ID as the WHATWG standard keeps it: a buffer that `id` fields set, copied at each blank line
/// into the last event ID string, with or without an event.
@Suite struct LastEventIDTests {
    @Test func theLastEventIDIsNeverAheadOfTheEventsReturned() throws {
        var parser = ServerSentEventParser()
        #expect(try parser.parse(Data("id: 1\ndata: a\n\nid: 2\ndata: b".utf8)).map(\.id) == ["1"])
        #expect(parser.lastEventID == "1", "event 2 has not been returned: resuming from 2 would skip it")
        #expect(try parser.parse(Data("\n\n".utf8)).map(\.id) == ["2"])
        #expect(parser.lastEventID == "2")
    }

    @Test func anIDInABlockTheStreamEndsInIsDropped() throws {
        var parser = ServerSentEventParser()
        _ = try parser.parse(Data("id: 1\ndata: a\n\nid: 9\n".utf8))
        try parser.finish()
        #expect(parser.lastEventID == "1")
        #expect(try parser.parse(Data("data: b\n\n".utf8)) == [ServerSentEvent(data: "b", id: "1")])
    }
}
