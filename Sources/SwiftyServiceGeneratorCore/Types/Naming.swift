/// Swift names from the names a description uses: `pet_id` → `petId`, `repos/get-content` → `reposGetContent`,
/// `basic-error` → `BasicError`, `+1` → `plus1`.
enum Naming {
    /// Words of a name: split at anything not a letter or digit, at lower→upper humps (`petId`), and before
    /// the last capital of an acronym that starts a word (`HTTPServer` → `HTTP`, `Server`).
    static func words(_ text: String) -> [String] {
        var words: [String] = []
        var current: [Character] = []
        let characters = Array(text)
        func flush() {
            if !current.isEmpty { words.append(String(current)) }
            current = []
        }
        for (index, character) in characters.enumerated() {
            guard let ascii = character.asciiValue,
                (ascii >= 0x30 && ascii <= 0x39) || (ascii | 0x20 >= 0x61 && ascii | 0x20 <= 0x7A)
            else {
                if index == 0 || current.isEmpty, words.isEmpty {
                    if character == "+" { words.append("plus") }
                    if character == "-", index + 1 < characters.count, characters[index + 1].isNumber {
                        words.append("minus")
                    }
                }
                flush()
                continue
            }
            if let last = current.last {
                let hump = isLower(last) && isUpper(character)
                let acronymEnd =
                    isUpper(last) && isUpper(character) && index + 1 < characters.count
                    && isLower(characters[index + 1])
                let digitToLetter = isDigit(last) && isUpper(character)
                if hump || acronymEnd || digitToLetter { flush() }
            }
            current.append(character)
        }
        flush()
        // A name in capitals throughout (`IN_PROGRESS`) is words, not acronyms.
        if !text.contains(where: \.isLowercase) { return words.map { $0.lowercased() } }
        return words
    }

    private static func isLower(_ character: Character) -> Bool {
        character.asciiValue.map { $0 >= 0x61 && $0 <= 0x7A } ?? false
    }

    private static func isUpper(_ character: Character) -> Bool {
        character.asciiValue.map { $0 >= 0x41 && $0 <= 0x5A } ?? false
    }

    private static func isDigit(_ character: Character) -> Bool {
        character.asciiValue.map { $0 >= 0x30 && $0 <= 0x39 } ?? false
    }

    /// `lowerCamelCase`, never empty, never starting with a digit.
    static func lowerCamel(_ text: String) -> String {
        let words = words(text)
        guard let first = words.first else { return "value" }
        let head = first.allSatisfy(\.isUppercase) || first.count == 1 ? first.lowercased() : lowerFirst(first)
        let name = head + words.dropFirst().map(upperFirst).joined()
        return name.first!.isNumber ? "_" + name : name
    }

    /// `UpperCamelCase`, never empty; a leading single digit is spelled out (`1-Click` → `OneClick`).
    static func upperCamel(_ text: String) -> String {
        let words = words(text)
        guard !words.isEmpty else { return "Value" }
        var name = words.map(upperFirst).joined()
        if let first = name.first, first.isNumber {
            let digits = name.prefix(while: \.isNumber)
            let spelled = ["Zero", "One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine"]
            name = digits.count == 1 ? spelled[Int(String(digits))!] + name.dropFirst() : "_" + name
        }
        return name
    }

    static func upperFirst(_ word: String) -> String {
        guard let first = word.first else { return word }
        return first.uppercased() + word.dropFirst()
    }

    static func lowerFirst(_ word: String) -> String {
        guard let first = word.first else { return word }
        return first.lowercased() + word.dropFirst()
    }

    /// A word made singular for the element type of an array property: `pets` → `Pet`, `policies` → `Policy`.
    static func singular(_ name: String) -> String {
        if name.hasSuffix("ies"), name.count > 4 { return String(name.dropLast(3)) + "y" }
        if name.hasSuffix("sses") || name.hasSuffix("xes") || name.hasSuffix("ches") || name.hasSuffix("shes") {
            return String(name.dropLast(2))
        }
        if name.hasSuffix("s"), !name.hasSuffix("ss"), !name.hasSuffix("us"), !name.hasSuffix("is"), name.count > 3 {
            return String(name.dropLast())
        }
        return name + "Item"
    }

