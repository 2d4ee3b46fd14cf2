import Foundation
import SwiftyService

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Answers from a cassette recorded by ``RecordingBackend``, with no network.
///
/// ```swift
/// ServiceRealm.get("users").use(try ReplayBackend(cassette: cassetteURL))
/// ```
/// A request matches a recorded one with the same method and URL; query parameters may come in any
/// order, and a recorded redacted value matches any value. With `matchingBody`, bodies must be equal too.
/// Identical requests get the recorded answers in the order they were recorded, then the last again.
/// An unmatched request fails with ``UnmatchedInteraction``, naming it and the closest recorded request —
/// unless the mode is ``Mode/recordWhenMissing(_:)``, which sends it and adds it to the cassette.
/// A recorded WebSocket handshake opens a socket that plays the recorded conversation back: the app receives
/// the messages the server sent, in order, each once the messages the app sent before it were sent again;
/// a message the app sends that differs from the recorded one fails with ``/SwiftyService/WebSocketScript/Mismatch``.
public final class ReplayBackend: NetworkBackend, @unchecked Sendable {
    /// What to do with a request the cassette does not hold.
    public enum Mode: Sendable {
        /// Fail it with ``UnmatchedInteraction``.
        case replayOnly
        /// Send it through this backend and record it in the cassette.
        case recordWhenMissing(any NetworkBackend)
    }

    /// The cassette file.
    public let file: URL
    private let mode: Mode
    private let matchingBody: Bool
    private let redaction: Redaction
    private let recorder: RecordingBackend?
    private let lock = NSLock()
    private var interactions: [Cassette.Interaction]
    private var replayed: [Int]
    /// The factor on a recorded stream's intervals when it is replayed: 1 at the recorded pace, 0 at once.
    public let timeScale: Double

    /// Replays `file`. In ``Mode/replayOnly`` the file must exist; when recording, a missing file starts empty.
    /// - Throws: ``CassetteError`` naming the file and what is wrong with it.
    public init(
        cassette file: URL, mode: Mode = .replayOnly, matchingBody: Bool = false,
        redaction: Redaction = .default, timeScale: Double = 1
    ) throws {
        self.file = file
        self.timeScale = timeScale.isFinite && timeScale > 0 ? timeScale : 0
        self.mode = mode
        self.matchingBody = matchingBody
        self.redaction = redaction
        let exists = FileManager.default.fileExists(atPath: file.path)
        switch mode {
        case .replayOnly:
            interactions = try Cassette.load(from: file).interactions
            recorder = nil
        case let .recordWhenMissing(backend):
            let recorder = try RecordingBackend(
                recording: backend, to: file, redaction: redaction, appending: exists)
            interactions = recorder.cassette.interactions
            self.recorder = recorder
        }
        replayed = Array(repeating: 0, count: interactions.count)
    }

    /// Every feature when only replaying (nothing goes over the network, so a realm's TLS policy has
    /// nothing to refuse); when recording what is missing, the recording backend's.
    public var supportedTLSFeatures: TLSFeatures { recorder?.supportedTLSFeatures ?? .all }

    /// Every one when only replaying; when recording what is missing, the recording backend's.
    public var supportedHTTPVersions: Set<HTTPVersionPreference> {
        recorder?.supportedHTTPVersions ?? Set(HTTPVersionPreference.allCases)
    }

    /// Answers from the cassette, or per the mode when it holds no match.
    public func send(
        _ request: BackendRequest, completion: @escaping @Sendable (Result<Response, any Error>) -> Void
    ) -> BackendTask {
        if let found = lookUp(request) {
            completion(replay(found, for: request))
            return .uncancellable
        }
        return sendMissing(request, completion: completion)
    }

    /// Replays WebSockets recorded with their messages, and records missing ones when the mode sends.
    public var opensWebSockets: Bool { true }

    /// The recorded answer; a handshake answered `101` also gets a socket that plays its recorded conversation.
    private func replay(_ interaction: Cassette.Interaction, for request: BackendRequest) -> Result<Response, any Error> {
        if request.isWebSocketHandshake, interaction.response?.status == 101 {
            guard let socket = interaction.webSocket else {
                return .failure(
                    ReplayedFailure(
                        description: "the cassette \(file.lastPathComponent) holds the WebSocket handshake "
                            + "\(interaction.request.method) \(interaction.request.url) without its messages"))
            }
            request.answerWebSocket(with: socket.script)
        }
        return interaction.replay(for: request.urlRequest)
    }

