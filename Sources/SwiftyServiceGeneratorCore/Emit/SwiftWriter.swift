import Foundation

/// Writes Swift source the way the project formats it: four spaces, lines of at most 110 characters,
/// `///` comments wrapped to fit.
struct SwiftWriter {
    static let lineLength = 110

    private(set) var text = ""
    private var level = 0

    var indentation: String { String(repeating: "    ", count: level) }

    /// Whether `content` fits on a line at the current indentation (counted in bytes, as swift-format does).
    func fits(_ content: String) -> Bool {
        indentation.utf8.count + content.utf8.count <= Self.lineLength
    }

    mutating func line(_ content: String = "") {
        if content.isEmpty {
            // Never two blank lines in a row, never a blank line right after an opening brace.
            if text.hasSuffix("\n\n") || text.hasSuffix("{\n") || text.isEmpty { return }
            text += "\n"
            return
        }
        text += indentation + content + "\n"
    }

    /// A line that may be too long: wrapped after its opening parenthesis, one argument per line when needed.
    mutating func wrapped(_ head: String, _ items: [String], _ tail: String, open: String = "(", close: String = ")") {
        let single = head + open + items.joined(separator: ", ") + close + tail
        if fits(single) || items.isEmpty {
            line(single)
            return
        }
        let joined = items.joined(separator: ", ")
        if fits("    " + joined) {
            line(head + open)
            indent { $0.line(joined) }
            line(close + tail)
            return
        }
        line(head + open)
        indent { writer in
            for (index, item) in items.enumerated() { writer.line(item + (index < items.count - 1 ? "," : "")) }
        }
        line(close + tail)
    }

    mutating func indent(_ body: (inout SwiftWriter) -> Void) {
        level += 1
        body(&self)
        level -= 1
    }

    /// A type's declaration, `head: conformances {`, its conformances on a line of their own when too long.
    mutating func declaration(_ head: String, _ conformances: String, _ body: (inout SwiftWriter) -> Void) {
        if fits("\(head): \(conformances) {") {
            block("\(head): \(conformances)", body)
            return
        }
        line(head + ":")
        indent { $0.line(conformances) }
        line("{")
        indent(body)
        line("}")
    }

    /// `head {`, the body one level in, `}`.
    mutating func block(_ head: String, _ body: (inout SwiftWriter) -> Void) {
        line(head + " {")
        indent(body)
        line("}")
    }

    /// `head {`, the cases at its own level (as swift-format writes a `switch`), `}`.
    mutating func switchBlock(_ head: String, _ body: (inout SwiftWriter) -> Void) {
        line(head + " {")
        body(&self)
        line("}")
    }

    /// A `///` comment of `text`, wrapped to the line length; nothing for `nil` or empty text.
    mutating func doc(_ text: String?) {
        guard let text, !text.trimmed.isEmpty else { return }
        let width = max(40, Self.lineLength - indentation.count - 4)
        var lines: [String] = []
        var inCode = false
        for raw in text.trimmed.split(
            separator: "\n", omittingEmptySubsequences: false)
        {
            var line = raw.utf8.contains(0x09) ? String(raw).replacingOccurrences(of: "\t", with: "    ") : String(raw)
            while line.hasSuffix(" ") || line.hasSuffix("\r") { line.removeLast() }
            if line.trimmed.hasPrefix("```") { inCode.toggle() }
            if inCode || line.count <= width {
                lines.append(line)
                continue
            }
            lines += Self.wrap(line, width: width)
        }
        for line in lines { self.line(line.isEmpty ? "///" : "/// " + line) }
    }

    static func wrap(_ line: String, width: Int) -> [String] {
        let leading = String(line.prefix(while: { $0 == " " }))
        var result: [String] = []
        var current = leading
        for word in line.dropFirst(leading.count).split(separator: " ", omittingEmptySubsequences: true) {
            if current.count > leading.count, current.count + 1 + word.count > width {
                result.append(current)
                current = leading
            }
            current += (current.count > leading.count ? " " : "") + word
        }
        if current.count > leading.count || result.isEmpty { result.append(current) }
        return result
    }

    /// `text` as a Swift string literal.
    static func literal(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case "\0": result += "\\0"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F || (0xFDD0...0xFDEF).contains(scalar.value) {
                    result += "\\u{\(String(scalar.value, radix: 16))}"
                } else {
                    result.unicodeScalars.append(scalar)
                }
            }
        }
        return result + "\""
    }
}

extension StringProtocol {
    /// The text without white space and line breaks at either end (Foundation's `trimmingCharacters` goes
    /// through UTF-16 on Linux, a cost worth avoiding for every comment of a large description).
    var trimmed: String {
        let text = Substring(self)
        let isSpace = { (byte: UInt8) in byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }
        guard let start = text.utf8.firstIndex(where: { !isSpace($0) }) else { return "" }
        let end = text.utf8.lastIndex(where: { !isSpace($0) })!
        return String(text[start...end])
    }
}
