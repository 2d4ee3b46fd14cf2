import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The verdict on an answer: the one place where a status is accepted or refused, an error body decoded,
/// and an in-memory body held to the size limit.
extension PreparedRequest {
    /// The outcome `response` stands for: itself when its status is accepted, otherwise
    /// ``ServiceError/unacceptableStatusCode(_:errorBody:)`` with the decoded error body.
    func verdict(on response: Response) -> Exchange.Outcome {
        guard !validStatusCodes.contains(response.statusCode) else { return .success(response) }
        return .failure(.unacceptableStatusCode(response, errorBody: errorBody?.decode(response.data)))
    }

    /// A body past the realm's limit that the backend could not stop earlier: at least it goes no further.
    func sizeProblem(of response: Response) -> ServiceError? {
        guard let limit = maxResponseSize, response.data.count > limit else { return nil }
        return .transport(urlRequest, underlying: ResponseTooLarge(limit: limit), attempts: response.attempts)
    }
}
