/// Reads YAML 1.2 text into ``JSON`` values: the YAML that API descriptions are written in.
///
/// Block and flow collections, plain, quoted and block scalars, comments, anchors and aliases, merge keys
/// (`<<`) and several documents in one stream. Plain scalars resolve by the YAML 1.2 core schema (`yes` is
/// text, `0x1F` is 31, `1e3` is a number); mapping keys become their text (`200:` is `"200"`). Errors name
/// the line and column.
enum YAMLReader {
    /// Nesting deeper than this is refused rather than recursed into.
    static let maxDepth = 512
    /// Values that aliases may copy in all: far beyond any description, small enough to stop a "billion
    /// laughs" stream of aliases of aliases.
    static let maxAliasExpansion = 10_000_000

    /// Every document of the stream, in order.
    static func read(_ bytes: [UInt8]) throws(SyntaxError) -> [JSON] {
        try bytes.withUnsafeBufferPointer { buffer throws(SyntaxError) in
            if let invalid = TextInput.firstInvalidUTF8(buffer) {
                var line = 1
                var column = 1
                for byte in buffer[..<invalid] {
                    if byte == 0x0A {
                        line += 1
                        column = 1
                    } else if byte & 0xC0 != 0x80 {
                        column += 1
                    }
                }
                throw SyntaxError(
                    message: "the text is not valid UTF-8", position: TextPosition(line: line, column: column))
            }
            var parser = Parser(scanner: YAMLScanner(bytes: buffer))
            return try parser.stream()
        }
    }

    private struct Parser {
        typealias Token = YAMLScanner.Token

        var scanner: YAMLScanner
        var anchors: [String: (value: JSON, size: Int)] = [:]
        /// Values made so far, aliases counted at their full size.
        var made = 0

        init(scanner: YAMLScanner) { self.scanner = scanner }

        func error(_ message: String, at token: Token) -> SyntaxError {
            SyntaxError(message: message, position: token.start.position)
        }

        mutating func check(_ kind: YAMLScanner.Kind) throws(SyntaxError) -> Bool {
            try scanner.peekToken().kind == kind
        }

        mutating func stream() throws(SyntaxError) -> [JSON] {
            _ = try scanner.nextToken()
            var documents: [JSON] = []
            while true {
                while try check(.documentEnd) { _ = try scanner.nextToken() }
                let token = try scanner.peekToken()
                if token.kind == .streamEnd { break }
                anchors = [:]
                if token.kind == .documentStart {
                    _ = try scanner.nextToken()
                    let next = try scanner.peekToken().kind
                    if next == .documentStart || next == .documentEnd || next == .streamEnd {
                        documents.append(.null)
                        continue
                    }
                }
                documents.append(try node(block: true, indentlessSequence: false, depth: 0))
                let after = try scanner.peekToken()
                switch after.kind {
                case .documentStart, .documentEnd, .streamEnd: break
                default: throw error("expected the end of the document, but found \(after.kind.name)", at: after)
                }
            }
            return documents
        }

        mutating func node(block: Bool, indentlessSequence: Bool, depth: Int) throws(SyntaxError) -> JSON {
            try keyOrNode(block: block, indentlessSequence: indentlessSequence, depth: depth).value
        }

        /// A node and whether it is the plain scalar `<<`, which as a key means "merge".
        mutating func keyOrNode(block: Bool, indentlessSequence: Bool, depth: Int) throws(SyntaxError) -> (
            value: JSON, isMergeKey: Bool
        ) {
            var token = try scanner.peekToken()
            guard depth < YAMLReader.maxDepth else {
                throw error("values nest deeper than \(YAMLReader.maxDepth) levels", at: token)
            }
            if case let .alias(name) = token.kind {
                _ = try scanner.nextToken()
                guard let anchored = anchors[name] else { throw error("the alias *\(name) has no anchor", at: token) }
                made += anchored.size
                guard made <= YAMLReader.maxAliasExpansion else {
                    throw error("aliases expand to more than \(YAMLReader.maxAliasExpansion) values", at: token)
                }
                return (anchored.value, false)
            }
            var anchor: String?
            var tag: String?
            while true {
                if case let .anchor(name) = token.kind, anchor == nil {
                    anchor = name
                } else if case let .tag(text) = token.kind, tag == nil {
                    tag = Self.standardTag(text)
                } else {
                    break
                }
                _ = try scanner.nextToken()
                token = try scanner.peekToken()
            }
            let before = made
            made += 1
            var isMergeKey = false
            let value: JSON
            switch token.kind {
            case .blockEntry where indentlessSequence:
                value = try blockSequence(indentless: true, depth: depth)
            case let .scalar(text, style):
                _ = try scanner.nextToken()
                isMergeKey = style == .plain && tag == nil && text == "<<"
                value = try Self.scalar(text, plain: style == .plain, tag: tag, at: token)
            case .flowSequenceStart: value = try flowSequence(depth: depth)
            case .flowMappingStart: value = try flowMapping(depth: depth)
            case .blockSequenceStart where block: value = try blockSequence(indentless: false, depth: depth)
            case .blockMappingStart where block: value = try blockMapping(depth: depth)
            default:
                guard anchor != nil || tag != nil else {
                    throw error("expected a value, but found \(token.kind.name)", at: token)
                }
                value = try Self.scalar("", plain: true, tag: tag, at: token)
            }
            if let anchor { anchors[anchor] = (value, made - before) }
            return (value, isMergeKey)
        }

