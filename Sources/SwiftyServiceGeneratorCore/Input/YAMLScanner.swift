/// Splits YAML text into tokens: indentation becomes explicit block starts and ends, and a key is recognised
/// once the `:` after it is seen (the "simple key" of the YAML specification), as libyaml and PyYAML do.
struct YAMLScanner {
    struct Mark {
        var index: Int
        var line: Int
        var column: Int

        var position: TextPosition { TextPosition(line: line + 1, column: column + 1) }
    }

    enum ScalarStyle: Equatable {
        case plain, singleQuoted, doubleQuoted, literal, folded
    }

    enum Kind: Equatable {
        case streamStart, streamEnd, documentStart, documentEnd
        case blockSequenceStart, blockMappingStart, blockEnd
        case flowSequenceStart, flowSequenceEnd, flowMappingStart, flowMappingEnd
        case key, value, blockEntry, flowEntry
        case alias(String), anchor(String), tag(String)
        case scalar(String, ScalarStyle)

        var name: String {
            switch self {
            case .streamStart: "the start of the stream"
            case .streamEnd: "the end of the stream"
            case .documentStart: "'---'"
            case .documentEnd: "'...'"
            case .blockSequenceStart: "the start of a sequence"
            case .blockMappingStart: "the start of a mapping"
            case .blockEnd: "the end of a block"
            case .flowSequenceStart: "'['"
            case .flowSequenceEnd: "']'"
            case .flowMappingStart: "'{'"
            case .flowMappingEnd: "'}'"
            case .key: "'?'"
            case .value: "':'"
            case .blockEntry: "'-'"
            case .flowEntry: "','"
            case .alias: "an alias"
            case .anchor: "an anchor"
            case .tag: "a tag"
            case .scalar: "a scalar"
            }
        }
    }

    struct Token {
        var kind: Kind
        var start: Mark
    }

    private struct SimpleKey {
        var tokenNumber: Int
        var required: Bool
        var mark: Mark
    }

    private let bytes: UnsafeBufferPointer<UInt8>
    private var mark = Mark(index: 0, line: 0, column: 0)
    private var done = false
    private var flowLevel = 0
    private var tokens: [Token] = []
    private var head = 0
    private var tokensTaken = 0
    private var indent = -1
    private var indents: [Int] = []
    private var allowSimpleKey = true
    /// One possible simple key per flow level, indexed by level.
    private var possibleSimpleKeys: [SimpleKey?] = [nil]

