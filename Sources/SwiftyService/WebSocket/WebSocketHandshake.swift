import Foundation

/// The opening handshake of RFC 6455, section 4: the upgrade request's fields and the check of the answer.
struct WebSocketHandshake: Sendable {
    /// `Sec-WebSocket-Key`: 16 random bytes in base64.
    let key: String
    let subprotocols: [String]
    /// The compression offered, if any.
    let compression: WebSocketCompression?

    /// What the server's `101` agreed to.
    struct Agreement: Equatable {
        /// The subprotocol it chose, if any.
        let subprotocol: String?
        /// The compression it accepted, if any.
        let compression: WebSocketCompression?
    }

    init(subprotocols: [String] = [], compression: WebSocketCompression? = nil, key: String? = nil) {
        self.subprotocols = subprotocols
        self.compression = compression
        if let key {
            self.key = key
        } else {
            var generator = SystemRandomNumberGenerator()
            let bytes = (0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
            self.key = Data(bytes).base64EncodedString()
        }
    }

    /// The fields the upgrade request adds to the realm's headers.
    var requestHeaders: [(name: String, value: String)] {
        var fields = [
            ("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Key", key),
            ("Sec-WebSocket-Version", "13"),
        ]
        if !subprotocols.isEmpty { fields.append(("Sec-WebSocket-Protocol", subprotocols.joined(separator: ", "))) }
        if let compression { fields.append(("Sec-WebSocket-Extensions", compression.offer)) }
        return fields
    }

    /// The `Sec-WebSocket-Accept` a server must answer `key` with.
    static func acceptValue(for key: String) -> String {
        Data(SHA1.digest(Array((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8))).base64EncodedString()
    }

    /// Checks a `101` answer's fields; returns the subprotocol and the compression the server chose, if any.
    /// - Throws: ``WebSocketError/handshakeFailed(_:)`` naming the field that is wrong.
    func validate(headers: [String: String]) throws -> Agreement {
        func field(_ name: String) -> String? {
            headers.first { $0.key.caseInsensitiveCompare(name) == .orderedSame }?.value
        }
        guard field("Upgrade")?.trimmingCharacters(in: .whitespaces).lowercased() == "websocket" else {
            throw WebSocketError.handshakeFailed("the answer's Upgrade field is not 'websocket'")
        }
        let connection = field("Connection")?.lowercased().split(separator: ",").map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        guard connection?.contains("upgrade") == true else {
            throw WebSocketError.handshakeFailed("the answer's Connection field does not hold 'Upgrade'")
        }
        guard field("Sec-WebSocket-Accept")?.trimmingCharacters(in: .whitespaces) == Self.acceptValue(for: key) else {
            throw WebSocketError.handshakeFailed("the answer's Sec-WebSocket-Accept does not match the key sent")
        }
        let compression = try WebSocketCompression.agreement(to: compression, answer: field("Sec-WebSocket-Extensions"))
        guard let chosen = field("Sec-WebSocket-Protocol")?.trimmingCharacters(in: .whitespaces), !chosen.isEmpty
        else { return Agreement(subprotocol: nil, compression: compression) }
        guard subprotocols.contains(chosen) else {
            throw WebSocketError.handshakeFailed("the server chose the subprotocol '\(chosen)', which was not offered")
        }
        return Agreement(subprotocol: chosen, compression: compression)
    }
}

/// An HTTP/1.1 response head read from a raw connection: the answer to the upgrade request.
struct HTTPResponseHead: Sendable, Equatable {
    let statusCode: Int
    let headers: [String: String]

    /// The head at the start of `bytes` and how many bytes it took, or `nil` while its blank line has not come.
    /// - Throws: ``WebSocketError/handshakeFailed(_:)`` for a head that is not HTTP/1.1 or longer than `limit`.
    static func parse(_ bytes: [UInt8], limit: Int = 64 * 1024) throws -> (head: HTTPResponseHead, length: Int)? {
        guard let end = headEnd(bytes) else {
            if bytes.count > limit { throw WebSocketError.handshakeFailed("the answer's head is longer than \(limit) bytes") }
            return nil
        }
        let text = String(decoding: bytes[..<end], as: UTF8.self)
        var lines = text.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ", maxSplits: 2)
        guard statusLine.count >= 2, statusLine[0].hasPrefix("HTTP/1."), let status = Int(statusLine[1]) else {
            throw WebSocketError.handshakeFailed("the answer does not start with an HTTP/1.1 status line")
        }
        var headers: [String: String] = [:]
        for line in lines where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = String(line[..<colon])
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            if let existing = headers[name] { headers[name] = existing + ", " + value } else { headers[name] = value }
        }
        return (HTTPResponseHead(statusCode: status, headers: headers), end + 4)
    }

    private static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4)
        where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index
        }
        return nil
    }
}
