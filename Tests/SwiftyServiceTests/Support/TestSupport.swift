import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A test's failure to set up, with what to do about it.
struct SetupError: Error, CustomStringConvertible {
    let description: String
}

/// The httpbin server that `scripts/test` starts; tests that need it fail (never skip) without it.
enum HTTPBin {
    static func url() throws -> URL {
        guard let value = ProcessInfo.processInfo.environment["HTTPBIN_URL"], let url = URL(string: value)
        else {
            throw SetupError(
                description: "HTTPBIN_URL is not set: run the tests with scripts/test, which starts httpbin")
        }
        return url
    }

    /// `http://127.0.0.1:PORT/anything`, which echoes method, URL, headers and body.
    static func anything() throws -> URL { try url().appendingPathComponent("anything") }

    /// A realm of its own on httpbin, so that tests running in parallel never share configuration.
    static func realm(_ path: String = "", backend: (any NetworkBackend)? = nil) throws -> ServiceRealm {
        let base = path.isEmpty ? try url() : try url().appendingPathComponent(path)
        let realm = uniqueRealm().setBaseURL(base)
        if let backend { realm.use(backend) }
        return realm
    }
}

/// A realm no other test uses.
func uniqueRealm(_ label: String = "test") -> ServiceRealm {
    ServiceRealm.get("\(label)-\(UUID().uuidString)")
}

/// An endpoint made of values, so that one test can describe exactly the request it needs.
struct TestEndpoint: SwiftyServiceProtocol {
    var realm: ServiceRealm
    var path: String
    var method: HTTPMethod = .get
    var values: [String: any Sendable]?
    var parameterEncoding: ParameterEncoding = .automatic
    var body: RequestBody?
    var headers: HTTPHeaderDictionary?
    var sampleData = Data()
    var validStatusCodes: StatusCodes = .realmDefault
    var ownBaseURL: URL?

    var parameters: [String: Any]? { values }
    var baseURL: URL? { ownBaseURL ?? realm.baseURL }

    init(
        _ realm: ServiceRealm, _ path: String, method: HTTPMethod = .get,
        parameters: [String: any Sendable]? = nil,
        encoding: ParameterEncoding = .automatic, body: RequestBody? = nil,
        headers: HTTPHeaderDictionary? = nil,
        sampleData: Data = Data(), validStatusCodes: StatusCodes = .realmDefault, baseURL: URL? = nil
    ) {
        self.realm = realm
        self.path = path
        self.method = method
        self.values = parameters
        self.parameterEncoding = encoding
        self.body = body
        self.headers = headers
        self.sampleData = sampleData
        self.validStatusCodes = validStatusCodes
        self.ownBaseURL = baseURL
    }
}

/// Records every call of a callback, so a test can wait for the first and check there was only one.
final class CallbackRecorder<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [Value] = []

    func record(_ value: Value) {
        lock.lock()
        values.append(value)
        lock.unlock()
    }

    var calls: [Value] {
        lock.lock()
        defer { lock.unlock() }
        return values
    }

    /// The first call's value; fails the test instead of hanging when there is none within `timeout`.
    /// `timeout` is counted as ``poll(every:for:_:)`` counts it: a backlog of other tests' work does not use it up.
    func first(within timeout: TimeInterval = 15) async throws -> Value {
        if let value = try await poll(for: timeout, { calls.first }) { return value }
        throw SetupError(description: "the callback was not called within \(timeout) s")
    }

    /// The number of calls after waiting `grace` seconds for late, duplicate ones.
    func count(after grace: TimeInterval = 0.3) async throws -> Int {
        try await Task.sleep(nanoseconds: UInt64(grace * 1e9))
        return calls.count
    }
}

/// Wraps a backend and keeps every request that reached it.
final class SpyBackend: NetworkBackend, @unchecked Sendable {
    private let inner: any NetworkBackend
    private let lock = NSLock()
    private var sent: [URLRequest] = []

    init(_ inner: any NetworkBackend = StubBackend()) { self.inner = inner }

    var requests: [URLRequest] {
        lock.lock()
        defer { lock.unlock() }
        return sent
    }

    /// Waits until the backend has been asked to send `count` requests, failing after `seconds`.
    func waitForRequests(_ count: Int, within seconds: TimeInterval = 15) async throws {
        if try await waitUntil(every: 5_000_000, for: seconds, { requests.count >= count }) { return }
        throw SetupError(
            description: "the backend got \(requests.count) of \(count) requests within \(seconds) s")
    }

    func send(
        _ request: BackendRequest, completion: @escaping @Sendable (Result<Response, any Error>) -> Void
    ) -> BackendTask {
        lock.lock()
        sent.append(request.urlRequest)
        lock.unlock()
        return inner.send(request, completion: completion)
    }
}