    init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
        tokens.append(Token(kind: .streamStart, start: mark))
    }

    // MARK: Reading characters

    @inline(__always) private func peek(_ offset: Int = 0) -> UInt8 {
        let at = mark.index + offset
        return at < bytes.count ? bytes[at] : 0
    }

    @inline(__always) private static func isBreak(_ byte: UInt8) -> Bool { byte == 0x0A || byte == 0x0D }
    @inline(__always) private static func isBlank(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }
    /// A blank, a line break or the end of the text.
    @inline(__always) private static func isBlankOrEnd(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D || byte == 0
    }
    @inline(__always) private static func isFlowIndicator(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: ",") || byte == UInt8(ascii: "[") || byte == UInt8(ascii: "]")
            || byte == UInt8(ascii: "{") || byte == UInt8(ascii: "}")
    }

    private var atEnd: Bool { mark.index >= bytes.count }

    private mutating func forward(_ count: Int = 1) {
        for _ in 0..<count {
            guard mark.index < bytes.count else { return }
            let byte = bytes[mark.index]
            mark.index += 1
            if byte == 0x0A || (byte == 0x0D && peek() != 0x0A) {
                mark.line += 1
                mark.column = 0
            } else if byte & 0xC0 != 0x80 {
                mark.column += 1
            }
        }
    }

    /// Consumes a line break (`\n`, `\r\n` or `\r`); returns whether there was one.
    private mutating func scanLineBreak() -> Bool {
        let byte = peek()
        if byte == 0x0D {
            forward(peek(1) == 0x0A ? 2 : 1)
            return true
        }
        if byte == 0x0A {
            forward()
            return true
        }
        return false
    }

    private func text(_ range: Range<Int>) -> String {
        String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self)
    }

    private func error(_ message: String, at mark: Mark? = nil) -> SyntaxError {
        SyntaxError(message: message, position: (mark ?? self.mark).position)
    }

    // MARK: Tokens

    /// The next token, without consuming it.
    mutating func peekToken() throws(SyntaxError) -> Token {
        while needMoreTokens() { try fetchMoreTokens() }
        return tokens[head]
    }

    /// Consumes and returns the next token.
    mutating func nextToken() throws(SyntaxError) -> Token {
        let token = try peekToken()
        head += 1
        tokensTaken += 1
        if head > 64, head * 2 > tokens.count {
            tokens.removeFirst(head)
            head = 0
        }
        return token
    }

    private var pendingCount: Int { tokens.count - head }

    private mutating func needMoreTokens() -> Bool {
        if done { return false }
        if pendingCount == 0 { return true }
        // A token that may turn out to be a key cannot be handed out until the `:` is seen or ruled out.
        staleSimpleKeysQuietly()
        return nextPossibleSimpleKey() == tokensTaken
    }

    private func nextPossibleSimpleKey() -> Int? {
        var minimum: Int?
        for case let key? in possibleSimpleKeys where minimum == nil || key.tokenNumber < minimum! {
            minimum = key.tokenNumber
        }
        return minimum
    }

    private mutating func fetchMoreTokens() throws(SyntaxError) {
        try scanToNextToken()
        try staleSimpleKeys()
        unwindIndent(mark.column)
        let byte = peek()
        if atEnd { return fetchStreamEnd() }
        switch byte {
        case UInt8(ascii: "%") where mark.column == 0: return try skipDirective()
        case UInt8(ascii: "-") where isDocumentIndicator("---"):
            return try fetchDocumentIndicator(.documentStart)
        case UInt8(ascii: ".") where isDocumentIndicator("..."): return try fetchDocumentIndicator(.documentEnd)
        case UInt8(ascii: "["): return try fetchFlowCollectionStart(.flowSequenceStart)
        case UInt8(ascii: "{"): return try fetchFlowCollectionStart(.flowMappingStart)
        case UInt8(ascii: "]"): return try fetchFlowCollectionEnd(.flowSequenceEnd)
        case UInt8(ascii: "}"): return try fetchFlowCollectionEnd(.flowMappingEnd)
        case UInt8(ascii: ","): return try fetchFlowEntry()
        case UInt8(ascii: "-") where Self.isBlankOrEnd(peek(1)): return try fetchBlockEntry()
        case UInt8(ascii: "?") where flowLevel > 0 || Self.isBlankOrEnd(peek(1)): return try fetchKey()
        case UInt8(ascii: ":") where flowLevel > 0 || Self.isBlankOrEnd(peek(1)): return try fetchValue()
        case UInt8(ascii: "*"): return try fetchAnchorOrAlias(alias: true)
        case UInt8(ascii: "&"): return try fetchAnchorOrAlias(alias: false)
        case UInt8(ascii: "!"): return try fetchTag()
        case UInt8(ascii: "|") where flowLevel == 0: return try fetchBlockScalar(folded: false)
        case UInt8(ascii: ">") where flowLevel == 0: return try fetchBlockScalar(folded: true)
        case UInt8(ascii: "'"): return try fetchFlowScalar(double: false)
        case UInt8(ascii: "\""): return try fetchFlowScalar(double: true)
        default:
            if checkPlain() { return try fetchPlain() }
            let shown = byte >= 0x20 && byte < 0x7F ? "'\(Character(UnicodeScalar(byte)))'" : "byte \(byte)"
            throw error("found \(shown), which cannot start any token")
        }
    }

    private func isDocumentIndicator(_ indicator: StaticString) -> Bool {
        guard mark.column == 0 else { return false }
        let utf8 = UnsafeBufferPointer(start: indicator.utf8Start, count: indicator.utf8CodeUnitCount)
        for (offset, byte) in utf8.enumerated() where peek(offset) != byte { return false }
        return Self.isBlankOrEnd(peek(3))
    }

    private func checkPlain() -> Bool {
        let byte = peek()
        switch byte {
        case 0, 0x20, 0x09, 0x0A, 0x0D, UInt8(ascii: ","), UInt8(ascii: "["), UInt8(ascii: "]"),
            UInt8(ascii: "{"), UInt8(ascii: "}"), UInt8(ascii: "#"), UInt8(ascii: "&"), UInt8(ascii: "*"),
            UInt8(ascii: "!"), UInt8(ascii: "|"), UInt8(ascii: ">"), UInt8(ascii: "'"), UInt8(ascii: "\""),
            UInt8(ascii: "%"), UInt8(ascii: "@"), UInt8(ascii: "`"):
            return false
        case UInt8(ascii: "-"): return !Self.isBlankOrEnd(peek(1))
        case UInt8(ascii: "?"), UInt8(ascii: ":"):
            return !Self.isBlankOrEnd(peek(1)) && (flowLevel == 0 || !Self.isFlowIndicator(peek(1)))
        default: return true
        }
    }

    private mutating func scanToNextToken() throws(SyntaxError) {
        if mark.index == 0, bytes.starts(with: [0xEF, 0xBB, 0xBF]) { mark.index = 3 }
        while true {
            let lineStart = mark.column == 0
            var sawTab = false
            while Self.isBlank(peek()) {
                if peek() == 0x09 { sawTab = true }
                forward()
            }
            if peek() == UInt8(ascii: "#") {
                while !Self.isBreak(peek()), !atEnd { forward() }
            }
            if scanLineBreak() {
                if flowLevel == 0 { allowSimpleKey = true }
                continue
            }
            // Tabs may separate tokens on a line, but never indent one: the indentation would be ambiguous.
            if sawTab, lineStart, flowLevel == 0, !atEnd {
                throw error("a tab cannot indent a line; indent with spaces")
            }
            return
        }
    }

    // MARK: Simple keys and indentation

    private mutating func staleSimpleKeysQuietly() {
        for level in possibleSimpleKeys.indices {
            guard let key = possibleSimpleKeys[level] else { continue }
            if key.mark.line != mark.line || mark.index - key.mark.index > 1024, !key.required {
                possibleSimpleKeys[level] = nil
            }
        }
    }

    private mutating func staleSimpleKeys() throws(SyntaxError) {
        for level in possibleSimpleKeys.indices {
            guard let key = possibleSimpleKeys[level] else { continue }
            if key.mark.line != mark.line || mark.index - key.mark.index > 1024 {
                if key.required { throw error("could not find the ':' expected after a key", at: key.mark) }
                possibleSimpleKeys[level] = nil
            }
        }
    }

    private mutating func savePossibleSimpleKey() throws(SyntaxError) {
        let required = flowLevel == 0 && indent == mark.column
        guard allowSimpleKey else { return }
        try removePossibleSimpleKey()
        possibleSimpleKeys[flowLevel] = SimpleKey(
            tokenNumber: tokensTaken + pendingCount, required: required, mark: mark)
    }

    private mutating func removePossibleSimpleKey() throws(SyntaxError) {
        if let key = possibleSimpleKeys[flowLevel], key.required {
            throw error("could not find the ':' expected after a key", at: key.mark)
        }
        possibleSimpleKeys[flowLevel] = nil
    }

    private mutating func unwindIndent(_ column: Int) {
        guard flowLevel == 0 else { return }
        while indent > column {
            indent = indents.removeLast()
            tokens.append(Token(kind: .blockEnd, start: mark))
        }
    }

    private mutating func addIndent(_ column: Int) -> Bool {
        guard indent < column else { return false }
        indents.append(indent)
        indent = column
        return true
    }

    // MARK: Fetching

    private mutating func fetchStreamEnd() {
        unwindIndent(-1)
        possibleSimpleKeys = Array(repeating: nil, count: possibleSimpleKeys.count)
        allowSimpleKey = false
        tokens.append(Token(kind: .streamEnd, start: mark))
        done = true
    }

    /// `%YAML 1.2` and `%TAG`: nothing in an API description depends on them.
    private mutating func skipDirective() throws(SyntaxError) {
        unwindIndent(-1)
        try removePossibleSimpleKey()
        allowSimpleKey = false
        while !Self.isBreak(peek()), !atEnd { forward() }
    }

    private mutating func fetchDocumentIndicator(_ kind: Kind) throws(SyntaxError) {
        unwindIndent(-1)
        try removePossibleSimpleKey()
        allowSimpleKey = false
        let start = mark
        forward(3)
        tokens.append(Token(kind: kind, start: start))
    }

    private mutating func fetchFlowCollectionStart(_ kind: Kind) throws(SyntaxError) {
        try savePossibleSimpleKey()
        flowLevel += 1
        if possibleSimpleKeys.count <= flowLevel { possibleSimpleKeys.append(nil) }
        allowSimpleKey = true
        let start = mark
        forward()
        tokens.append(Token(kind: kind, start: start))
    }

    private mutating func fetchFlowCollectionEnd(_ kind: Kind) throws(SyntaxError) {
        try removePossibleSimpleKey()
        guard flowLevel > 0 else {
            throw error("found \(kind.name) without the opening bracket that it closes")
        }
        flowLevel -= 1
        allowSimpleKey = false
        let start = mark
        forward()
        tokens.append(Token(kind: kind, start: start))
    }

    private mutating func fetchFlowEntry() throws(SyntaxError) {
        allowSimpleKey = true
        try removePossibleSimpleKey()
        let start = mark
        forward()
        tokens.append(Token(kind: .flowEntry, start: start))
    }

    private mutating func fetchBlockEntry() throws(SyntaxError) {
        if flowLevel == 0 {
            guard allowSimpleKey else { throw error("a sequence entry is not allowed here") }
            if addIndent(mark.column) { tokens.append(Token(kind: .blockSequenceStart, start: mark)) }
        }
        allowSimpleKey = true
        try removePossibleSimpleKey()
        let start = mark
        forward()
        tokens.append(Token(kind: .blockEntry, start: start))
    }

    private mutating func fetchKey() throws(SyntaxError) {
        if flowLevel == 0 {
            guard allowSimpleKey else { throw error("a mapping key is not allowed here") }
            if addIndent(mark.column) { tokens.append(Token(kind: .blockMappingStart, start: mark)) }
        }
        allowSimpleKey = flowLevel == 0
        try removePossibleSimpleKey()
        let start = mark
        forward()
        tokens.append(Token(kind: .key, start: start))
    }

    private mutating func fetchValue() throws(SyntaxError) {
        if let key = possibleSimpleKeys[flowLevel] {
            possibleSimpleKeys[flowLevel] = nil
            let position = head + key.tokenNumber - tokensTaken
            tokens.insert(Token(kind: .key, start: key.mark), at: position)
            if flowLevel == 0, addIndent(key.mark.column) {
                tokens.insert(Token(kind: .blockMappingStart, start: key.mark), at: position)
            }
            allowSimpleKey = false
        } else {
            if flowLevel == 0 {
                guard allowSimpleKey else { throw error("a mapping value is not allowed here") }
                if addIndent(mark.column) { tokens.append(Token(kind: .blockMappingStart, start: mark)) }
            }
            allowSimpleKey = flowLevel == 0
            try removePossibleSimpleKey()
        }
        let start = mark
        forward()
        tokens.append(Token(kind: .value, start: start))
    }

    private mutating func fetchAnchorOrAlias(alias: Bool) throws(SyntaxError) {
        try savePossibleSimpleKey()
        allowSimpleKey = false
        let start = mark
        forward()
        let nameStart = mark.index
        while !Self.isBlankOrEnd(peek()), !Self.isFlowIndicator(peek()) { forward() }
        guard mark.index > nameStart else {
            throw error("an \(alias ? "alias" : "anchor") needs a name", at: start)
        }
        let name = text(nameStart..<mark.index)
        tokens.append(Token(kind: alias ? .alias(name) : .anchor(name), start: start))
    }

    private mutating func fetchTag() throws(SyntaxError) {
        try savePossibleSimpleKey()
        allowSimpleKey = false
        let start = mark
        let tagStart = mark.index
        if peek(1) == UInt8(ascii: "<") {
            while peek() != UInt8(ascii: ">"), !Self.isBlankOrEnd(peek()) { forward() }
            guard peek() == UInt8(ascii: ">") else { throw error("a verbatim tag must end with '>'", at: start) }
            forward()
        } else {
            while !Self.isBlankOrEnd(peek()), flowLevel == 0 || !Self.isFlowIndicator(peek()) { forward() }
        }
        tokens.append(Token(kind: .tag(text(tagStart..<mark.index)), start: start))
    }

    // MARK: Scalars

    private mutating func fetchPlain() throws(SyntaxError) {
        try savePossibleSimpleKey()
        allowSimpleKey = false
        let start = mark
        var chunks: [UInt8] = []
        let minimumIndent = indent + 1
        var spaces: [UInt8] = []
        while true {
            if peek() == UInt8(ascii: "#") { break }
            let chunkStart = mark.index
            var end = chunkStart
            while end < bytes.count {
                let byte = bytes[end]
                if Self.isBlankOrEnd(byte) { break }
                if byte == UInt8(ascii: ":") {
                    let next = end + 1 < bytes.count ? bytes[end + 1] : 0
                    if Self.isBlankOrEnd(next) || (flowLevel > 0 && Self.isFlowIndicator(next)) { break }
                }
                if flowLevel > 0, Self.isFlowIndicator(byte) { break }
                end += 1
            }
            if end == chunkStart { break }
            allowSimpleKey = false
            chunks += spaces
            chunks += UnsafeBufferPointer(rebasing: bytes[chunkStart..<end])
            forward(end - chunkStart)
            guard let next = scanPlainSpaces() else { break }
            spaces = next
            if spaces.isEmpty || peek() == UInt8(ascii: "#") || (flowLevel == 0 && mark.column < minimumIndent) {
                break
            }
        }
        tokens.append(Token(kind: .scalar(String(decoding: chunks, as: UTF8.self), .plain), start: start))
    }

    /// The white space between two chunks of a plain scalar, folded: one line break is a space, more are
    /// line breaks less one. `nil` at a document marker, which ends the scalar.
    private mutating func scanPlainSpaces() -> [UInt8]? {
        let whitespaceStart = mark.index
        while Self.isBlank(peek()) { forward() }
        let whitespace = Array(UnsafeBufferPointer(rebasing: bytes[whitespaceStart..<mark.index]))
        guard Self.isBreak(peek()) else { return whitespace }
        _ = scanLineBreak()
        allowSimpleKey = true
        if isDocumentIndicator("---") || isDocumentIndicator("...") { return nil }
        var breaks = 0
        while Self.isBlank(peek()) || Self.isBreak(peek()) {
            if Self.isBlank(peek()) {
                forward()
            } else {
                _ = scanLineBreak()
                breaks += 1
                if isDocumentIndicator("---") || isDocumentIndicator("...") { return nil }
            }
        }
        return breaks == 0 ? [0x20] : Array(repeating: 0x0A, count: breaks)
    }

    private mutating func fetchFlowScalar(double: Bool) throws(SyntaxError) {
        try savePossibleSimpleKey()
        allowSimpleKey = false
        let start = mark
        let quote = peek()
        forward()
        var chunks: [UInt8] = []
        try scanFlowScalarNonSpaces(double: double, into: &chunks, start: start)
        while peek() != quote {
            try scanFlowScalarSpaces(into: &chunks, start: start)
            try scanFlowScalarNonSpaces(double: double, into: &chunks, start: start)
        }
        forward()
        tokens.append(
            Token(
                kind: .scalar(String(decoding: chunks, as: UTF8.self), double ? .doubleQuoted : .singleQuoted),
                start: start))
    }

    private mutating func scanFlowScalarNonSpaces(double: Bool, into chunks: inout [UInt8], start: Mark)
        throws(SyntaxError)
    {
        while true {
            let runStart = mark.index
            var end = runStart
            while end < bytes.count {
                let byte = bytes[end]
                if byte == UInt8(ascii: "'") || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
                    || Self.isBlank(byte) || Self.isBreak(byte)
                {
                    break
                }
                end += 1
            }
            if end > runStart {
                chunks += UnsafeBufferPointer(rebasing: bytes[runStart..<end])
                forward(end - runStart)
            }
            let byte = peek()
            if !double, byte == UInt8(ascii: "'"), peek(1) == UInt8(ascii: "'") {
                chunks.append(UInt8(ascii: "'"))
                forward(2)
            } else if (double && byte == UInt8(ascii: "'"))
                || (!double && (byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")))
            {
                chunks.append(byte)
                forward()
            } else if double, byte == UInt8(ascii: "\\") {
                forward()
                try scanEscape(into: &chunks, start: start)
            } else {
                if atEnd { throw error("the quoted scalar does not end", at: start) }
                return
            }
        }
    }

    private mutating func scanEscape(into chunks: inout [UInt8], start: Mark) throws(SyntaxError) {
        let byte = peek()
        let simple: [UInt8: UInt8] = [
            UInt8(ascii: "0"): 0x00, UInt8(ascii: "a"): 0x07, UInt8(ascii: "b"): 0x08, UInt8(ascii: "t"): 0x09,
            0x09: 0x09, UInt8(ascii: "n"): 0x0A, UInt8(ascii: "v"): 0x0B, UInt8(ascii: "f"): 0x0C,
            UInt8(ascii: "r"): 0x0D, UInt8(ascii: "e"): 0x1B, 0x20: 0x20, UInt8(ascii: "\""): 0x22,
            UInt8(ascii: "/"): 0x2F, UInt8(ascii: "\\"): 0x5C,
        ]
        if let replacement = simple[byte] {
            chunks.append(replacement)
            forward()
            return
        }
        let wide: [UInt8: UInt32] = [
            UInt8(ascii: "N"): 0x85, UInt8(ascii: "_"): 0xA0, UInt8(ascii: "L"): 0x2028, UInt8(ascii: "P"): 0x2029,
        ]
        if let scalar = wide[byte] {
            chunks += Array(String(Character(UnicodeScalar(scalar)!)).utf8)
            forward()
            return
        }
        let digits: Int
        switch byte {
        case UInt8(ascii: "x"): digits = 2
        case UInt8(ascii: "u"): digits = 4
        case UInt8(ascii: "U"): digits = 8
        default:
            if Self.isBreak(byte) {
                _ = scanLineBreak()
                try scanFlowScalarBreaks(into: &chunks, start: start)
                return
            }
            throw error("unknown escape '\\\(Character(UnicodeScalar(byte)))' in a double-quoted scalar")
        }
        forward()
        var value: UInt32 = 0
        for offset in 0..<digits {
            guard let digit = Self.hexValue(peek(offset)) else {
                throw error("'\\\(Character(UnicodeScalar(byte)))' needs \(digits) hexadecimal digits")
            }
            value = value << 4 | digit
        }
        guard let scalar = UnicodeScalar(value) else {
            throw error("'\\\(Character(UnicodeScalar(byte)))' escapes no character")
        }
        chunks += Array(String(Character(scalar)).utf8)
        forward(digits)
    }

    private static func hexValue(_ byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
        default: nil
        }
    }

    private mutating func scanFlowScalarSpaces(into chunks: inout [UInt8], start: Mark) throws(SyntaxError) {
        let whitespaceStart = mark.index
        while Self.isBlank(peek()) { forward() }
        let whitespaceEnd = mark.index
        if atEnd { throw error("the quoted scalar does not end", at: start) }
        if Self.isBreak(peek()) {
            _ = scanLineBreak()
            var breaks: [UInt8] = []
            try scanFlowScalarBreaks(into: &breaks, start: start)
            if breaks.isEmpty { chunks.append(0x20) } else { chunks += breaks }
        } else {
            chunks += UnsafeBufferPointer(rebasing: bytes[whitespaceStart..<whitespaceEnd])
        }
    }

    private mutating func scanFlowScalarBreaks(into chunks: inout [UInt8], start: Mark) throws(SyntaxError) {
        while true {
            if isDocumentIndicator("---") || isDocumentIndicator("...") {
                throw error("a document marker inside a quoted scalar")
            }
            while Self.isBlank(peek()) { forward() }
            guard Self.isBreak(peek()) else { return }
            _ = scanLineBreak()
            chunks.append(0x0A)
        }
    }

    private mutating func fetchBlockScalar(folded: Bool) throws(SyntaxError) {
        allowSimpleKey = true
        try removePossibleSimpleKey()
        let start = mark
        forward()
        // Chomping: `-` strips the final line breaks, `+` keeps them all, nothing keeps one.
        var keep: Bool?
        var increment: Int?
        for _ in 0..<2 {
            let byte = peek()
            if byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-"), keep == nil {
                keep = byte == UInt8(ascii: "+")
                forward()
            } else if byte >= UInt8(ascii: "1"), byte <= UInt8(ascii: "9"), increment == nil {
                increment = Int(byte - UInt8(ascii: "0"))
                forward()
            }
        }
        while Self.isBlank(peek()) { forward() }
        if peek() == UInt8(ascii: "#") {
            while !Self.isBreak(peek()), !atEnd { forward() }
        }
        guard Self.isBreak(peek()) || atEnd else {
            throw error("expected a line break after the block scalar's indicators")
        }
        _ = scanLineBreak()
        let minimumIndent = max(indent + 1, 1)
        var breaks: [UInt8] = []
        let blockIndent: Int
        if let increment {
            blockIndent = minimumIndent + increment - 1
            scanBlockScalarBreaks(blockIndent, into: &breaks)
        } else {
            var maximumIndent = 0
            while peek() == 0x20 || Self.isBreak(peek()) {
                if peek() == 0x20 {
                    forward()
                    maximumIndent = max(maximumIndent, mark.column)
                } else {
                    _ = scanLineBreak()
                    breaks.append(0x0A)
                }
            }
            blockIndent = max(minimumIndent, maximumIndent)
        }
        var chunks: [UInt8] = []
        var lineBreak = false
        while mark.column == blockIndent, !atEnd {
            chunks += breaks
            let leadingNonSpace = !Self.isBlank(peek())
            let lineStart = mark.index
            var end = lineStart
            while end < bytes.count, !Self.isBreak(bytes[end]) { end += 1 }
            chunks += UnsafeBufferPointer(rebasing: bytes[lineStart..<end])
            forward(end - lineStart)
            lineBreak = scanLineBreak()
            breaks = []
            scanBlockScalarBreaks(blockIndent, into: &breaks)
            guard mark.column == blockIndent, !atEnd else { break }
            if folded, lineBreak, leadingNonSpace, !Self.isBlank(peek()) {
                if breaks.isEmpty { chunks.append(0x20) }
            } else if lineBreak {
                chunks.append(0x0A)
            }
        }
        if keep != false, lineBreak { chunks.append(0x0A) }
        if keep == true { chunks += breaks }
        tokens.append(
            Token(kind: .scalar(String(decoding: chunks, as: UTF8.self), folded ? .folded : .literal), start: start))
    }

    private mutating func scanBlockScalarBreaks(_ blockIndent: Int, into breaks: inout [UInt8]) {
        while mark.column < blockIndent, peek() == 0x20 { forward() }
        while Self.isBreak(peek()) {
            _ = scanLineBreak()
            breaks.append(0x0A)
            while mark.column < blockIndent, peek() == 0x20 { forward() }
        }
    }
}
