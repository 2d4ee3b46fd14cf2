// The fuzz targets: libFuzzer runs them (Fuzz/run), and FuzzRegressionTests runs them on the kept corpus.
// Each turns arbitrary bytes into input for one parser or encoder the toolkit owns and checks what it
// returns against an independent reading of the rule it implements; a broken rule throws FuzzFailure.
// Nothing here may import Testing: the fuzzer builds this file on its own.

import Foundation
import SwiftyServiceTesting

@testable import SwiftyService

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A rule a fuzz target found broken, with what broke it.
struct FuzzFailure: Error, CustomStringConvertible {
    let description: String
}

/// Fuzz input read as a sequence of choices; past its end, every choice is the first one.
struct FuzzInput {
    private let bytes: [UInt8]
    private var index = 0

    init(_ data: Data) { bytes = Array(data) }

    var isExhausted: Bool { index >= bytes.count }

    mutating func byte() -> UInt8 {
        guard index < bytes.count else { return 0 }
        defer { index += 1 }
        return bytes[index]
    }

    mutating func choice(_ count: Int) -> Int { Int(byte()) % count }

    mutating func bytes(upTo limit: Int) -> [UInt8] {
        let count = min(Int(byte()) % (limit + 1), bytes.count - min(index, bytes.count))
        defer { index += count }
        return Array(bytes[index..<index + count])
    }

    /// Any text, invalid UTF-8 included (it becomes replacement characters, as Swift reads it).
    mutating func string(upTo limit: Int = 16) -> String {
        String(decoding: bytes(upTo: limit), as: UTF8.self)
    }

    mutating func integer() -> Int64 {
        (0..<8).reduce(Int64(0)) { value, _ in value << 8 | Int64(byte()) }
    }

    /// Any double, NaN, infinities and subnormals included.
    mutating func double() -> Double {
        Double(bitPattern: UInt64(bitPattern: integer()))
    }

    /// A parameter value of every kind the toolkit accepts, and some it must refuse.
    mutating func value(depth: Int) -> Any {
        switch choice(depth > 0 ? 10 : 7) {
        case 0: string()
        case 1: Int(truncatingIfNeeded: integer())
        case 2: double()
        case 3: byte() & 1 == 1
        case 4: NSNull()
        case 5: String?.none as Any
        case 6: Date(timeIntervalSince1970: 0)
        case 7, 8: (0..<choice(4)).map { _ in value(depth: depth - 1) }
        default: parameters(depth: depth - 1)
        }
    }

    mutating func parameters(depth: Int = 3) -> [String: Any] {
        var result: [String: Any] = [:]
        for _ in 0..<choice(5) { result[string(upTo: 8)] = value(depth: depth) }
        return result
    }
}

/// A random `Encodable` value of every shape a synthesized conformance makes, and the `[String: Any]` it
/// stands for: the two must write the same query.
indirect enum FuzzParameter: Encodable, CustomStringConvertible {
    case string(String), int(Int), int64(Int64), uint8(UInt8), double(Double), float(Float), bool(Bool)
    /// `encodeNil`: `NSNull` in the dictionary.
    case null
    /// A `nil` optional, left out (`encodeIfPresent`); in an array, `nil` is encoded as null.
    case absent
    case array([FuzzParameter])
    case object([String: FuzzParameter])

    var description: String { "\(dictionaryValue(inArray: false))" }

    /// The dictionary of an `.object`.
    var dictionary: [String: Any] { dictionaryValue(inArray: false) as? [String: Any] ?? [:] }

    private func dictionaryValue(inArray: Bool) -> Any {
        switch self {
        case let .string(value): value
        case let .int(value): value
        case let .int64(value): value
        case let .uint8(value): value
        case let .double(value): value
        case let .float(value): value
        case let .bool(value): value
        case .null: NSNull()
        case .absent: inArray ? NSNull() : String?.none as Any
        case let .array(elements): elements.map { $0.dictionaryValue(inArray: true) } as [Any]
        case let .object(fields): fields.mapValues { $0.dictionaryValue(inArray: false) } as [String: Any]
        }
    }

    private struct Key: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    func encode(to encoder: any Encoder) throws {
        switch self {
        case let .object(fields):
            var container = encoder.container(keyedBy: Key.self)
            for (name, field) in fields {
                let key = Key(stringValue: name)
                switch field {
                case let .string(value): try container.encode(value, forKey: key)
                case let .int(value): try container.encode(value, forKey: key)
                case let .int64(value): try container.encode(value, forKey: key)
                case let .uint8(value): try container.encode(value, forKey: key)
                case let .double(value): try container.encode(value, forKey: key)
                case let .float(value): try container.encode(value, forKey: key)
                case let .bool(value): try container.encode(value, forKey: key)
                case .null: try container.encodeNil(forKey: key)
                case .absent: try container.encodeIfPresent(String?.none, forKey: key)
                case .array, .object: try container.encode(field, forKey: key)
                }
            }
        case let .array(elements):
            var container = encoder.unkeyedContainer()
            for element in elements {
                switch element {
                case let .string(value): try container.encode(value)
                case let .int(value): try container.encode(value)
                case let .int64(value): try container.encode(value)
                case let .uint8(value): try container.encode(value)
                case let .double(value): try container.encode(value)
                case let .float(value): try container.encode(value)
                case let .bool(value): try container.encode(value)
                case .null, .absent: try container.encodeNil()
                case .array, .object: try container.encode(element)
                }
            }
        default:
            throw EncodingError.invalidValue(
                0, .init(codingPath: encoder.codingPath, debugDescription: "a leaf alone"))
        }
    }
}