        mutating func blockSequence(indentless: Bool, depth: Int) throws(SyntaxError) -> JSON {
            if !indentless { _ = try scanner.nextToken() }
            var elements: [JSON] = []
            while try check(.blockEntry) {
                _ = try scanner.nextToken()
                let next = try scanner.peekToken().kind
                let ends: Bool =
                    switch next {
                    case .blockEntry, .blockEnd: true
                    case .key, .value: indentless
                    default: false
                    }
                elements.append(
                    ends ? .null : try node(block: true, indentlessSequence: false, depth: depth + 1))
            }
            if !indentless {
                let token = try scanner.nextToken()
                guard token.kind == .blockEnd else {
                    throw error("expected another '-' entry or the end of the sequence, but found \(token.kind.name)", at: token)
                }
            }
            return .array(elements)
        }

        mutating func blockMapping(depth: Int) throws(SyntaxError) -> JSON {
            _ = try scanner.nextToken()
            var builder = MappingBuilder()
            while true {
                let token = try scanner.peekToken()
                switch token.kind {
                case .key:
                    _ = try scanner.nextToken()
                    let next = try scanner.peekToken().kind
                    let key: (value: JSON, isMergeKey: Bool) =
                        next == .key || next == .value || next == .blockEnd
                        ? (.null, false) : try keyOrNode(block: true, indentlessSequence: true, depth: depth + 1)
                    let value = try mappingValue(block: true, depth: depth)
                    try builder.add(key, value, at: token, self)
                case .value:
                    let value = try mappingValue(block: true, depth: depth)
                    try builder.add((.null, false), value, at: token, self)
                case .blockEnd:
                    _ = try scanner.nextToken()
                    return .object(builder.object)
                default:
                    throw error("expected a key or the end of the mapping, but found \(token.kind.name)", at: token)
                }
            }
        }

        mutating func mappingValue(block: Bool, depth: Int) throws(SyntaxError) -> JSON {
            guard try check(.value) else { return .null }
            _ = try scanner.nextToken()
            let next = try scanner.peekToken().kind
            let empty: Bool =
                block
                ? next == .key || next == .value || next == .blockEnd
                : next == .flowEntry || next == .flowMappingEnd || next == .flowSequenceEnd
            if empty { return .null }
            return try node(block: block, indentlessSequence: block, depth: depth + 1)
        }

        mutating func flowSequence(depth: Int) throws(SyntaxError) -> JSON {
            _ = try scanner.nextToken()
            var elements: [JSON] = []
            var first = true
            while true {
                if try check(.flowSequenceEnd) { break }
                if !first {
                    let token = try scanner.nextToken()
                    guard token.kind == .flowEntry else {
                        throw error("expected ',' or ']' in the sequence, but found \(token.kind.name)", at: token)
                    }
                    if try check(.flowSequenceEnd) { break }
                }
                first = false
                let token = try scanner.peekToken()
                if token.kind == .key {
                    // `[a: 1]`: an entry that is a mapping of one pair.
                    _ = try scanner.nextToken()
                    let next = try scanner.peekToken().kind
                    let key: (value: JSON, isMergeKey: Bool) =
                        next == .value || next == .flowEntry || next == .flowSequenceEnd
                        ? (.null, false) : try keyOrNode(block: false, indentlessSequence: false, depth: depth + 1)
                    let value = try mappingValue(block: false, depth: depth)
                    var builder = MappingBuilder()
                    try builder.add(key, value, at: token, self)
                    elements.append(.object(builder.object))
                } else {
                    elements.append(try node(block: false, indentlessSequence: false, depth: depth + 1))
                }
            }
            _ = try scanner.nextToken()
            return .array(elements)
        }