/// httpbin's JSON echo of a request (`/anything`, `/get`, `/post`…).
struct Echo: Decodable {
    let method: String?
    let url: String
    let args: [String: Arg]
    let headers: [String: String]
    let data: String?
    let form: [String: Arg]?
    let files: [String: Arg]?
    let json: JSONValue?

    /// A query or form value: httpbin gives a string, or a list when a key repeats.
    enum Arg: Decodable, Equatable {
        case one(String)
        case many([String])

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let one = try? container.decode(String.self) {
                self = .one(one)
            } else {
                self = .many(try container.decode([String].self))
            }
        }
    }

    /// A header's value, looked up case-insensitively.
    func header(_ name: String) -> String? {
        headers.first { $0.key.caseInsensitiveCompare(name) == .orderedSame }?.value
    }
}

/// Any JSON value, to compare echoed bodies structurally.
enum JSONValue: Decodable, Equatable {
    case string(String), number(Double), bool(Bool), null, array([JSONValue]), object([String: JSONValue])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let bool = try? container.decode(Bool.self) {
            self = .bool(bool)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let string = try? container.decode(String.self) {
            self = .string(string)
        } else if let array = try? container.decode([JSONValue].self) {
            self = .array(array)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    static func parse(_ data: Data) throws -> JSONValue {
        try JSONDecoder().decode(JSONValue.self, from: data)
    }
}

/// `count` bytes of a repeating pattern, made without a per-byte closure: large test bodies are built on
/// the cooperative thread pool, which every other test shares.
func patternData(count: Int, step: UInt8 = 31) -> Data {
    var bytes = [UInt8](repeating: 0, count: count)
    var value: UInt8 = 0
    for index in 0..<count {
        bytes[index] = value
        value &+= step
    }
    return Data(bytes)
}

/// A thread-safe list, for recording what happened and in which order.
final class Collected<Element: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [Element] = []

    func add(_ item: Element) {
        lock.lock()
        items.append(item)
        lock.unlock()
    }

    var all: [Element] {
        lock.lock()
        defer { lock.unlock() }
        return items
    }
}

/// Lines of text, in order.
typealias Trail = Collected<String>
/// Progress reports, in order.
typealias ProgressLog = Collected<TransferProgress>

extension Tag {
    /// Tests against a server that `scripts/test` starts (httpbin, the misbehaving server, the TLS servers),
    /// so that a run can tell them from the rest; every run of `scripts/test` has them all.
    @Tag static var realServer: Self
}

/// Looks at `ready` every `interval` nanoseconds until it gives a value, for at most `timeout` seconds of the
/// test's own time; `nil` when it never did.
///
/// A wake-up later than a tenth of a second counts as a tenth of a second: it came late because the cooperative
/// pool or the machine was busy with other tests (at the start of a parallel run on 2 cores, every task waits
/// 10 to 30 s in that backlog), and the callback being waited for waits in the same backlog. A wall-clock
/// deadline failed tests whose callback was simply behind the backlog.
func poll<T>(
    every interval: UInt64 = 2_000_000, for timeout: TimeInterval, _ ready: () async throws -> T?
) async throws -> T? {
    var left = timeout
    var last = Date()
    while left > 0 {
        if let value = try await ready() { return value }
        try await Task.sleep(nanoseconds: interval)
        let now = Date()
        left -= min(now.timeIntervalSince(last), 0.1)
        last = now
    }
    return try await ready()
}

/// Waits until `condition` holds, counting time as ``poll(every:for:_:)`` does; whether it held.
@discardableResult
func waitUntil(
    every interval: UInt64 = 2_000_000, for timeout: TimeInterval, _ condition: () -> Bool
) async throws -> Bool {
    try await poll(every: interval, for: timeout) { condition() ? true : nil } ?? false
}

/// The SHA-256 of `data` in lowercase hex, by the system's `sha256sum`.
func sha256Hex(_ data: Data) -> String {
    let file = FileManager.default.temporaryDirectory.appendingPathComponent("sha-\(UUID().uuidString)")
    try? data.write(to: file)
    defer { try? FileManager.default.removeItem(at: file) }
    return sha256Hex(file: file)
}

/// The SHA-256 of the file at `file` in lowercase hex, by the system's `sha256sum`; empty if it cannot be read.
func sha256Hex(file: URL) -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
    process.arguments = [file.path]
    let pipe = Pipe()
    process.standardOutput = pipe
    try? process.run()
    process.waitUntilExit()
    return String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        .split(separator: " ").first.map(String.init) ?? ""
}
