import Foundation

/// The http-tests/cache-tests suite's test definitions, as the suite exports them (Tests/CacheTests/README.md
/// says how they were made), and its rules for turning a run into results.
enum CacheSuite {
    /// Any JSON value, numbers kept as integers where they are: the server reads an integer date as seconds
    /// from now, and the configuration is sent back to it as read.
    indirect enum JSON: Codable, Sendable, Equatable {
        case null, bool(Bool), int(Int), double(Double), string(String), array([JSON]), object([String: JSON])

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() {
                self = .null
            } else if let bool = try? container.decode(Bool.self) {
                self = .bool(bool)
            } else if let int = try? container.decode(Int.self) {
                self = .int(int)
            } else if let double = try? container.decode(Double.self) {
                self = .double(double)
            } else if let string = try? container.decode(String.self) {
                self = .string(string)
            } else if let array = try? container.decode([JSON].self) {
                self = .array(array)
            } else {
                self = .object(try container.decode([String: JSON].self))
            }
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .null: try container.encodeNil()
            case let .bool(value): try container.encode(value)
            case let .int(value): try container.encode(value)
            case let .double(value): try container.encode(value)
            case let .string(value): try container.encode(value)
            case let .array(value): try container.encode(value)
            case let .object(value): try container.encode(value)
            }
        }

        subscript(key: String) -> JSON? {
            guard case let .object(members) = self else { return nil }
            return members[key]
        }

        subscript(index: Int) -> JSON? {
            guard case let .array(items) = self, items.indices.contains(index) else { return nil }
            return items[index]
        }

        var string: String? {
            if case let .string(value) = self { return value }
            return nil
        }

        var int: Int? {
            if case let .int(value) = self { return value }
            return nil
        }

        var bool: Bool? {
            if case let .bool(value) = self { return value }
            return nil
        }

        var array: [JSON] {
            if case let .array(items) = self { return items }
            return []
        }

        /// The value as JavaScript's `String(value)` writes it, for a header sent from a number.
        var text: String {
            switch self {
            case .null: "null"
            case let .bool(value): value ? "true" : "false"
            case let .int(value): String(value)
            case let .double(value): String(value)
            case let .string(value): value
            case .array(let items): items.map(\.text).joined(separator: ",")
            case .object: "[object Object]"
            }
        }
    }

    /// One test of the suite.
    struct Test: Sendable {
        let id: String
        let name: String
        /// `required`, `optimal` or `check` (an informational test).
        let kind: String
        let dependsOn: [String]
        /// The request configurations, as the runner sends them to the server: with the test's name and id.
        let requests: [JSON]
        /// Whether a browser's (private) cache is tested by it: the suite leaves out tests for shared caches
        /// only (`cdn_only`) and those it skips for browsers (`browser_skip`).
        let appliesToPrivateCaches: Bool

        init(_ json: JSON) throws {
            guard let id = json["id"]?.string, let name = json["name"]?.string else {
                throw CacheSuiteError(description: "a test without an id or name: \(json)")
            }
            self.id = id
            self.name = name
            kind = json["kind"]?.string ?? "required"
            dependsOn = json["depends_on"]?.array.compactMap(\.string) ?? []
            requests =
                json["requests"]?.array.map { request in
                    guard case var .object(members) = request else { return request }
                    members["name"] = .string(name)
                    members["id"] = .string(id)
                    return .object(members)
                } ?? []
            appliesToPrivateCaches = json["cdn_only"]?.bool != true && json["browser_skip"]?.bool != true
        }
    }

    /// The tests a private cache is run against, in the suite's order.
    static func load() throws -> [Test] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(
                "CacheTests/cache-tests.json")
        let suites = try JSONDecoder().decode(JSON.self, from: Data(contentsOf: url))
        return try suites.array.flatMap { suite in try (suite["tests"]?.array ?? []).map(Test.init) }
            .filter(\.appliesToPrivateCaches)
    }

    /// How one test ended, as the suite's runner records it: passed, or the kind of error and its message.
    enum Outcome: Sendable, Equatable {
        case passed
        /// `Assertion` (the cache did something else), `Setup` (a step the test builds on did not hold; with
        /// `retry` when the server saw a request twice), `AbortError` (timed out) or another error's name.
        case failed(kind: String, message: String)
    }

    /// A test's result as the suite's summary shows it (test-engine/lib/results.mjs).
    enum Result: String, Sendable {
        case pass, fail, optionalFail = "optional_fail", yes, no, setupFail = "setup_fail"
        case harnessFail = "harness_fail", dependencyFail = "dependency_fail", retry, untested
    }

    /// The result of `id`, honouring the tests it depends on: a test whose dependency did not pass (or
    /// say yes) counts as a dependency failure, whatever it did itself.
    static func result(of id: String, in tests: [String: Test], outcomes: [String: Outcome]) -> Result {
        guard let test = tests[id], let outcome = outcomes[id] else { return .untested }
        for dependency in test.dependsOn
        where ![.pass, .yes].contains(result(of: dependency, in: tests, outcomes: outcomes)) {
            return .dependencyFail
        }
        if case let .failed(kind, message) = outcome {
            if kind == "Setup" { return message == "retry" ? .retry : .setupFail }
            if kind == "AbortError" { return .harnessFail }
        }
        let passed = outcome == .passed
        switch test.kind {
        case "optimal": return passed ? .pass : .optionalFail
        case "check": return passed ? .yes : .no
        default: return passed ? .pass : .fail
        }
    }
}

/// The suite's data or a run of it went wrong in a way that says nothing about the cache.
struct CacheSuiteError: Error, CustomStringConvertible {
    let description: String
}
