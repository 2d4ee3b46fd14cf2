import Foundation

/// A request's body: its own (bytes, a file, a multipart form), or its parameters written as a form or JSON;
/// parameters that go to the query are written there.
struct BodyWriter {
    var data: Data?
    var file: BodyFile?
    var stream: BodyStream?
    var contentType: String?

    static func write(_ draft: RequestDraft, method: HTTPMethod, into target: inout URLTarget)
        throws(ServiceError)
        -> BodyWriter
    {
        do {
            if let body = draft.body { return try own(body, draft, into: &target) }
            guard let parameters = draft.parameters else { return BodyWriter() }
            switch draft.encoding.destination {
            case .automatic where method.prefersQueryParameters, .query:
                target.appendQuery(try query(parameters, draft.encoding))
                return BodyWriter()
            case .form:
                return BodyWriter(
                    data: Data(try query(parameters, draft.encoding)),
                    contentType: RequestBody.formContentType)
            case .automatic, .json:
                var writer = JSONWriter()
                try writer.write(parameters)
                return BodyWriter(data: Data(writer.bytes), contentType: "application/json")
            }
        } catch let problem as ParameterProblem {
            throw target.invalid(.unencodableParameter(key: problem.key, reason: problem.reason))
        } catch let error as ServiceError {
            throw error
        } catch {
            throw target.invalid(.invalidBody("\(error)"))
        }
    }

    /// A body of the endpoint's own; its parameters, if any, go to the query.
    private static func own(_ body: RequestBody, _ draft: RequestDraft, into target: inout URLTarget) throws
        -> BodyWriter
    {
        if draft.parameters != nil, draft.encoding.destination == .form || draft.encoding.destination == .json
        {
            throw target.invalid(
                .conflictingBody("the endpoint has a body and also asks for its parameters in the body"))
        }
        if let parameters = draft.parameters { target.appendQuery(try query(parameters, draft.encoding)) }
        switch body.content {
        case let .data(data):
            return BodyWriter(data: data, contentType: body.contentType)
        case let .unencodable(reason):
            throw target.invalid(.unencodableBody(reason))
        case let .file(url):
            guard FileManager.default.isReadableFile(atPath: url.path) else {
                throw target.invalid(.invalidBody("the file '\(url.path)' cannot be read"))
            }
            return BodyWriter(file: BodyFile(url: url, isTemporary: false), contentType: body.contentType)
        case let .stream(stream):
            if let length = stream.length, length < 0 {
                throw target.invalid(
                    .invalidBody("the declared length of the body stream, \(length), is negative"))
            }
            return BodyWriter(stream: stream, contentType: body.contentType)
        case let .multipart(form):
            do {
                let (encoded, type) = try form.encode()
                switch encoded {
                case let .data(data): return BodyWriter(data: data, contentType: type)
                case let .file(file): return BodyWriter(file: file, contentType: type)
                }
            } catch let problem as MultipartProblem {
                throw target.invalid(.invalidBody(problem.reason))
            }
        }
    }

    private static func query(_ parameters: [String: Any], _ encoding: ParameterEncoding) throws -> [UInt8] {
        var writer = QueryWriter(encoding)
        try writer.write(parameters)
        return writer.bytes
    }
}
