import Foundation
import SwiftyService

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Plays the http-tests/cache-tests suite's tests through a realm with an ``HTTPCache``, as the suite's own
/// client (test-engine/client/test.mjs) plays them through a browser's `fetch`: the same requests, the same
/// pauses, the same checks of each response and of what the server saw, against the suite's server
/// (Tests/Servers/cache_tests_server.py).
///
/// It runs the suite as a browser's cache is run (`useBrowserCache`): no request is marked to bypass the
/// cache, and `Set-Cookie` is not compared (a browser's `fetch` hides it).
struct CacheSuiteRunner: Sendable {
    /// The suite's server.
    let server: URL
    /// The backend requests go through; and one that follows no redirect, for `redirect: manual`.
    let backend: any NetworkBackend
    let manualRedirects: any NetworkBackend
    /// The pause after a request marked `pause_after` (the suite's 3 s).
    var pause: TimeInterval = 3
    /// The longest a request may take (the suite's 10 s).
    var requestTimeout: TimeInterval = 10

    /// Runs `tests`, all of them at once (each has URLs and a cache of its own), and says how each ended.
    func run(_ tests: [CacheSuite.Test]) async -> [String: CacheSuite.Outcome] {
        await withTaskGroup(of: (String, CacheSuite.Outcome).self) { group in
            for test in tests {
                group.addTask { (test.id, await run(test)) }
            }
            var outcomes: [String: CacheSuite.Outcome] = [:]
            for await (id, outcome) in group { outcomes[id] = outcome }
            return outcomes
        }
    }

    /// One test: its configuration to the server, its requests in order (pausing where it says), each
    /// response checked, then what the server saw checked against them.
    func run(_ test: CacheSuite.Test) async -> CacheSuite.Outcome {
        let uuid = UUID().uuidString.lowercased()
        do {
            try await putConfiguration(test.requests, uuid: uuid)
        } catch {
            // The suite's runner logs this and carries on.
            print("ERROR: \(uuid) \(error)")
        }
        do {
            let cache = try HTTPCache()
            var responses: [Response] = []
            for (index, configuration) in test.requests.enumerated() {
                let response = try await send(
                    configuration, number: index + 1, uuid: uuid, cache: cache, previous: responses.last)
                responses.append(response)
                try check(response, of: configuration, number: index + 1, uuid: uuid)
                if configuration["pause_after"]?.bool == true {
                    try await Task.sleep(nanoseconds: UInt64(pause * 1e9))
                }
            }
            let state = try await serverState(uuid: uuid)
            try checkServerRequests(test.requests, responses: responses, state: state)
            return .passed
        } catch let failure as CheckFailure {
            return .failed(kind: failure.kind, message: failure.message)
        } catch let error as ServiceError where error.kind == .timedOut {
            return .failed(kind: "AbortError", message: "\(error)")
        } catch {
            return .failed(kind: "TypeError", message: "\(error)")
        }
    }

    /// A check that did not hold: `Setup` when the step is one the test builds on, else `Assertion`.
    struct CheckFailure: Error {
        let kind: String
        let message: String
    }

    /// The suite's `assert`.
    private func expect(_ isSetup: Bool, _ condition: Bool, _ message: @autoclosure () -> String) throws {
        guard !condition else { return }
        throw CheckFailure(kind: isSetup ? "Setup" : "Assertion", message: message())
    }

    /// The suite's `setupCheck`: whether a failure of `member` means the test could not be set up.
    private func isSetup(_ configuration: CacheSuite.JSON, _ member: String) -> Bool {
        configuration["setup"]?.bool == true
            || (configuration["setup_tests"]?.array.contains(.string(member)) ?? false)
    }

    // MARK: Requests

    private func putConfiguration(_ requests: [CacheSuite.JSON], uuid: String) async throws {
        let body = try JSONEncoder().encode(CacheSuite.JSON.array(requests))
        let realm = uniqueRealm("cache-suite").setBaseURL(server).use(backend)
        let response = try await TestEndpoint(
            realm, "config/\(uuid)", method: .put, body: .data(body, contentType: "application/json"),
            validStatusCodes: .all
        ).request()
        guard response.statusCode == 201 else {
            throw CheckFailure(kind: "Setup", message: "PUT config resulted in \(response.statusCode)")
        }
    }