extension FuzzInput {
    /// An `.object` of random fields.
    mutating func encodableObject(depth: Int) -> FuzzParameter {
        var fields: [String: FuzzParameter] = [:]
        for _ in 0..<choice(5) { fields[string(upTo: 8)] = encodable(depth: depth) }
        return .object(fields)
    }

    mutating func encodable(depth: Int) -> FuzzParameter {
        switch choice(depth > 0 ? 12 : 10) {
        case 0: .string(string())
        case 1: .int(Int(truncatingIfNeeded: integer()))
        case 2: .int64(integer())
        case 3: .uint8(byte())
        case 4: .double(double())
        case 5: .float(Float(bitPattern: UInt32(truncatingIfNeeded: integer())))
        case 6: .bool(byte() & 1 == 1)
        case 7: .null
        case 8: .absent
        case 9: .double(Double(Int8(bitPattern: byte())) / 4)
        case 10: .array((0..<choice(4)).map { _ in encodable(depth: depth - 1) })
        default: encodableObject(depth: depth - 1)
        }
    }
}

enum FuzzTargets {
    /// Every target, by the name `Fuzz/run` and the corpus folders use.
    static let all: [String: @Sendable (Data) throws -> Void] = [
        "query": query, "json": json, "request": request, "multipart": multipart, "cassette": cassette,
        "cache-headers": cacheHeaders, "http-dates": httpDates, "encodable-query": encodableQuery,
        "stream-split": streamSplit,
    ]

    // MARK: query: QueryWriter against a reference flattening, percent-decoded

    static func query(_ data: Data) throws {
        var input = FuzzInput(data)
        let arrays = [ParameterEncoding.ArrayStyle.brackets, .noBrackets, .indexed][input.choice(3)]
        let bools = [ParameterEncoding.BoolStyle.numeric, .literal][input.choice(2)]
        let parameters = input.parameters()
        var writer = QueryWriter(.query(arrays: arrays, bools: bools))
        let expected = try? expectedPairs(parameters, arrays: arrays, bools: bools)
        do {
            try writer.write(parameters)
        } catch is ParameterProblem {
            guard expected == nil else { throw FuzzFailure(description: "refused \(parameters)") }
            return
        }
        guard let expected else {
            throw FuzzFailure(description: "accepted an unwritable value in \(parameters)")
        }
        let text = writer.bytes
        guard text.allSatisfy({ PercentEncoding.isUnreserved($0) || "%=&".utf8.contains($0) }) else {
            throw FuzzFailure(description: "unescaped byte in \(String(decoding: text, as: UTF8.self))")
        }
        let pairs = try text.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: false)
            .filter { !$0.isEmpty || !text.isEmpty }
            .map { pair -> ([UInt8], [UInt8]) in
                let sides = pair.split(
                    separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
                guard sides.count == 2 else {
                    throw FuzzFailure(description: "a pair without '=' in \(text)")
                }
                return (try percentDecoded(sides[0]), try percentDecoded(sides[1]))
            }
        let wanted = expected.map { (Array($0.0.utf8), Array($0.1.utf8)) }
        guard pairs.count == wanted.count, zip(pairs, wanted).allSatisfy({ $0.0 == $1.0 && $0.1 == $1.1 })
        else {
            throw FuzzFailure(description: "\(parameters) wrote \(String(decoding: text, as: UTF8.self))")
        }
    }

