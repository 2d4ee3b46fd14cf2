import Foundation

/// WebSocket compression, `permessage-deflate` (RFC 7692): what the client offers in the handshake
/// (``WebSocketOptions/compression``) and, on an open socket (``WebSocket/compression``), what the server agreed to.
///
/// Each message is compressed on its own with DEFLATE; by default both sides keep their compression context (a
/// window of up to 32 KiB) from one message to the next, so that messages that repeat each other shrink most.
public struct WebSocketCompression: Sendable, Hashable {
    /// Whether the client compresses each message afresh (`client_no_context_takeover`): no window kept between
    /// messages, for less compression. On an open socket, also `true` when the server asked for it.
    public var clientNoContextTakeover: Bool
    /// Whether the client asks the server to compress each message afresh (`server_no_context_takeover`), so that
    /// the socket keeps no window between messages to inflate them; a server that agrees to compress must agree.
    public var serverNoContextTakeover: Bool
    /// The largest window the client compresses with, 2^n bytes, 9...15 (default 15). On an open socket, the
    /// window it compresses with: lowered to the server's `client_max_window_bits` (at 8, which zlib cannot
    /// compress with, messages are sent uncompressed).
    public var clientMaxWindowBits: Int
    /// The largest window the client asks the server to compress with (`server_max_window_bits`), 2^n bytes,
    /// 8...15; `nil` (the default) leaves it to the server. On an open socket, the server's limit if it set one.
    public var serverMaxWindowBits: Int?
    /// zlib's compression level, 1 (fastest) to 9 (smallest); default 6, zlib's own default.
    public var level: Int

    /// Compression as browsers and the `websockets` package use it: both sides keep their context, 32 KiB windows.
    public static let deflate = WebSocketCompression()

    /// Compression settings; out-of-range numbers are brought into range.
    public init(
        clientNoContextTakeover: Bool = false, serverNoContextTakeover: Bool = false, clientMaxWindowBits: Int = 15,
        serverMaxWindowBits: Int? = nil, level: Int = 6
    ) {
        self.clientNoContextTakeover = clientNoContextTakeover
        self.serverNoContextTakeover = serverNoContextTakeover
        self.clientMaxWindowBits = min(max(clientMaxWindowBits, 9), 15)
        self.serverMaxWindowBits = serverMaxWindowBits.map { min(max($0, 8), 15) }
        self.level = min(max(level, 1), 9)
    }
}

extension WebSocketCompression {
    /// The extension's name, as offered and answered.
    static let extensionName = "permessage-deflate"

    /// The `Sec-WebSocket-Extensions` value that offers this. `client_max_window_bits` goes without a value: the
    /// client can compress with any window the server wants, since it may always use a smaller one than its own.
    var offer: String {
        var parts = [Self.extensionName]
        if clientNoContextTakeover { parts.append("client_no_context_takeover") }
        if serverNoContextTakeover { parts.append("server_no_context_takeover") }
        if let bits = serverMaxWindowBits { parts.append("server_max_window_bits=\(min(max(bits, 8), 15))") }
        parts.append("client_max_window_bits")
        return parts.joined(separator: "; ")
    }

    /// What the server agreed to in its `Sec-WebSocket-Extensions` answer, checked against `offer` (RFC 7692,
    /// sections 5 and 7.1): `nil` when it accepted no extension.
    /// - Throws: ``WebSocketError/handshakeFailed(_:)`` for an extension that was not offered, `permessage-deflate`
    ///   twice, or a parameter that is unknown, repeated, malformed or outside what was offered.
    static func agreement(to offer: WebSocketCompression?, answer: String?) throws -> WebSocketCompression? {
        let extensions = try ExtensionList.parse(answer ?? "")
        guard let first = extensions.first else { return nil }
        guard let offer, extensions.count == 1, first.name.lowercased() == extensionName else {
            let names = extensions.map(\.name).joined(separator: ", ")
            throw WebSocketError.handshakeFailed(
                offer == nil || extensions.allSatisfy({ $0.name.lowercased() != extensionName })
                    ? "the server chose an extension that was not offered: \(names)"
                    : "the server answered with more than one extension (\(names)); one permessage-deflate was offered")
        }
        return try offer.agreement(first.parameters)
    }