    private func serverState(uuid: String) async throws -> [CacheSuite.JSON] {
        let realm = uniqueRealm("cache-suite").setBaseURL(server).use(backend)
        let response = try await TestEndpoint(realm, "state/\(uuid)", validStatusCodes: .all).request()
        guard response.statusCode == 200 else { return [] }
        return try JSONDecoder().decode(CacheSuite.JSON.self, from: response.data).array
    }

    /// Request `number` of the test, as the suite's `fetching.init` makes it, through a realm with the test's
    /// cache.
    private func send(
        _ configuration: CacheSuite.JSON, number: Int, uuid: String, cache: HTTPCache, previous: Response?
    ) async throws -> Response {
        var path = "test/\(uuid)"
        if let filename = configuration["filename"]?.string { path += "/\(filename)" }
        var parameters: [String: any Sendable]?
        if let query = configuration["query_arg"]?.string {
            let pair = query.split(separator: "=", maxSplits: 1).map(String.init)
            parameters = [pair[0]: pair.count > 1 ? pair[1] : ""]
        }
        // fetch's Headers: names compare in any case, and a repeated name's values are joined with ", ".
        var headers: HTTPHeaderDictionary = [:]
        func append(_ name: String, _ value: String) {
            if let key = headers.keys.first(where: { $0.caseInsensitiveCompare(name) == .orderedSame }) {
                headers[key] = headers[key]! + ", " + value
            } else {
                headers[name] = value
            }
        }
        for header in configuration["request_headers"]?.array ?? [] {
            guard let name = header[0]?.string, let value = header[1] else { continue }
            if configuration["magic_ims"]?.bool == true, name.lowercased() == "if-modified-since",
                let seconds = value.int, let previous
            {
                append(name, Self.httpDate(serverNow: previous.header("Server-Now"), plus: seconds))
            } else {
                append(name, value.text)
            }
        }
        if let name = configuration["name"]?.string { append("Test-Name", name) }
        if let id = configuration["id"]?.string { append("Test-ID", id) }
        append("Req-Num", String(number))
        let method = configuration["request_method"]?.string.map { HTTPMethod(rawValue: $0) } ?? .get
        let body = configuration["request_body"]?.string.map {
            RequestBody.data(Data($0.utf8), contentType: "text/plain;charset=UTF-8")
        }
        let manual = configuration["redirect"]?.string == "manual"
        let realm = uniqueRealm("cache-suite").setBaseURL(server).useCache(cache).setTimeout(requestTimeout)
        if manual { realm.use(manualRedirects) } else { realm.use(backend) }
        // fetch's `cache: "no-cache"`: whatever is stored is revalidated first.
        if configuration["cache"]?.string == "no-cache" {
            realm.overrideGlobalCachePolicy(.reloadRevalidatingCacheData)
        }
        return try await TestEndpoint(
            realm, path, method: method, parameters: parameters, encoding: .query, body: body,
            headers: headers,
            validStatusCodes: .all
        ).request()
    }

    // MARK: Checks