    private struct Unwritable: Error {}

    /// The pairs a query must carry, raw: keys sorted at every level, `[]`, `[i]` or nothing for arrays.
    private static func expectedPairs(
        _ parameters: [String: Any], arrays: ParameterEncoding.ArrayStyle, bools: ParameterEncoding.BoolStyle
    ) throws -> [(String, String)] {
        var pairs: [(String, String)] = []
        func add(_ value: Any, _ key: String) throws {
            switch ParameterValue(value) {
            case let .string(text): pairs.append((key, text))
            case let .number(text): pairs.append((key, text))
            case let .bool(flag):
                pairs.append((key, bools == .numeric ? (flag ? "1" : "0") : (flag ? "true" : "false")))
            case .null: pairs.append((key, ""))
            case .absent: break
            case let .array(elements):
                for (index, element) in elements.enumerated() {
                    switch arrays {
                    case .brackets: try add(element, key + "[]")
                    case .noBrackets: try add(element, key)
                    case .indexed: try add(element, key + "[\(index)]")
                    }
                }
            case let .object(object):
                for nested in object.keys.sorted() { try add(object[nested]!, key + "[" + nested + "]") }
            case .unsupported: throw Unwritable()
            }
        }
        for key in parameters.keys.sorted() { try add(parameters[key]!, key) }
        return pairs
    }

