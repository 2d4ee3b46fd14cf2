import Foundation

/// A `multipart/form-data` body (RFC 7578): text fields, in-memory data parts and file parts.
///
/// ```swift
/// var form = MultipartForm()
/// form.addField("title", value: "Holiday")
/// form.addData(thumbnail, name: "thumb", filename: "thumb.png", contentType: "image/png")
/// form.addFile(at: photoURL, name: "photo")            // streamed from disk, never read whole
/// let response = try await PhotoService.upload(form).request()
/// ```
/// The boundary is random and checked never to occur in a part. Names and filenames have `"` escaped as
/// `%22`; a CR or LF in a name, filename or content type is ``ServiceError/invalidRequest(_:method:url:)``.
public struct MultipartForm: Sendable {
    enum Part: Sendable {
        case field(name: String, value: String)
        case data(name: String, data: Data, filename: String?, contentType: String?)
        case file(name: String, url: URL, filename: String, contentType: String)
    }

    private(set) var parts: [Part] = []

    /// Bodies larger than this many bytes (10 MB) are written to a temporary file and streamed.
    public static let memoryThreshold = 10 << 20

    /// An empty form.
    public init() {}

    /// Adds a text field.
    public mutating func addField(_ name: String, value: String) {
        parts.append(.field(name: name, value: value))
    }

    /// Adds bytes held in memory, as a file part when `filename` is given.
    public mutating func addData(
        _ data: Data, name: String, filename: String? = nil, contentType: String? = nil
    ) {
        parts.append(.data(name: name, data: data, filename: filename, contentType: contentType))
    }

    /// Adds a file from disk, streamed when the body is sent; the filename defaults to the file's own, the
    /// content type to `application/octet-stream`.
    public mutating func addFile(
        at url: URL, name: String, filename: String? = nil, contentType: String? = nil
    ) {
        parts.append(
            .file(
                name: name, url: url, filename: filename ?? url.lastPathComponent,
                contentType: contentType ?? "application/octet-stream"))
    }
}

/// Why a multipart form cannot be sent.
struct MultipartProblem: Error {
    let reason: String
}

extension MultipartForm {
    /// The form as bytes, with the content type that names its boundary.
    func encode(threshold: Int = MultipartForm.memoryThreshold) throws -> (
        body: EncodedBody, contentType: String
    ) {
        for part in parts { try Self.validate(part) }
        let size = try parts.reduce(Int64(0)) { $0 + (try Self.payloadSize($1)) }
        var boundary = Self.randomBoundary()
        while try parts.contains(where: { try Self.part($0, contains: boundary) }) {
            boundary = Self.randomBoundary()
        }
        let contentType = "multipart/form-data; boundary=\(boundary)"
        if size <= Int64(threshold) {
            var data = Data()
            try write(boundary: boundary) { data.append($0) }
            return (.data(data), contentType)
        }
        let url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "swiftyservice-multipart-\(UUID().uuidString)")
        guard FileManager.default.createFile(atPath: url.path, contents: nil),
            let handle = try? FileHandle(forWritingTo: url)
        else { throw MultipartProblem(reason: "cannot create a temporary file for the body") }
        let file = BodyFile(url: url, isTemporary: true)
        defer { try? handle.close() }
        do {
            try write(boundary: boundary) { try handle.write(contentsOf: $0) }
        } catch {
            throw MultipartProblem(
                reason: "cannot write the body to a temporary file: \(error.localizedDescription)")
        }
        return (.file(file), contentType)
    }

    private func write(boundary: String, to sink: (Data) throws -> Void) throws {
        for part in parts {
            try sink(Data("--\(boundary)\r\n".utf8))
            switch part {
            case let .field(name, value):
                try sink(Data("Content-Disposition: form-data; name=\"\(Self.escape(name))\"\r\n\r\n".utf8))
                try sink(Data(value.utf8))
            case let .data(name, data, filename, contentType):
                try sink(Self.head(name: name, filename: filename, contentType: contentType))
                try sink(data)
            case let .file(name, url, filename, contentType):
                try sink(Self.head(name: name, filename: filename, contentType: contentType))
                try Self.chunks(of: url, sink)
            }
            try sink(Data("\r\n".utf8))
        }
        try sink(Data("--\(boundary)--\r\n".utf8))
    }

    private static func head(name: String, filename: String?, contentType: String?) -> Data {
        var head = "Content-Disposition: form-data; name=\"\(escape(name))\""
        if let filename { head += "; filename=\"\(escape(filename))\"" }
        head += "\r\n"
        if let contentType { head += "Content-Type: \(contentType)\r\n" }
        return Data((head + "\r\n").utf8)
    }

    /// RFC 7578 §4.2 (with the HTML rules it points to): a quote in a name is written `%22`.
    private static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "\"", with: "%22")
    }

    private static func validate(_ part: Part) throws {
        func check(_ text: String?, _ what: String) throws {
            guard let text, text.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\r\n" }) else { return }
            throw MultipartProblem(
                reason:
                    "the multipart \(what) '\(text.debugDescription.dropFirst().dropLast())' contains CR or LF"
            )
        }
        switch part {
        case let .field(name, _): try check(name, "name")
        case let .data(name, _, filename, contentType):
            try check(name, "name")
            try check(filename, "filename")
            try check(contentType, "content type")
        case let .file(name, url, filename, contentType):
            try check(name, "name")
            try check(filename, "filename")
            try check(contentType, "content type")
            guard FileManager.default.isReadableFile(atPath: url.path) else {
                throw MultipartProblem(reason: "the file '\(url.path)' for part '\(name)' cannot be read")
            }
        }
    }

    private static func payloadSize(_ part: Part) throws -> Int64 {
        switch part {
        case let .field(_, value): Int64(value.utf8.count) + 128
        case let .data(_, data, _, _): Int64(data.count) + 256
        case let .file(_, url, _, _): (BodyFile(url: url, isTemporary: false).size ?? 0) + 256
        }
    }

    private static func randomBoundary() -> String {
        var generator = SystemRandomNumberGenerator()
        return "SwiftyService-" + (0..<4).map { _ in String(generator.next() as UInt64, radix: 16) }.joined()
    }

    private static func part(_ part: Part, contains boundary: String) throws -> Bool {
        let needle = Data(boundary.utf8)
        switch part {
        case let .field(_, value): return Data(value.utf8).range(of: needle) != nil
        case let .data(_, data, _, _): return data.range(of: needle) != nil
        case let .file(_, url, _, _):
            // Overlapping windows, so a boundary split across two chunks is found too.
            var carry = Data()
            var found = false
            try chunks(of: url) { chunk in
                guard !found else { return }
                let window = carry + chunk
                found = window.range(of: needle) != nil
                carry = window.suffix(needle.count - 1)
            }
            return found
        }
    }

    private static func chunks(of url: URL, _ body: (Data) throws -> Void) throws {
        guard let handle = try? FileHandle(forReadingFrom: url) else {
            throw MultipartProblem(reason: "the file '\(url.path)' cannot be read")
        }
        defer { try? handle.close() }
        while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty { try body(chunk) }
    }
}