        mutating func flowMapping(depth: Int) throws(SyntaxError) -> JSON {
            _ = try scanner.nextToken()
            var builder = MappingBuilder()
            var first = true
            while true {
                if try check(.flowMappingEnd) { break }
                if !first {
                    let token = try scanner.nextToken()
                    guard token.kind == .flowEntry else {
                        throw error("expected ',' or '}' in the mapping, but found \(token.kind.name)", at: token)
                    }
                    if try check(.flowMappingEnd) { break }
                }
                first = false
                let token = try scanner.peekToken()
                if token.kind == .key {
                    _ = try scanner.nextToken()
                    let next = try scanner.peekToken().kind
                    let key: (value: JSON, isMergeKey: Bool) =
                        next == .value || next == .flowEntry || next == .flowMappingEnd
                        ? (.null, false) : try keyOrNode(block: false, indentlessSequence: false, depth: depth + 1)
                    let value = try mappingValue(block: false, depth: depth)
                    try builder.add(key, value, at: token, self)
                } else if token.kind == .value {
                    let value = try mappingValue(block: false, depth: depth)
                    try builder.add((.null, false), value, at: token, self)
                } else {
                    let key = try node(block: false, indentlessSequence: false, depth: depth + 1)
                    try builder.add((key, false), .null, at: token, self)
                }
            }
            _ = try scanner.nextToken()
            return .object(builder.object)
        }

        /// A mapping's pairs as they come: merged pairs (`<<`) first, then the mapping's own, as PyYAML orders
        /// them; a key of its own wins over a merged one, and an earlier merged mapping over a later one.
        struct MappingBuilder {
            var merged: [JSONObject.Member] = []
            var own: [JSONObject.Member] = []
            var seen: Set<String> = []

            var object: JSONObject {
                merged.isEmpty ? JSONObject(own) : JSONObject(merged + own)
            }

            mutating func add(
                _ key: (value: JSON, isMergeKey: Bool), _ value: JSON, at token: Token, _ parser: Parser
            ) throws(SyntaxError) {
                if key.isMergeKey {
                    switch value {
                    case let .object(object): merged += object.members
                    case let .array(elements):
                        var pairs: [JSONObject.Member] = []
                        for element in elements.reversed() {
                            guard case let .object(object) = element else {
                                throw parser.error("a merge key (<<) takes mappings to merge", at: token)
                            }
                            pairs += object.members
                        }
                        merged += pairs
                    default: throw parser.error("a merge key (<<) takes a mapping or a list of mappings", at: token)
                    }
                    return
                }
                guard let text = Self.keyText(key.value) else {
                    throw parser.error("a mapping key must be a scalar; collections as keys are not supported", at: token)
                }
                guard seen.insert(text).inserted else {
                    throw parser.error("the key '\(text)' appears twice in one mapping", at: token)
                }
                own.append((text, value))
            }

            static func keyText(_ key: JSON) -> String? {
                switch key {
                case .null: "null"
                case .array, .object: nil
                default: key.scalarText
                }
            }
        }

        // MARK: Scalars

        static func standardTag(_ text: String) -> String {
            if text.hasPrefix("!!") { return "tag:yaml.org,2002:" + text.dropFirst(2) }
            if text.hasPrefix("!<"), text.hasSuffix(">") { return String(text.dropFirst(2).dropLast()) }
            return text
        }

        static func scalar(_ text: String, plain: Bool, tag: String?, at token: Token) throws(SyntaxError) -> JSON {
            switch tag {
            case nil: return plain ? resolve(text) : .string(text)
            case "tag:yaml.org,2002:str", "!": return .string(text)
            case "tag:yaml.org,2002:null": return .null
            case "tag:yaml.org,2002:bool":
                if let bool = bool(text) { return .bool(bool) }
            case "tag:yaml.org,2002:int":
                if let integer = integer(text) { return integer }
            case "tag:yaml.org,2002:float":
                if let float = float(text) { return float }
                if case let .integer(integer)? = integer(text) { return .double(Double(integer)) }
            default:
                // Other tags (`!!binary`, application tags) mean nothing to a description: read as untagged.
                return plain ? resolve(text) : .string(text)
            }
            throw SyntaxError(
                message: "'\(text)' is not a value of the tag \(tag ?? "")", position: token.start.position)
        }