    private static func percentDecoded(_ bytes: ArraySlice<UInt8>) throws -> [UInt8] {
        var result: [UInt8] = []
        var index = bytes.startIndex
        while index < bytes.endIndex {
            if bytes[index] == UInt8(ascii: "%") {
                guard index + 2 < bytes.endIndex, let high = hexValue(bytes[index + 1]),
                    let low = hexValue(bytes[index + 2])
                else {
                    throw FuzzFailure(
                        description: "a broken escape in \(String(decoding: bytes, as: UTF8.self))")
                }
                result.append(high << 4 | low)
                index += 3
            } else {
                result.append(bytes[index])
                index += 1
            }
        }
        return result
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        default: nil
        }
    }

    // MARK: encodable-query: an Encodable value writes the bytes of the dictionary it stands for

    /// The URL-encoded-form encoder against QueryWriter: a random `Encodable` value and the `[String: Any]` it
    /// stands for make the same bytes, or are both refused.
    static func encodableQuery(_ data: Data) throws {
        var input = FuzzInput(data)
        let arrays = [ParameterEncoding.ArrayStyle.brackets, .noBrackets, .indexed][input.choice(3)]
        let bools = [ParameterEncoding.BoolStyle.numeric, .literal][input.choice(2)]
        let value = input.encodableObject(depth: 3)
        try checkEncodable(value, arrays: arrays, bools: bools)
    }

    /// Whether `value` writes, through the encoder, exactly what its dictionary writes through QueryWriter.
    static func checkEncodable(
        _ value: FuzzParameter, arrays: ParameterEncoding.ArrayStyle, bools: ParameterEncoding.BoolStyle
    ) throws {
        var writer = QueryWriter(.query(arrays: arrays, bools: bools))
        let expected: [UInt8]?
        do {
            try writer.write(value.dictionary)
            expected = writer.bytes
        } catch is ParameterProblem {
            expected = nil
        }
        let encoded = try? URLEncodedFormEncoder(arrays: arrays, bools: bools).bytes(value)
        guard encoded == expected else {
            let text = { (bytes: [UInt8]?) in
                bytes.map { String(decoding: $0, as: UTF8.self) } ?? "nothing"
            }
            throw FuzzFailure(
                description: "\(value) wrote \(text(encoded)), its dictionary \(text(expected))")
        }
    }

    // MARK: json: JSONWriter's bytes parse back (with JSONSerialization) to the same values

    static func json(_ data: Data) throws {
        var input = FuzzInput(data)
        let parameters = input.parameters()
        var writer = JSONWriter()
        let writable = (try? expectedPairs(parameters, arrays: .indexed, bools: .literal)) != nil
        do {
            try writer.write(parameters)
        } catch is ParameterProblem {
            guard !writable else { throw FuzzFailure(description: "refused \(parameters)") }
            return
        }
        guard writable else {
            throw FuzzFailure(description: "accepted an unwritable value in \(parameters)")
        }
        let text = Data(writer.bytes)
        // JSONDecoder reads numbers exactly; JSONSerialization on Linux misreads some doubles by an ulp or more.
        guard let parsed = try? JSONDecoder().decode(JSONValue.self, from: text) else {
            throw FuzzFailure(description: "wrote invalid JSON: \(String(decoding: text, as: UTF8.self))")
        }
        guard same(parameters, parsed) else {
            throw FuzzFailure(description: "\(parameters) wrote \(String(decoding: text, as: UTF8.self))")
        }
    }

    /// Any JSON value, read exactly.
    private enum JSONValue: Decodable {
        case null, bool(Bool), integer(Int64), number(Double), string(String), array([JSONValue])
        case object([String: JSONValue])

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() {
                self = .null
            } else if let flag = try? container.decode(Bool.self) {
                self = .bool(flag)
            } else if let integer = try? container.decode(Int64.self) {
                self = .integer(integer)
            } else if let number = try? container.decode(Double.self) {
                self = .number(number)
            } else if let text = try? container.decode(String.self) {
                self = .string(text)
            } else if let list = try? container.decode([JSONValue].self) {
                self = .array(list)
            } else {
                self = .object(try container.decode([String: JSONValue].self))
            }
        }
    }

    /// Whether `parsed` holds `original`'s values exactly.
    private static func same(_ original: Any, _ parsed: JSONValue) -> Bool {
        switch (ParameterValue(original), parsed) {
        case let (.string(text), .string(read)): return Array(read.utf8) == Array(text.utf8)
        case let (.number(text), .integer(read)): return Int64(text) == read || Double(text) == Double(read)
        case let (.number(text), .number(read)): return Double(text) == read
        case let (.bool(flag), .bool(read)): return flag == read
        case (.null, .null), (.absent, .null): return true
        case let (.array(elements), .array(list)):
            return list.count == elements.count && zip(elements, list).allSatisfy { same($0, $1) }
        case let (.object(object), .object(dictionary)):
            return dictionary.count == object.count
                && object.allSatisfy { key, value in dictionary[key].map { same(value, $0) } ?? false }
        default: return false
        }
    }

    // MARK: request: a whole endpoint built into a URLRequest, or refused with a reason

    /// Unchecked: `[String: Any]` parameters are never shared across threads here.
    private struct FuzzEndpoint: SwiftyServiceProtocol, @unchecked Sendable {
        var realm: ServiceRealm { .get("fuzz") }
        var baseURL: URL?
        var path: String
        var method: HTTPMethod
        var parameters: [String: Any]?
        var parameterEncoding: ParameterEncoding
        var headers: HTTPHeaderDictionary?
    }

    private static let realmIsReady: Bool = {
        ServiceRealm.get("fuzz").setBaseURL(URL(string: "https://fuzz.example/api/v1")!)
        return true
    }()

    static func request(_ data: Data) throws {
        precondition(realmIsReady)
        var input = FuzzInput(data)
        let baseURL = input.choice(4) == 0 ? URL(string: input.string(upTo: 24)) : nil
        let path = input.string(upTo: 24)
        let method = HTTPMethod(
            rawValue: ["GET", "POST", "PUT", "DELETE", input.string(upTo: 6)][input.choice(5)])
        let encoding = [ParameterEncoding.automatic, .query, .form, .json][input.choice(4)]
        let parameters = input.choice(3) == 0 ? nil : input.parameters(depth: 2)
        var headers: HTTPHeaderDictionary = [:]
        for _ in 0..<input.choice(3) { headers[input.string(upTo: 10)] = input.string(upTo: 12) }
        let endpoint = FuzzEndpoint(
            baseURL: baseURL, path: path, method: method, parameters: parameters, parameterEncoding: encoding,
            headers: headers.isEmpty ? nil : headers)

        let request: URLRequest
        do {
            request = try endpoint.urlRequest()
        } catch let error as ServiceError {
            guard case let .invalidRequest(reason, _, _) = error else {
                throw FuzzFailure(description: "\(error) is not .invalidRequest")
            }
            if case .invalidHeaderValue = reason, case let .invalidRequest(_, _, url) = error {
                // The URL and the names may be repeated; a value may not, even where it is a part of them.
                let text = headers.keys.reduce(error.description.replacingOccurrences(of: url, with: "")) {
                    $0.replacingOccurrences(of: $1, with: "")
                }
                // Only values with a control character: another could be a piece of the message's own words.
                let refused = headers.values.filter { !HeaderFields.isValidValue($0) }
                // Bytes, not Foundation's contains(_:), which stops a needle at its first NUL on Linux.
                let haystack = Array(text.utf8)
                for value in refused
                where value.count >= 4 && haystack.contains(subsequence: Array(value.utf8)) {
                    throw FuzzFailure(
                        description: "the error repeats the header value \(value.debugDescription): \(error)")
                }
            }
            return
        }
        guard let url = request.url, URL(string: url.absoluteString)?.absoluteString == url.absoluteString
        else {
            throw FuzzFailure(
                description: "built a URL that does not read back: \(String(describing: request.url))")
        }
        guard request.httpMethod == method.rawValue, HTTPToken.isValid(method.rawValue) else {
            throw FuzzFailure(
                description: "sent method \(String(describing: request.httpMethod)) for \(method)")
        }
        // Names match case-insensitively, so one of two spellings may give way to the other; what is sent
        // must be valid, and every name must be there in some spelling.
        let sent = request.allHTTPHeaderFields ?? [:]
        for (name, value) in sent where !HTTPToken.isValid(name) || !HeaderFields.isValidValue(value) {
            throw FuzzFailure(
                description: "sent the invalid header \(name.debugDescription): \(value.debugDescription)")
        }
        for name in headers.keys where !sent.keys.contains(where: { HeaderFields.namesMatch($0, name) }) {
            throw FuzzFailure(description: "dropped the header \(name.debugDescription)")
        }
        if baseURL == nil {
            // The realm's base, then the path percent-encoded: decoding gives the path back.
            let prefix = "https://fuzz.example/api/v1"
            let text = url.absoluteString
            guard text.hasPrefix(prefix) else { throw FuzzFailure(description: "\(text) lost the base URL") }
            let rest = text.dropFirst(prefix.count).prefix { $0 != "?" }
            let trimmed = path.drop { $0 == "/" }
            let decoded = rest.isEmpty ? [] : try percentDecoded(ArraySlice(rest.dropFirst().utf8))
            guard decoded == Array(trimmed.utf8) else {
                throw FuzzFailure(description: "path \(path.debugDescription) became \(text)")
            }
        }
    }

    // MARK: multipart: the encoded form splits back into the parts it was made of

    static func multipart(_ data: Data) throws {
        var input = FuzzInput(data)
        var form = MultipartForm()
        var expected: [(name: String, filename: String?, type: String?, body: [UInt8])] = []
        for _ in 0..<input.choice(5) {
            let name = input.string(upTo: 10)
            if input.choice(2) == 0 {
                let value = input.string(upTo: 40)
                form.addField(name, value: value)
                expected.append((name, nil, nil, Array(value.utf8)))
            } else {
                let bytes = input.bytes(upTo: 60)
                let filename = input.choice(2) == 0 ? input.string(upTo: 10) : nil
                let type = input.choice(2) == 0 ? input.string(upTo: 10) : nil
                form.addData(Data(bytes), name: name, filename: filename, contentType: type)
                expected.append((name, filename, type, bytes))
            }
        }
        let headBreaks = expected.contains { part in
            [part.name, part.filename, part.type].contains {
                $0?.utf8.contains { $0 == 0x0D || $0 == 0x0A } ?? false
            }
        }
        let encoded: (body: EncodedBody, contentType: String)
        do {
            encoded = try form.encode()
        } catch is MultipartProblem {
            guard headBreaks else { throw FuzzFailure(description: "refused a valid form") }
            return
        }
        guard !headBreaks else { throw FuzzFailure(description: "accepted a CR or LF in a part's head") }
        guard case let .data(body) = encoded.body,
            let boundary = encoded.contentType.components(separatedBy: "boundary=").last
        else { throw FuzzFailure(description: "unexpected encoding \(encoded.contentType)") }

        let bytes = Array(body)
        let delimiter = Array("--\(boundary)".utf8)
        let closing = delimiter + Array("--\r\n".utf8)
        guard bytes.starts(with: delimiter), bytes.suffix(closing.count).elementsEqual(closing) else {
            throw FuzzFailure(description: "the body does not open and close with the boundary")
        }
        // Parts sit between "--boundary\r\n" and "\r\n--boundary".
        var parts: [ArraySlice<UInt8>] = []
        var start = delimiter.count + 2
        let separator = Array("\r\n".utf8) + delimiter
        var index = start
        while index + separator.count <= bytes.count {
            if bytes[index..<index + separator.count].elementsEqual(separator) {
                parts.append(bytes[start..<index])
                start = index + separator.count + 2
                index = start
            } else {
                index += 1
            }
        }
        guard parts.count == expected.count else {
            throw FuzzFailure(description: "\(expected.count) parts came back as \(parts.count)")
        }
        for (part, wanted) in zip(parts, expected) {
            let blank = Array("\r\n\r\n".utf8)
            guard
                let split = (part.startIndex..<part.endIndex).first(where: { part[$0...].starts(with: blank) }
                )
            else { throw FuzzFailure(description: "a part without a head") }
            let head = String(decoding: part[..<split], as: UTF8.self)
            var wantedHead =
                "Content-Disposition: form-data; name=\"\(wanted.name.replacingOccurrences(of: "\"", with: "%22"))\""
            if let filename = wanted.filename {
                wantedHead += "; filename=\"\(filename.replacingOccurrences(of: "\"", with: "%22"))\""
            }
            if let type = wanted.type { wantedHead += "\r\nContent-Type: \(type)" }
            guard head == wantedHead, Array(part[(split + blank.count)...]) == wanted.body else {
                throw FuzzFailure(
                    description: "part \(wanted.name.debugDescription) came back as \(head.debugDescription)")
            }
        }
    }

    // MARK: cassette: any file is read or refused with a CassetteError; what is read replays

    private static let cassetteFile = FileManager.default.temporaryDirectory
        .appendingPathComponent("swiftyservice-fuzz-\(ProcessInfo.processInfo.processIdentifier).json")

    static func cassette(_ data: Data) throws {
        // Removed after each input, so that neither the suite nor a fuzzing run leaves it behind.
        defer { try? FileManager.default.removeItem(at: cassetteFile) }
        try data.write(to: cassetteFile)
        let replay: ReplayBackend
        do {
            replay = try ReplayBackend(cassette: cassetteFile)
        } catch is CassetteError {
            return
        }
        let cassette = try Cassette.load(from: cassetteFile)
        try cassette.write(to: cassetteFile)
        guard try Cassette.load(from: cassetteFile) == cassette else {
            throw FuzzFailure(description: "the cassette changed when written and read again")
        }
        for interaction in cassette.interactions.prefix(8) {
            guard let url = URL(string: interaction.request.url) else { continue }
            var request = URLRequest(url: url)
            request.httpMethod = interaction.request.method
            let calls = Locked.make(0)
            let task = replay.send(BackendRequest(urlRequest: request)) { result in
                calls.withLock { $0 += 1 }
                if case let .success(response) = result { _ = response.response.statusCode }
            }
            task.cancel()
            guard calls.withLock({ $0 }) == 1 else {
                throw FuzzFailure(description: "the completion did not run once")
            }
        }
    }

    // MARK: cache-headers: Cache-Control, Age, Expires, dates and Retry-After

    static func cacheHeaders(_ data: Data) throws {
        var input = FuzzInput(data)
        var headers = HeaderFields()
        let names = ["Cache-Control", "Age", "Date", "Expires", "Last-Modified", "Vary"]
        for _ in 0..<input.choice(6) {
            let name = names[input.choice(names.count)]
            // Half the time, something close to a real value.
            let samples = [
                "max-age=\(input.string(upTo: 6))", "no-store, max-age=60", "Sun, 06 Nov 1994 08:49:37 GMT",
                "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994", "\(input.integer())",
                "\(input.double())",
            ]
            headers.set(
                name, input.choice(2) == 0 ? samples[input.choice(samples.count)] : input.string(upTo: 40))
        }
        let control = CacheControl(headers.value(for: "Cache-Control"))
        if let maxAge = control.maxAge, !(maxAge >= 0 && maxAge <= Freshness.maxDeltaSeconds) {
            throw FuzzFailure(
                description:
                    "max-age \(maxAge) from \(String(describing: headers.value(for: "Cache-Control")))")
        }
        let status = [200, 203, 204, 206, 301, 404, 500][input.choice(7)]
        let lifetime = Freshness.lifetime(status: status, headers: headers)
        guard lifetime >= 0, lifetime.isFinite else {
            throw FuzzFailure(description: "lifetime \(lifetime) from \(headers.fields)")
        }
        let requestTime = Date(timeIntervalSince1970: 1_700_000_000)
        let responseTime = requestTime.addingTimeInterval(Double(input.byte()))
        let now = responseTime.addingTimeInterval(Double(input.byte()))
        let age = Freshness.age(
            headers: headers, requestTime: requestTime, responseTime: responseTime, now: now)
        guard age >= now.timeIntervalSince(responseTime), age.isFinite else {
            throw FuzzFailure(description: "age \(age) from \(headers.fields)")
        }
        _ = Freshness.isStorable(method: "GET", status: status, request: HeaderFields(), response: headers)

        let retry = input.string(upTo: 40)
        if let seconds = HTTPDate.retryAfter(retry, now: now), seconds.isNaN {
            throw FuzzFailure(description: "Retry-After \(retry.debugDescription) read as NaN")
        }
        // An IMF-fixdate that reads is exactly the date it names, whatever weekday it gives.
        let imf = String(
            format: "%@, %02d %@ %04d %02d:%02d:%02d GMT",
            ["Mon", "Sun", "Fri", "Xyz"][input.choice(4)], input.choice(34),
            ["Jan", "Feb", "Apr", "Dec", "Foo"][input.choice(5)],
            1_590 + Int(input.byte()) * 2 + input.choice(2),
            input.choice(26), input.choice(62), input.choice(61))
        if let read = HTTPDate.parse(imf), !imf.hasSuffix(":60 GMT"),
            HTTPDate.format(read).dropFirst(5) != imf.dropFirst(5)
        {
            throw FuzzFailure(description: "\(imf) read as \(HTTPDate.format(read))")
        }
        let date = Date(timeIntervalSince1970: Double(UInt64(bitPattern: input.integer()) % 8_000_000_000))
        let formatted = HTTPDate.format(date)
        guard
            HTTPDate.parse(formatted)
                == Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down))
        else { throw FuzzFailure(description: "\(formatted) does not read back as \(date)") }
    }
}