    /// The suite's `checkResponse` and `checkResponseBody`.
    private func check(_ response: Response, of configuration: CacheSuite.JSON, number: Int, uuid: String)
        throws
    {
        let serverNumber = response.header("Server-Request-Count").flatMap { Int($0) }
        if let numbers = response.header("Request-Numbers") {
            let seen = numbers.split(separator: " ").map(String.init)
            try expect(true, seen.count == Set(seen).count, "retry")
        }
        if let type = configuration["expected_type"]?.string {
            let typeSetup = isSetup(configuration, "expected_type")
            if type == "cached", !(response.statusCode == 304 && serverNumber == nil) {
                try expect(
                    typeSetup, (serverNumber ?? .max) < number, "Response \(number) does not come from cache")
            }
            if type == "not_cached" {
                try expect(typeSetup, serverNumber == number, "Response \(number) comes from cache")
            }
        }
        if let expected = configuration["expected_status"] {
            if let status = expected.int {
                try expect(
                    isSetup(configuration, "expected_status"), response.statusCode == status,
                    "Response \(number) status is \(response.statusCode), not \(status)")
            }
        } else if let status = configuration["response_status"]?[0]?.int {
            try expect(
                true, response.statusCode == status,
                "Response \(number) status is \(response.statusCode), not \(status)")
        } else if response.statusCode == 999 {
            try expect(
                isSetup(configuration, "expected_type"), false,
                "Request \(number) should have been conditional, but it was not.")
        } else {
            try expect(
                true, response.statusCode == 200,
                "Response \(number) status is \(response.statusCode), not 200")
        }
        if let expectedHeaders = configuration["expected_response_headers"]?.array {
            let present = isSetup(configuration, "expected_response_headers")
            for header in expectedHeaders {
                if let name = header.string {
                    try expect(
                        present, response.header(name) != nil,
                        "Response \(number) \(name) header not present.")
                } else if header.array.count > 2, let name = header[0]?.string,
                    let operation = header[1]?.string
                {
                    try expect(
                        present, response.header(name) != nil,
                        "Response \(number) \(name) header not present.")
                    let value = response.header(name)
                    switch operation {
                    case "=":
                        let other = header[2]?.string.flatMap { response.header($0) }
                        try expect(
                            present, value == other, "Response \(number) header \(name) is \(value ?? "null")"
                        )
                    case ">":
                        let bound = header[2]?.int ?? 0
                        try expect(
                            present, value.flatMap(Self.parseInt).map { $0 > bound } ?? false,
                            "Response \(number) header \(name) is \(value ?? "null"), should be bigger than \(bound)"
                        )
                    default:
                        throw CacheSuiteError(description: "unknown expected-header operator \(operation)")
                    }
                } else if let name = header[0]?.string, let value = header[1] {
                    let expected = fixup(name, value, serverNow: response.header("Server-Now"), configuration)
                    try expect(
                        present, response.header(name) == expected,
                        "Response \(number) header \(name) is \"\(response.header(name) ?? "null")\", not \"\(expected)\""
                    )
                }
            }
        }
        if let missing = configuration["expected_response_headers_missing"]?.array {
            let present = isSetup(configuration, "expected_response_headers_missing")
            for header in missing {
                if let name = header.string {
                    try expect(
                        present, response.header(name) == nil,
                        "Response \(number) includes unexpected header \(name): \"\(response.header(name) ?? "")\""
                    )
                }
                // A [name, value] pair is checked against `response.headers[name]`, a property fetch's Headers
                // never has: the suite's check never fails, and neither does this port's.
            }
        }
        if let interim = configuration["expected_interim_responses"]?.array {
            // Neither URLSession nor libcurl hands interim responses to a caller: none is ever received.
            try expect(
                isSetup(configuration, "expected_interim_responses"), interim.isEmpty,
                "Interim response 1 not received")
        }
        try checkBody(response, of: configuration, uuid: uuid)
    }

    private func checkBody(_ response: Response, of configuration: CacheSuite.JSON, uuid: String) throws {
        let body = String(decoding: response.data, as: UTF8.self)
        if configuration["check_body"]?.bool == false { return }
        if let expected = configuration["expected_response_text"] {
            if let text = expected.string {
                try expect(
                    isSetup(configuration, "expected_response_text"), body == text,
                    "Response body is \"\(body)\", not \"\(text)\"")
            }
        } else if let text = configuration["response_body"]?.string {
            try expect(true, body == text, "Response body is \"\(body)\", not \"\(text)\"")
        } else if ![204, 304].contains(response.statusCode), configuration["request_method"]?.string != "HEAD"
        {
            try expect(true, body == uuid, "Response body is \"\(body)\", not \"\(uuid)\"")
        }
    }

