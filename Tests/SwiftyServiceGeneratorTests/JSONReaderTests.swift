import Foundation
import Testing

@testable import SwiftyServiceGeneratorCore

/// JSON descriptions read as Foundation reads them, keeping the order of members that Foundation loses.
@Suite struct JSONReaderTests {
    static let descriptions = YAMLReferenceTests.testsDirectory.appendingPathComponent("Resources/Descriptions")

    @Test func theJSONDescriptionsReadAsJSONSerializationReadsThem() throws {
        for path in ["github/api.github.com.json", "oai/petstore-expanded.json"] {
            let data = try Data(contentsOf: Self.descriptions.appendingPathComponent(path))
            let ours = try JSONReader.read([UInt8](data))
            let theirs = try JSONSerialization.jsonObject(with: data)
            #expect(Self.same(ours, theirs), "\(path)")
        }
    }

    static func same(_ ours: JSON, _ theirs: Any) -> Bool {
        switch ours {
        case .null: return theirs is NSNull
        case let .bool(value): return (theirs as? NSNumber).map { $0 == NSNumber(value: value) } ?? false
        case let .integer(value): return (theirs as? NSNumber)?.int64Value == value
        case let .double(value): return (theirs as? NSNumber)?.doubleValue == value
        case let .string(value): return theirs as? String == value
        case let .array(elements):
            guard let others = theirs as? [Any], others.count == elements.count else { return false }
            return zip(elements, others).allSatisfy { same($0, $1) }
        case let .object(object):
            guard let others = theirs as? [String: Any], others.count == object.count else { return false }
            return object.members.allSatisfy { member in others[member.key].map { same(member.value, $0) } ?? false }
        }
    }

    @Test func membersKeepTheDocumentsOrder() throws {
        let value = try JSONReader.read(Array(#"{"zeta": 1, "alpha": {"b": 2, "a": 1}, "mid": [3, 1, 2]}"#.utf8))
        #expect(value.object?.keys == ["zeta", "alpha", "mid"])
        #expect(value["alpha"]?.object?.keys == ["b", "a"])
    }

    @Test func escapesAndNumbersReadExactly() throws {
        let value = try JSONReader.read(Array(#"["a\"b\\c\/d\n\t\u00e9\ud83d\ude00", 9223372036854775807, -0.5, 1e2, 12345678901234567890]"#.utf8))
        #expect(
            value
                == .array([
                    .string("a\"b\\c/d\n\té😀"), .integer(.max), .double(-0.5), .double(100), .double(1.2345678901234567e19),
                ]))
    }

    @Test func errorsNameTheLineAndColumn() {
        let cases: [(String, Int, Int)] = [
            ("{\n  \"a\": 1,\n  \"b\" 2\n}", 3, 7),
            ("[1, 2", 1, 6),
            ("{\"a\": tru}", 1, 7),
            ("\"\\ud800\"", 1, 8),
            ("[1] 2", 1, 5),
        ]
        for (text, line, column) in cases {
            #expect(throws: SyntaxError.self) { try JSONReader.read(Array(text.utf8)) }
            do {
                _ = try JSONReader.read(Array(text.utf8))
            } catch {
                #expect(error.position == TextPosition(line: line, column: column), "\(text.debugDescription): \(error)")
            }
        }
    }

    @Test func aDescriptionInYAMLFlowSyntaxIsStillRead() throws {
        let value = try TextInput.read(Array("{openapi: 3.1.0, paths: {}}".utf8))
        #expect(value["openapi"] == .string("3.1.0"))
        #expect(value["paths"] == .object(JSONObject([])))
    }
}