extension Array where Element == UInt8 {
    func contains(subsequence needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, needle.count <= count else { return needle.isEmpty }
        return (0...(count - needle.count)).contains { self[$0..<$0 + needle.count].elementsEqual(needle) }
    }
}

// MARK: stream-split: the lines and server-sent events of a body do not depend on where its chunks end

extension FuzzTargets {
    /// The input is a body: split at chunk boundaries the input itself chooses, the line splitter and the
    /// event parser must give what they give for the whole body at once, and the lines must be what
    /// splitting the whole text on CRLF, CR and LF gives.
    static func streamSplit(_ data: Data) throws {
        let body = Array(data)
        // Boundaries from a generator seeded by the input: every input gets its own splits.
        var seed = UInt64(truncatingIfNeeded: body.count) &* 0x9E37_79B9_7F4A_7C15
        for byte in body.prefix(64) { seed = (seed ^ UInt64(byte)) &* 0x1000_0000_01B3 }
        try streamSplitChunks(body: body, seed: seed)
    }

    /// The stream-split rule for `body` cut where a generator seeded with `seed` says.
    static func streamSplitChunks(body: [UInt8], seed: UInt64) throws {
        var seed = seed
        var chunks: [Data] = []
        var start = 0
        while start < body.count {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let length = 1 + Int((seed >> 33) % 7)
            chunks.append(Data(body[start..<min(body.count, start + length)]))
            start += length
        }
        let limit = 1 << 20

        var whole = LineSplitter(maxLineLength: limit)
        var wholeLines = try whole.split(Data(body))
        if let last = try whole.finish() { wholeLines.append(last) }
        var pieces = LineSplitter(maxLineLength: limit)
        var pieceLines: [String] = []
        for chunk in chunks { pieceLines += try pieces.split(chunk) }
        if let last = try pieces.finish() { pieceLines.append(last) }
        guard wholeLines == pieceLines else {
            throw FuzzFailure(description: "lines differ by chunking: \(wholeLines) vs \(pieceLines)")
        }
        let reference = referenceLines(body)
        guard reference == wholeLines else {
            throw FuzzFailure(description: "lines \(wholeLines), expected \(reference)")
        }

        var wholeParser = ServerSentEventParser(maxEventSize: limit)
        let wholeEvents = try wholeParser.parse(Data(body))
        var pieceParser = ServerSentEventParser(maxEventSize: limit)
        var pieceEvents: [ServerSentEvent] = []
        for chunk in chunks { pieceEvents += try pieceParser.parse(chunk) }
        guard wholeEvents == pieceEvents, wholeParser.lastEventID == pieceParser.lastEventID else {
            throw FuzzFailure(description: "events differ by chunking: \(wholeEvents) vs \(pieceEvents)")
        }
        try itemsBeforeAFailure(body: body, chunks: chunks)
    }