        /// The YAML 1.2 core schema.
        static func resolve(_ text: String) -> JSON {
            guard let first = text.utf8.first else { return .null }
            switch first {
            case UInt8(ascii: "~"), UInt8(ascii: "n"), UInt8(ascii: "N"):
                if text == "~" || text == "null" || text == "Null" || text == "NULL" { return .null }
            case UInt8(ascii: "t"), UInt8(ascii: "T"), UInt8(ascii: "f"), UInt8(ascii: "F"):
                if let bool = bool(text) { return .bool(bool) }
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "+"), UInt8(ascii: "."):
                if let integer = integer(text) { return integer }
                if let float = float(text) { return float }
            default: break
            }
            return .string(text)
        }

        static func bool(_ text: String) -> Bool? {
            switch text {
            case "true", "True", "TRUE": true
            case "false", "False", "FALSE": false
            default: nil
            }
        }

        static func integer(_ text: String) -> JSON? {
            let utf8 = Array(text.utf8)
            func digits(_ range: ArraySlice<UInt8>, _ isDigit: (UInt8) -> Bool) -> Bool {
                !range.isEmpty && range.allSatisfy(isDigit)
            }
            let isDecimal = { (byte: UInt8) in byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
            if utf8.count > 2, utf8[0] == UInt8(ascii: "0") {
                if utf8[1] == UInt8(ascii: "o"),
                    digits(utf8[2...], { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "7") })
                {
                    return UInt64(text.dropFirst(2), radix: 8).map(Self.number) ?? .double(Double.infinity)
                }
                if utf8[1] == UInt8(ascii: "x"), digits(utf8[2...], { hexDigit($0) }) {
                    return UInt64(text.dropFirst(2), radix: 16).map(Self.number)
                        ?? .double(Double(sign: .plus, exponent: 64, significand: 1))
                }
            }
            let signless = utf8.first == UInt8(ascii: "-") || utf8.first == UInt8(ascii: "+") ? utf8[1...] : utf8[...]
            guard digits(signless, isDecimal) else { return nil }
            if let integer = Int64(text.hasPrefix("+") ? String(text.dropFirst()) : text) { return .integer(integer) }
            return Double(text).map(JSON.double)
        }

        static func number(_ value: UInt64) -> JSON {
            value <= UInt64(Int64.max) ? .integer(Int64(value)) : .double(Double(value))
        }

        static func hexDigit(_ byte: UInt8) -> Bool {
            (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "f"))
                || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "F"))
        }

        /// `[-+]? ( \. [0-9]+ | [0-9]+ ( \. [0-9]* )? ) ( [eE] [-+]? [0-9]+ )?`, `.inf`, `.nan`.
        static func float(_ text: String) -> JSON? {
            switch text {
            case ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF": return .double(.infinity)
            case "-.inf", "-.Inf", "-.INF": return .double(-.infinity)
            case ".nan", ".NaN", ".NAN": return .double(.nan)
            default: break
            }
            let utf8 = Array(text.utf8)
            var index = 0
            func isDigit(_ at: Int) -> Bool {
                at < utf8.count && utf8[at] >= UInt8(ascii: "0") && utf8[at] <= UInt8(ascii: "9")
            }
            if index < utf8.count, utf8[index] == UInt8(ascii: "-") || utf8[index] == UInt8(ascii: "+") { index += 1 }
            var mantissaDigits = 0
            while isDigit(index) {
                index += 1
                mantissaDigits += 1
            }
            if index < utf8.count, utf8[index] == UInt8(ascii: ".") {
                index += 1
                while isDigit(index) {
                    index += 1
                    mantissaDigits += 1
                }
            }
            guard mantissaDigits > 0 else { return nil }
            if index < utf8.count, utf8[index] | 0x20 == UInt8(ascii: "e") {
                index += 1
                if index < utf8.count, utf8[index] == UInt8(ascii: "-") || utf8[index] == UInt8(ascii: "+") {
                    index += 1
                }
                guard isDigit(index) else { return nil }
                while isDigit(index) { index += 1 }
            }
            guard index == utf8.count else { return nil }
            return Double(text).map(JSON.double)
        }
    }
}