    /// The suite's `checkServerRequests`: each request the server saw against its configuration and the
    /// response the client got.
    private func checkServerRequests(
        _ requests: [CacheSuite.JSON], responses: [Response], state: [CacheSuite.JSON]
    ) throws {
        var serverIndex = 0
        for (index, configuration) in requests.enumerated() {
            let number = index + 1
            let response = responses[index]
            let serverRequest = state.indices.contains(serverIndex) ? state[serverIndex] : nil
            let typeSetup = isSetup(configuration, "expected_type")
            var validators: [String] = []
            if let type = configuration["expected_type"]?.string {
                if type == "cached" { continue }
                if type == "not_cached" {
                    let seen = try Self.member(serverRequest, "request_num")
                    try expect(
                        typeSetup, seen.int == number,
                        "Response \(number) comes from cache (\(seen.text) on server)")
                }
                if type == "etag_validated" { validators.append("if-none-match") }
                if type == "lm_validated" { validators.append("if-modified-since") }
            }
            serverIndex += 1
            for validator in validators {
                try expect(typeSetup, serverRequest != nil, "request \(number) wasn't sent to server")
                try expect(
                    typeSetup, serverRequest?["request_headers"]?[validator] != nil,
                    "request \(number) doesn't have \(validator) header")
            }
            if let expectedHeaders = configuration["expected_request_headers"]?.array {
                let present = isSetup(configuration, "expected_request_headers")
                let received = try Self.member(serverRequest, "request_headers")
                for header in expectedHeaders {
                    if let name = header.string {
                        try expect(
                            present, received[name.lowercased()] != nil,
                            "Request \(number) \(name) header not present.")
                    } else if let name = header[0]?.string {
                        let value = received[name.lowercased()]?.string
                        try expect(
                            present, value == header[1]?.string,
                            "Request \(number) header \(name) is \"\(value ?? "undefined")\", not \"\(header[1]?.text ?? "")\""
                        )
                    }
                }
            }
            if let missingHeaders = configuration["expected_request_headers_missing"]?.array {
                let present = isSetup(configuration, "expected_request_headers_missing")
                let received = try Self.member(serverRequest, "request_headers")
                for header in missingHeaders {
                    if let name = header.string {
                        try expect(
                            present, received[name.lowercased()] == nil,
                            "Request \(number) \(name) header present.")
                    } else if let name = header[0]?.string {
                        let value = received[name.lowercased()]?.string
                        try expect(
                            present, value != header[1]?.string,
                            "Request \(number) header \(name) is \"\(value ?? "")\"")
                    }
                }
            }
            for header in serverRequest?["response_headers"]?.array ?? [] {
                guard let name = header[0]?.string, let sent = header[1] else { continue }
                // A browser hides Set-Cookie from fetch; Date just makes spurious failures.
                if ["set-cookie", "set-cookie2", "date"].contains(name.lowercased()) { continue }
                let value = sent.string ?? sent.array.map(\.text).joined(separator: ", ")
                try expect(
                    true, response.header(name) == value,
                    "Response \(number) header \(name) is \"\(response.header(name) ?? "null")\", not \"\(value)\""
                )
            }
            if let method = configuration["expected_method"]?.string {
                let seen = try Self.member(serverRequest, "request_method")
                try expect(
                    isSetup(configuration, "expected_method"), seen.string == method,
                    "Request \(number) had method \(seen.text), not \(method)")
            }
        }
    }

    /// `serverRequest.member`, which fails as JavaScript does when the server saw no such request.
    private static func member(_ request: CacheSuite.JSON?, _ name: String) throws -> CacheSuite.JSON {
        guard let request else {
            throw CheckFailure(
                kind: "TypeError", message: "Cannot read properties of undefined (reading '\(name)')")
        }
        return request[name] ?? .null
    }

    /// The suite's `fixupHeader` on the client: an integer date is seconds from the response's `Server-Now`.
    private func fixup(
        _ name: String, _ value: CacheSuite.JSON, serverNow: String?, _ configuration: CacheSuite.JSON
    )
        -> String
    {
        let dateHeaders: Set = [
            "date", "expires", "last-modified", "if-modified-since", "if-unmodified-since",
        ]
        if dateHeaders.contains(name.lowercased()), let seconds = value.int {
            let rfc850 = configuration["rfc850date"]?.array.contains(.string(name.lowercased())) ?? false
            return Self.httpDate(serverNow: serverNow, plus: seconds, rfc850: rfc850)
        }
        return value.text
    }

    /// JavaScript's `parseInt` of a header value: the leading integer, if there is one.
    private static func parseInt(_ text: String) -> Int? {
        let trimmed = text.drop { $0 == " " }
        let digits = trimmed.prefix { $0.isNumber || $0 == "-" || $0 == "+" }
        return Int(digits)
    }

    /// The suite's `httpDate`: the server's now (milliseconds) plus `seconds`, IMF-fixdate or RFC 850.
    static func httpDate(serverNow: String?, plus seconds: Int, rfc850: Bool = false) -> String {
        let milliseconds = Double(serverNow ?? "").map { $0 } ?? .nan
        let date = Date(
            timeIntervalSince1970: ((milliseconds + Double(seconds) * 1000) / 1000).rounded(.down))
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = rfc850 ? "EEEE, dd-MMM-yy HH:mm:ss 'GMT'" : "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }
}