    /// The recorded interaction that answers `request` (the first not replayed yet, else the last), marked
    /// as replayed.
    func lookUp(_ request: BackendRequest) -> Cassette.Interaction? {
        let key = Key(request.urlRequest, redaction: redaction.union(request.redaction))
        let body = request.urlRequest.httpBody ?? Data()
        return lock.withLock {
            let candidates = interactions.indices.filter { index in
                Key(interactions[index].request) == key
                    && (!matchingBody || (interactions[index].request.body?.data ?? Data()) == body)
            }
            guard let chosen = candidates.first(where: { replayed[$0] == 0 }) ?? candidates.last else {
                return nil
            }
            replayed[chosen] += 1
            return interactions[chosen]
        }
    }

    /// A request the cassette lacks: recorded through the backend, or failed, as the mode says.
    func sendMissing(
        _ request: BackendRequest, completion: @escaping @Sendable (Result<Response, any Error>) -> Void
    ) -> BackendTask {
        let redaction = redaction.union(request.redaction)
        let key = Key(request.urlRequest, redaction: redaction)
        guard let recorder else {
            completion(.failure(unmatched(request.urlRequest, key: key)))
            return .uncancellable
        }
        if request.isWebSocketHandshake && !recorder.opensWebSockets {
            completion(
                .failure(
                    WebSocketError.unsupportedBackend(
                        "\(type(of: recorder.backend)) cannot open WebSockets here, so \(file.lastPathComponent) "
                            + "cannot record one")))
            return .uncancellable
        }
        return recorder.send(request) { [self] result in
            // A socket is replayed from the file once it has ended and been written there, not from here.
            if !RecordingBackend.isCancellation(result) && !request.isWebSocketHandshake {
                lock.withLock {
                    interactions.append(Cassette.Interaction(request, result, redaction: redaction))
                    replayed.append(1)
                }
            }
            completion(result)
        }
    }

    /// The failure for a request the cassette lacks, naming the recorded request most like it: the same
    /// method first, then the nearest path, then the most query parameters in common.
    private func unmatched(_ request: URLRequest, key: Key) -> UnmatchedInteraction {
        let recorded = lock.withLock { interactions.map { Key($0.request) } }
        func unlikeness(_ other: Key) -> (Int, Int, Int) {
            (
                other.method == key.method ? 0 : 1, Self.distance(other.location, key.location),
                Set(other.query).symmetricDifference(key.query).count
            )
        }
        let closest = recorded.min { unlikeness($0) < unlikeness($1) }
        return UnmatchedInteraction(
            request: "\(key.method) \(key.url)", closest: closest.map { "\($0.method) \($0.url)" }, file: file
        )
    }

    /// Levenshtein distance over UTF-8 bytes.
    private static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a.utf8.prefix(512))
        let b = Array(b.utf8.prefix(512))
        guard !a.isEmpty else { return b.count }
        var previous = Array(0...b.count)
        var current = previous
        for i in 1...a.count {
            current[0] = i
            for j in stride(from: 1, through: b.count, by: 1) {
                current[j] = min(
                    previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }

    /// Method and URL, with the query as a sorted list so that parameter order does not matter.
    private struct Key: Equatable {
        let method: String
        let url: String
        let location: String
        let query: [String]

        init(_ request: URLRequest, redaction: Redaction) {
            let url = request.url.map { redaction.redacting($0).absoluteString } ?? ""
            self.init(method: request.httpMethod ?? "GET", url: url)
        }

        init(_ recorded: Cassette.RecordedRequest) {
            self.init(method: recorded.method, url: recorded.url)
        }

        private init(method: String, url: String) {
            self.method = method
            self.url = url
            var rest = Substring(url)
            if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
            if let mark = rest.firstIndex(of: "?") {
                location = String(rest[..<mark])
                query = rest[rest.index(after: mark)...].split(separator: "&").map(String.init).sorted()
            } else {
                location = String(rest)
                query = []
            }
        }

        static func == (lhs: Key, rhs: Key) -> Bool {
            lhs.method == rhs.method && lhs.location == rhs.location && lhs.query == rhs.query
        }
    }
}

/// A request the cassette holds no answer for.
public struct UnmatchedInteraction: Error, CustomStringConvertible {
    /// The request, as `METHOD URL` (secrets redacted).
    public let request: String
    /// The recorded request most like it, if the cassette holds any.
    public let closest: String?
    /// The cassette file.
    public let file: URL

    /// `no recorded interaction in cassette.json matches GET …; the closest is GET …`
    public var description: String {
        "no recorded interaction in \(file.lastPathComponent) matches \(request)"
            + (closest.map { "; the closest is \($0)" } ?? "; the cassette is empty")
    }
}
