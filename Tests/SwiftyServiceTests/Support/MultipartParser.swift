import Foundation

/// A small multipart/form-data reader, for checking what was sent byte for byte.
struct ParsedPart: Equatable {
    let headers: [String: String]
    let body: Data

    var disposition: String { headers["content-disposition"] ?? "" }
    var contentType: String? { headers["content-type"] }

    /// A parameter of Content-Disposition, e.g. `name` or `filename`.
    func parameter(_ name: String) -> String? {
        guard let range = disposition.range(of: "\(name)=\"") else { return nil }
        let rest = disposition[range.upperBound...]
        return rest.firstIndex(of: "\"").map { String(rest[..<$0]) }
    }
}

enum MultipartParser {
    static func boundary(of contentType: String) -> String? {
        contentType.range(of: "boundary=").map { String(contentType[$0.upperBound...]) }
    }

    static func parse(_ body: Data, boundary: String) -> [ParsedPart]? {
        let delimiter = Data("--\(boundary)".utf8)
        var parts: [ParsedPart] = []
        var cursor = body.startIndex
        guard let first = body.range(of: delimiter, in: cursor..<body.endIndex),
            first.lowerBound == body.startIndex
        else { return nil }
        cursor = first.upperBound
        while true {
            if body[cursor...].starts(with: Data("--".utf8)) { return parts }
            guard body[cursor...].starts(with: Data("\r\n".utf8)) else { return nil }
            cursor += 2
            guard let headerEnd = body.range(of: Data("\r\n\r\n".utf8), in: cursor..<body.endIndex) else {
                return nil
            }
            var headers: [String: String] = [:]
            for line in String(decoding: body[cursor..<headerEnd.lowerBound], as: UTF8.self).components(
                separatedBy: "\r\n")
            {
                let pieces = line.split(separator: ":", maxSplits: 1)
                guard pieces.count == 2 else { return nil }
                headers[pieces[0].lowercased()] = pieces[1].trimmingCharacters(in: .whitespaces)
            }
            let next = Data("\r\n".utf8) + delimiter
            guard let end = body.range(of: next, in: headerEnd.upperBound..<body.endIndex) else { return nil }
            parts.append(
                ParsedPart(headers: headers, body: Data(body[headerEnd.upperBound..<end.lowerBound])))
            cursor = end.upperBound
        }
    }
}