    /// With limits small enough to fail, every item before the first one past the limit comes out, and the
    /// same ones however the body was cut: nothing before a failure depends on where the chunks ended.
    private static func itemsBeforeAFailure(body: [UInt8], chunks: [Data]) throws {
        func read<Item: Equatable>(
            _ chunks: [Data], _ parse: (Data) throws -> [Item], finish: () throws -> Void
        )
            -> (items: [Item], failed: Bool)
        {
            var items: [Item] = []
            do {
                for chunk in chunks { items += try parse(chunk) }
                try finish()
                return (items, false)
            } catch {
                return (items, true)
            }
        }
        for limit in [3, 12] {
            var whole = LineSplitter(maxLineLength: limit)
            var pieces = LineSplitter(maxLineLength: limit)
            let wholeLines = read([Data(body)], { try whole.split($0) }, finish: { _ = try whole.finish() })
            let pieceLines = read(chunks, { try pieces.split($0) }, finish: { _ = try pieces.finish() })
            guard wholeLines == pieceLines else {
                throw FuzzFailure(
                    description:
                        "limit \(limit): lines before the failure differ by chunking: \(wholeLines) vs \(pieceLines)"
                )
            }
            var wholeParser = ServerSentEventParser(maxEventSize: limit)
            var pieceParser = ServerSentEventParser(maxEventSize: limit)
            let wholeEvents = read(
                [Data(body)], { try wholeParser.parse($0) }, finish: { try wholeParser.finish() })
            let pieceEvents = read(
                chunks, { try pieceParser.parse($0) }, finish: { try pieceParser.finish() })
            guard wholeEvents == pieceEvents, wholeParser.lastEventID == pieceParser.lastEventID else {
                throw FuzzFailure(
                    description:
                        "limit \(limit): events before the failure differ by chunking: \(wholeEvents) vs \(pieceEvents)"
                )
            }
        }
    }

    /// Lines by the plain rule: CRLF, CR and LF each end one; a last line without an end still counts.
    private static func referenceLines(_ bytes: [UInt8]) -> [String] {
        var lines: [String] = []
        var current: [UInt8] = []
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == 13 || byte == 10 {
                lines.append(String(decoding: current, as: UTF8.self))
                current = []
                if byte == 13, index + 1 < bytes.count, bytes[index + 1] == 10 { index += 1 }
            } else {
                current.append(byte)
            }
            index += 1
        }
        if !current.isEmpty { lines.append(String(decoding: current, as: UTF8.self)) }
        return lines
    }
}
