import Foundation
import SwiftyService

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The endpoints the benchmarks send: the same content as the hand-written baselines.
enum BenchAPI: SwiftyServiceProtocol {
    case search(query: String, page: Int, verbose: Bool)
    case searchEncodable(BenchSearch)
    case create(name: String, age: Int, admin: Bool)

    var realm: ServiceRealm { .get("bench") }
    var path: String {
        switch self {
        case .search, .searchEncodable: "user/info"
        case .create: "user/create"
        }
    }
    var method: HTTPMethod {
        switch self {
        case .search, .searchEncodable: .get
        case .create: .post
        }
    }
    var parameters: [String: Any]? {
        switch self {
        case let .search(query, page, verbose): ["q": query, "page": page, "verbose": verbose]
        case let .searchEncodable(search): .encoding(search)
        case let .create(name, age, admin): ["name": name, "age": age, "admin": admin]
        }
    }
    var sampleData: Data { BenchAPI.sample }

    static let sample = Data(#"{"id": 42, "name": "Ann"}"#.utf8)
}

/// `BenchAPI.search`'s parameters as an `Encodable` value.
struct BenchSearch: Encodable, Sendable {
    let q: String
    let page: Int
    let verbose: Bool
}

/// What `BenchAPI.sample` decodes to.
struct BenchUser: Decodable, Sendable {
    let id: Int
    let name: String
}

let benchBase = URL(string: "https://api.example.com/v1")!
let benchHeaders = ["Authorization": "Token sagsrbiusd90322sdf4f3gd4", "Accept": "application/json"]

/// What people write by hand for `BenchAPI.search`.
@inline(never)
func handWrittenGet() -> URLRequest {
    let url = benchBase.appendingPathComponent("user").appendingPathComponent("info")
    var components = URLComponents(url: url, resolvingAgainstBaseURL: false)!
    components.queryItems = [
        URLQueryItem(name: "page", value: "2"), URLQueryItem(name: "q", value: "swift service+linux"),
        URLQueryItem(name: "verbose", value: "1"),
    ]
    var request = URLRequest(url: components.url!)
    request.httpMethod = "GET"
    for (name, value) in benchHeaders { request.setValue(value, forHTTPHeaderField: name) }
    return request
}

/// What people write by hand for `BenchAPI.create`.
@inline(never)
func handWrittenPost() throws -> URLRequest {
    let url = benchBase.appendingPathComponent("user").appendingPathComponent("create")
    var request = URLRequest(url: url)
    request.httpMethod = "POST"
    request.httpBody = try JSONSerialization.data(withJSONObject: ["name": "Ann", "age": 42, "admin": true])
    request.setValue("application/json", forHTTPHeaderField: "Content-Type")
    for (name, value) in benchHeaders { request.setValue(value, forHTTPHeaderField: name) }
    return request
}

struct Settings {
    let quick: Bool
    let liveURL: URL?
    var runs: Int { quick ? 3 : 15 }
    var iterations: Int { quick ? 2_000 : 20_000 }
    var liveRequests: Int { quick ? 200 : 2_000 }
    var liveRuns: Int { quick ? 2 : 8 }
    /// The live scenarios that run each client in a process of its own: rounds, and each run's warm-up and
    /// measured window in seconds.
    var liveRounds: Int { quick ? 2 : 7 }
    var liveWarmUp: Double { quick ? 0.2 : 0.5 }
    var liveWindow: Double { quick ? 0.5 : 2 }
    var retainedRequests: Int { quick ? 20_000 : 100_000 }
}

func buildGet(_ settings: Settings) -> Outcome {
    let search = BenchAPI.search(query: "swift service+linux", page: 2, verbose: true)
    let (ours, baseline) = interleaved(
        runs: settings.runs, iterations: settings.iterations,
        ours: { blackHole(try! search.urlRequest()) },
        baseline: { blackHole(handWrittenGet()) })
    return Outcome(
        scenario: "build.get", ours: ours, baseline: baseline, unit: .nanosecondsPerOperation,
        goal: 0.6, higherIsBetter: false)
}

func buildGetEncodable(_ settings: Settings) -> Outcome {
    let encodable = BenchAPI.searchEncodable(BenchSearch(q: "swift service+linux", page: 2, verbose: true))
    let dictionary = BenchAPI.search(query: "swift service+linux", page: 2, verbose: true)
    let (ours, baseline) = interleaved(
        runs: settings.runs, iterations: settings.iterations,
        ours: { blackHole(try! encodable.urlRequest()) },
        baseline: { blackHole(try! dictionary.urlRequest()) })
    return Outcome(
        scenario: "build.get.encodable", ours: ours, baseline: baseline, unit: .nanosecondsPerOperation,
        goal: 1.5, higherIsBetter: false, note: "baseline: the same endpoint with [String: Any] parameters")
}

func buildPost(_ settings: Settings) -> Outcome {
    let create = BenchAPI.create(name: "Ann", age: 42, admin: true)
    let (ours, baseline) = interleaved(
        runs: settings.runs, iterations: settings.iterations,
        ours: { blackHole(try! create.urlRequest()) },
        baseline: { blackHole(try! handWrittenPost()) })
    return Outcome(
        scenario: "build.post", ours: ours, baseline: baseline, unit: .nanosecondsPerOperation,
        goal: 0.3, higherIsBetter: false)
}

func dispatchStub(_ settings: Settings) -> Outcome {
    let search = BenchAPI.search(query: "swift service+linux", page: 2, verbose: true)
    let (ours, baseline) = interleaved(
        runs: settings.runs, iterations: settings.iterations,
        ours: { search.request { result in blackHole(result) } },
        baseline: {
            let request = handWrittenGet()
            let completion: (URLRequest) -> Void = { blackHole($0) }
            completion(request)
        })
    return Outcome(
        scenario: "dispatch.stub", ours: ours, baseline: baseline, unit: .nanosecondsPerOperation,
        goal: 1.0, higherIsBetter: false)
}

func dispatchStubAsync(_ settings: Settings) async -> Outcome {
    let search = BenchAPI.search(query: "swift service+linux", page: 2, verbose: true)
    let (ours, baseline) = await interleavedAsync(
        runs: settings.runs, iterations: settings.iterations,
        ours: { blackHole(try! await search.request()) },
        baseline: {
            let request = handWrittenGet()
            let completion: (URLRequest) -> Void = { blackHole($0) }
            completion(request)
        })
    return Outcome(
        scenario: "dispatch.stub.async", ours: ours, baseline: baseline, unit: .nanosecondsPerOperation,
        goal: 1.3, higherIsBetter: false)
}

func dispatchStubTyped(_ settings: Settings) async -> Outcome {
    let search = BenchAPI.search(query: "swift service+linux", page: 2, verbose: true)
    let typed = search.returning(BenchUser.self)
    let decoder = JSONDecoder()
    let (ours, baseline) = await interleavedAsync(
        runs: settings.runs, iterations: settings.iterations,
        ours: { blackHole(try! await typed.request()) },
        baseline: { blackHole(try! decoder.decode(BenchUser.self, from: try! await search.request().data)) })
    return Outcome(
        scenario: "dispatch.stub.typed", ours: ours, baseline: baseline, unit: .nanosecondsPerOperation,
        goal: 1.05, higherIsBetter: false, note: "baseline: request() and JSONDecoder by hand")
}

func dispatchConcurrent(_ settings: Settings) async -> Outcome {
    let search = BenchAPI.search(query: "swift service+linux", page: 2, verbose: true)
    let count = 1_000
    var concurrent: [Double] = []
    var sequential: [Double] = []
    for _ in 0..<settings.runs {
        var start = now()
        for _ in 0..<count { blackHole(try! await search.request()) }
        sequential.append(Double(now() - start) / Double(count))
        start = now()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<count { group.addTask { blackHole(try! await search.request()) } }
        }
        concurrent.append(Double(now() - start) / Double(count))
    }
    return Outcome(
        scenario: "dispatch.concurrent", ours: median(concurrent), baseline: median(sequential),
        unit: .nanosecondsPerOperation, goal: nil, higherIsBetter: false)
}

func memoryRetained(_ settings: Settings) -> Outcome {
    let search = BenchAPI.search(query: "swift service+linux", page: 2, verbose: true)
    for _ in 0..<20_000 { search.request { blackHole($0) } }
    guard let before = residentBytes() else {
        return Outcome(
            scenario: "memory.retained", ours: .nan, baseline: nil, unit: .bytesPerRequest, goal: 16,
            higherIsBetter: false, note: "no /proc on this platform")
    }
    let count = settings.retainedRequests
    for _ in 0..<count { search.request { blackHole($0) } }
    let after = residentBytes() ?? before
    return Outcome(
        scenario: "memory.retained", ours: Double(after - before) / Double(count), baseline: nil,
        unit: .bytesPerRequest, goal: 16, higherIsBetter: false,
        note: "RSS \(before / 1024) KiB → \(after / 1024) KiB over \(count) requests")
}
