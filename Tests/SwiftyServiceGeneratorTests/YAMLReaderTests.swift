import Foundation
import Testing

@testable import SwiftyServiceGeneratorCore

/// The YAML API descriptions are written in, read into the values a reader of YAML 1.2 gives.
@Suite struct YAMLReaderTests {
    func yaml(_ text: String) throws -> JSON { try TextInput.read(Array(text.utf8)) }

    func json(_ text: String) throws -> JSON { try JSONReader.read(Array(text.utf8)) }

    func failure(_ text: String) -> SyntaxError? {
        do {
            _ = try YAMLReader.read(Array(text.utf8))
            return nil
        } catch {
            return error
        }
    }

    @Test func blockMappingsAndSequencesNest() throws {
        let text = """
            openapi: 3.0.0
            info:
              title: Pets
              tags:
                - a
                - b
            list:
            - one
            - two: 2
              three: 3
            -   - nested
                - again
            """
        #expect(
            try yaml(text)
                == json(
                    #"{"openapi": "3.0.0", "info": {"title": "Pets", "tags": ["a", "b"]}, "list": ["one", {"two": 2, "three": 3}, ["nested", "again"]]}"#
                ))
    }

    @Test func flowCollectionsReadAsJSONDoes() throws {
        let text = """
            a: [1, two, "three", {four: 4, "five": [5]}, ]
            b: {x: 1,
              y: [a, b],
              z: {}}
            c: [k: v, {}]
            d: []
            e: {"json":"style","n":-1.5e3}
            """
        #expect(
            try yaml(text)
                == json(
                    #"{"a": [1, "two", "three", {"four": 4, "five": [5]}], "b": {"x": 1, "y": ["a", "b"], "z": {}}, "c": [{"k": "v"}, {}], "d": [], "e": {"json": "style", "n": -1500.0}}"#
                ))
    }

    @Test func plainScalarsFoldOverLinesAndKeepColonsAndHashesInside() throws {
        let text = """
            url: http://example.com/a#b
            words: one
              two

              three
            time: 12:30
            comment: value # a comment
            """
        #expect(
            try yaml(text)
                == json(
                    #"{"url": "http://example.com/a#b", "words": "one two\nthree", "time": "12:30", "comment": "value"}"#
                ))
    }

    @Test func quotedScalarsUnescapeAndFold() throws {
        let text = #"""
            single: 'it''s "here"'
            double: "tab\there \u00e9 \x41 \U0001F600 \\ \/ \" end"
            folded: "one
              two\
              three"
            empty: ''
            """#
        #expect(
            try yaml(text)
                == json(
                    #"{"single": "it's \"here\"", "double": "tab\there é A 😀 \\ / \" end", "folded": "one twothree", "empty": ""}"#
                ))
    }

    @Test func blockScalarsKeepOrFoldLinesAndChompAsAsked() throws {
        let text = """
            literal: |
              line one
                indented
              line three

            folded: >
              folded
              text

              new paragraph
            strip: |-
              no newline
            keep: |+
              kept

            explicit: |2
                four spaces
            last: end
            """
        #expect(
            try yaml(text)
                == json(
                    #"{"literal": "line one\n  indented\nline three\n", "folded": "folded text\nnew paragraph\n", "strip": "no newline", "keep": "kept\n\n", "explicit": "  four spaces\n", "last": "end"}"#
                ))
    }

    @Test func scalarsResolveByTheYAML12CoreSchema() throws {
        let text = """
            - ~
            - null
            - Null
            -
            - true
            - False
            - yes
            - no
            - on
            - 42
            - -7
            - +3
            - 0o17
            - 0x1F
            - 0777
            - 1_000
            - 1.5
            - 1e3
            - .5
            - .inf
            - -.Inf
            - 2019-01-01
            - "42"
            - '1.5'
            - !!str 12
            - !!int "12"
            - 1.0
            """
        let values = try #require(try yaml(text).array)
        let expected: [JSON] = [
            .null, .null, .null, .null, .bool(true), .bool(false), .string("yes"), .string("no"), .string("on"),
            .integer(42), .integer(-7), .integer(3), .integer(15), .integer(31), .integer(777), .string("1_000"),
            .double(1.5), .double(1000), .double(0.5), .double(.infinity), .double(-.infinity),
            .string("2019-01-01"), .string("42"), .string("1.5"), .string("12"), .integer(12), .double(1),
        ]
        #expect(values == expected)
        #expect(try yaml("- .nan").array?.first?.number?.isNaN == true)
    }

    @Test func keysAreTheirScalarsText() throws {
        let text = """
            responses:
              200: ok
              2XX: range
              default: other
              true: yes
            """
        #expect(try yaml(text) == json(#"{"responses": {"200": "ok", "2XX": "range", "default": "other", "true": "yes"}}"#))
    }

    @Test func aliasesCopyAnchoredValuesAndMergeKeysMergeThem() throws {
        let text = """
            base: &base
              a: 1
              b: 2
            other: &other {c: 3, a: 9}
            merged:
              <<: *base
              b: 20
            both:
              <<: [*base, *other]
              d: 4
            copy: *base
            list: [&x one, *x]
            """
        #expect(
            try yaml(text)
                == json(
                    #"{"base": {"a": 1, "b": 2}, "other": {"c": 3, "a": 9}, "merged": {"a": 1, "b": 20}, "both": {"c": 3, "a": 1, "b": 2, "d": 4}, "copy": {"a": 1, "b": 2}, "list": ["one", "one"]}"#
                ))
    }

    @Test func aStreamMayHoldSeveralDocuments() throws {
        let documents = try YAMLReader.read(Array("%YAML 1.2\n---\na: 1\n...\n---\n- b\n---\n".utf8))
        #expect(documents == [try json(#"{"a": 1}"#), try json(#"["b"]"#), .null])
        #expect(throws: SyntaxError.self) { try yaml("a: 1\n---\nb: 2\n") }
    }

    @Test func commentsAndBlankLinesAreIgnoredEverywhere() throws {
        let text = """
            # leading comment

            a: # after a key
              # between
              b: 1 # after a value
            # trailing
            c:
              - x # in a list
            """
        #expect(try yaml(text) == json(#"{"a": {"b": 1}, "c": ["x"]}"#))
    }

    @Test func errorsNameTheLineAndColumn() {
        let cases: [(String, Int, Int, String)] = [
            ("a: 1\nb: 2\n  c: 3\n", 3, 4, "a mapping value is not allowed here"),
            ("a:\n\t- b\n", 2, 2, "a tab cannot indent"),
            ("a: 'open\n", 1, 4, "does not end"),
            ("a: *missing\n", 1, 4, "has no anchor"),
            ("a: 1\na: 2\n", 2, 1, "appears twice"),
            ("a: [1, 2\nb: 3\n", 2, 2, "expected ',' or ']' in the sequence"),
            ("- a\nb: 1\n", 2, 1, "expected another '-' entry"),
            ("a: \"\\q\"\n", 1, 6, "unknown escape"),
            ("a: ]\n", 1, 4, "without the opening bracket"),
        ]
        for (text, line, column, message) in cases {
            let error = failure(text)
            #expect(error?.position == TextPosition(line: line, column: column), "\(text.debugDescription): \(String(describing: error))")
            #expect(error?.message.contains(message) == true, "\(text.debugDescription): \(String(describing: error))")
        }
    }

    @Test func invalidUTF8IsAnErrorAtItsPlace() {
        var bytes = Array("a: b\nc: ".utf8)
        bytes += [0xC3, 0x28]
        #expect(throws: SyntaxError(message: "the text is not valid UTF-8", position: TextPosition(line: 2, column: 4))) {
            try YAMLReader.read(bytes)
        }
    }

    @Test func aliasesThatExpandWithoutBoundAreRefused() {
        var text = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
        for level in 1...8 {
            text += "a\(level): &a\(level) [" + Array(repeating: "*a\(level - 1)", count: 10).joined(separator: ", ") + "]\n"
        }
        #expect(failure(text)?.message.contains("expand to more than") == true)
    }

    @Test func deepNestingIsRefusedRatherThanRecursedInto() {
        let text = String(repeating: "[", count: 5000) + String(repeating: "]", count: 5000)
        #expect(failure(text)?.message.contains("nest deeper") == true)
    }
}

/// Broken text of every kind fails with a position inside the text, never a crash or a hang.
@Suite struct YAMLRobustnessTests {
    @Test func mutatedDescriptionsFailWithAPositionOrReadNeverCrash() throws {
        let original = try [UInt8](
            Data(contentsOf: GeneratorTests.resources.appendingPathComponent("Fixtures/zoo/openapi.yaml")))
        let json = try [UInt8](
            Data(contentsOf: GeneratorTests.resources.appendingPathComponent("Descriptions/oai/petstore-expanded.json")))
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array(":-?[]{},#&*!|>'\"%@` \t\n\r\\/.0123456789abc~".utf8) + [0x00, 0xC3, 0xFF]
        for source in [original, json] {
            for _ in 0..<1500 {
                var bytes = source
                for _ in 0..<Int.random(in: 1...4, using: &generator) {
                    let at = Int.random(in: 0..<bytes.count, using: &generator)
                    switch Int.random(in: 0..<4, using: &generator) {
                    case 0: bytes[at] = alphabet.randomElement(using: &generator)!
                    case 1: bytes.insert(alphabet.randomElement(using: &generator)!, at: at)
                    case 2: bytes.remove(at: at)
                    default: bytes = Array(bytes[..<at])
                    }
                    if bytes.isEmpty { break }
                }
                do {
                    _ = try TextInput.read(bytes)
                } catch {
                    let lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false).count
                    #expect(error.position.line >= 1 && error.position.line <= lines + 1, "\(error)")
                    #expect(error.position.column >= 1, "\(error)")
                    #expect(!error.message.isEmpty)
                }
            }
        }
    }
}