    /// Swift's keywords: names that need backticks where they are declared.
    static let keywords: Set<String> = [
        "associatedtype", "class", "deinit", "enum", "extension", "fileprivate", "func", "import", "init", "inout",
        "internal", "let", "open", "operator", "private", "precedencegroup", "protocol", "public", "rethrows",
        "static", "struct", "subscript", "typealias", "var", "break", "case", "catch", "continue", "default", "defer",
        "do", "else", "fallthrough", "for", "guard", "if", "in", "repeat", "return", "throw", "switch", "where",
        "while", "as", "Any", "false", "is", "nil", "self", "Self", "super", "throws", "true", "try", "await",
        "async", "some", "any", "_",
    ]

    /// The name as it can be written in Swift: backticks around a keyword.
    static func escaped(_ name: String) -> String {
        keywords.contains(name) ? "`\(name)`" : name
    }

    /// Names a generated type must not take: Swift's, Foundation's and SwiftyService's that generated code
    /// or its users' code names, and those Swift gives a meaning of its own (`Type`, `Protocol`).
    static let reservedTypeNames: Set<String> = [
        "Type", "Protocol", "Self", "Any", "AnyObject", "String", "Substring", "Character", "Int", "Int8", "Int16",
        "Int32", "Int64", "UInt", "UInt8", "UInt16", "UInt32", "UInt64", "Bool", "Double", "Float", "Decimal",
        "Array", "Dictionary", "Set", "Optional", "Result", "Error", "Never", "Void", "Codable", "Decodable",
        "Encodable", "Sendable", "Hashable", "Equatable", "Comparable", "Identifiable", "CodingKey", "CodingKeys",
        "Decoder", "Encoder", "DecodingError", "EncodingError", "RawRepresentable", "CaseIterable",
        "CustomStringConvertible", "Data", "Date", "URL", "UUID", "JSONDecoder", "JSONEncoder", "TimeZone",
        "Locale", "Calendar", "URLRequest", "URLComponents", "URLQueryItem", "NSNull", "Task", "Foundation",
        "Swift", "SwiftyServiceProtocol", "ServiceRealm", "HTTPMethod", "TypedEndpoint", "NoContent",
        "RequestBody", "MultipartForm", "ErrorBody", "Middleware", "MiddlewareNext", "RequestContext", "Response",
        "TokenAuthentication", "AccessToken", "ParameterEncoding", "StatusCodes", "ServiceError",
        "HTTPHeaderDictionary", "Service", "CRUDMethod", "JSONValue", "SwiftyService", "Typed", "Credentials",
        "Authentication", "Server", "AnyKey", "DiscriminatorKey",
    ]

    /// Members of an endpoint enum that cases must not be named after.
    static let endpointMembers: Set<String> = [
        "realm", "baseURL", "path", "method", "parameters", "parameterEncoding", "body", "headers", "sampleData",
        "validStatusCodes", "middleware", "errorBody", "download", "decoder", "deliver", "request", "urlRequest",
        "returning", "override", "stream", "upload", "send", "prepare", "security", "Typed", "init", "self",
        "operationID", "description", "transfer", "cancel", "samples", "securityRequirements",
    ]

    /// Members of generated models that properties and cases must not be named after.
    static let modelMembers: Set<String> = ["hashValue", "rawValue", "init", "self", "encode", "Type", "Protocol"]
}

/// Hands out names unique within one scope: `name`, `name2`, `name3`…
struct NameScope {
    private var taken: Set<String>

    init(reserved: Set<String> = []) { taken = reserved }

    /// `base`, or `base` with the first number that makes it unique.
    mutating func claim(_ base: String) -> String {
        if taken.insert(base).inserted { return base }
        var number = 2
        while !taken.insert("\(base)\(number)").inserted { number += 1 }
        return "\(base)\(number)"
    }

    /// `base`, or `base` with the first number that makes it unique, and not one of `avoiding` either.
    mutating func claim(_ base: String, avoiding: Set<String>) -> String {
        var candidate = base
        var number = 2
        while taken.contains(candidate) || avoiding.contains(candidate) {
            candidate = "\(base)\(number)"
            number += 1
        }
        taken.insert(candidate)
        return candidate
    }

    func contains(_ name: String) -> Bool { taken.contains(name) }

    mutating func reserve(_ name: String) { taken.insert(name) }
}