    private func agreement(_ parameters: [(name: String, value: String?)]) throws -> WebSocketCompression {
        func refuse(_ reason: String) -> WebSocketError {
            .handshakeFailed("the server's permessage-deflate answer is invalid: \(reason)")
        }
        var agreed = self
        agreed.serverMaxWindowBits = nil
        var seen: Set<String> = []
        for (name, value) in parameters {
            let key = name.lowercased()
            guard seen.insert(key).inserted else { throw refuse("\(name) is repeated") }
            switch key {
            case "server_no_context_takeover", "client_no_context_takeover":
                guard value == nil else { throw refuse("\(name) has a value") }
                if key == "server_no_context_takeover" { agreed.serverNoContextTakeover = true }
                else { agreed.clientNoContextTakeover = true }
            case "server_max_window_bits", "client_max_window_bits":
                guard let value, let bits = Self.windowBits(value) else {
                    throw refuse("\(name) is '\(value ?? "")', not a number from 8 to 15")
                }
                if key == "client_max_window_bits" {
                    agreed.clientMaxWindowBits = min(clientMaxWindowBits, bits)
                } else {
                    if let asked = serverMaxWindowBits, bits > asked { throw refuse("\(name)=\(bits) is over the \(asked) offered") }
                    agreed.serverMaxWindowBits = bits
                }
            default:
                throw refuse("unknown parameter \(name)")
            }
        }
        if serverNoContextTakeover, !seen.contains("server_no_context_takeover") {
            throw refuse("server_no_context_takeover was offered and not agreed to")
        }
        if let asked = serverMaxWindowBits, !seen.contains("server_max_window_bits") {
            throw refuse("server_max_window_bits=\(asked) was offered and not agreed to")
        }
        return agreed
    }

    /// A window size as RFC 7692 spells it: a decimal from 8 to 15 without leading zeros.
    private static func windowBits(_ value: String) -> Int? {
        (8...15).first { String($0) == value }
    }
}

/// The `Sec-WebSocket-Extensions` syntax (RFC 6455, 9.1): extensions separated by commas, each a name and
/// parameters after semicolons, a parameter's value a token or a quoted string.
enum ExtensionList {
    typealias Extension = (name: String, parameters: [(name: String, value: String?)])

    /// The extensions in `value`, in order; empty list elements are skipped.
    /// - Throws: ``WebSocketError/handshakeFailed(_:)`` for an unterminated quote or a nameless parameter.
    static func parse(_ value: String) throws -> [Extension] {
        try split(value, at: ",").compactMap { element -> Extension? in
            let pieces = try split(element, at: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            guard let name = pieces.first, !name.isEmpty else {
                if pieces.allSatisfy(\.isEmpty) { return nil }
                throw WebSocketError.handshakeFailed("the server's Sec-WebSocket-Extensions has an element without a name")
            }
            let parameters = try pieces.dropFirst().map { piece -> (name: String, value: String?) in
                let parts = piece.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                guard let parameter = parts.first, !parameter.isEmpty else {
                    throw WebSocketError.handshakeFailed("the server's Sec-WebSocket-Extensions has a nameless parameter in \(name)")
                }
                return (parameter, parts.count > 1 ? unquoted(parts[1]) : nil)
            }
            return (name, parameters)
        }
    }

    /// `text` cut at each `separator` outside quoted strings.
    private static func split(_ text: String, at separator: Character) throws -> [String] {
        var pieces: [String] = []
        var current = ""
        var quoted = false
        var escaped = false
        for character in text {
            if escaped {
                escaped = false
            } else if quoted, character == "\\" {
                escaped = true
            } else if character == "\"" {
                quoted.toggle()
            } else if character == separator, !quoted {
                pieces.append(current)
                current = ""
                continue
            }
            current.append(character)
        }
        if quoted { throw WebSocketError.handshakeFailed("the server's Sec-WebSocket-Extensions has an unterminated quote") }
        pieces.append(current)
        return pieces
    }

    private static func unquoted(_ value: String) -> String {
        guard value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") else { return value }
        var result = ""
        var escaped = false
        for character in value.dropFirst().dropLast() {
            if !escaped, character == "\\" {
                escaped = true
                continue
            }
            escaped = false
            result.append(character)
        }
        return result
    }
}
