import Foundation
import SwiftyService
import SwiftyServiceCurl

/// Where scripts/bench serves HTTPS: nginx with a leaf from scripts/tls-fixtures, signed by a private CA.
struct TLSTarget {
    let url: URL
    let caFile: URL
    let pin: String
    /// nginx's log of the HTTPS server: one line per request, its connection's serial number.
    let log: URL?
}

/// A GET of the HTTPS server's small JSON file, from `realm`.
struct LiveTLSFile: SwiftyServiceProtocol {
    let realm: ServiceRealm
    var path: String { "user.json" }
    var method: HTTPMethod { .get }
}

/// live.curl.tls: sequential GETs over HTTPS on CurlBackend, connections reused, from a realm whose policy
/// trusts the CA and pins the leaf's key, against one whose policy only trusts the CA. The baseline is the
/// least any client needs to reach a server of a private CA (libcurl reads no CA from the environment), so
/// the ratio is the price of the pin, and a policy that cost a handshake per request would show as a
/// fraction of it. nginx's log counts the connections both realms opened.
func liveCurlTLS(_ settings: Settings, target: TLSTarget) async throws -> Outcome {
    let roots = try TLSCertificate.certificates(contentsOf: target.caFile)
    // One backend for both, as an app has: the same libcurl thread and connection cache serve each side.
    let backend = try CurlBackend()
    let pinned = ServiceRealm.get("bench-tls-pinned").setBaseURL(target.url).use(backend)
        .setTLSPolicy(
            TLSPolicy(trustedRoots: roots, pinnedPublicKeys: [try PublicKeyPin(sha256: target.pin)]))
    let caOnly = ServiceRealm.get("bench-tls-ca").setBaseURL(target.url).use(backend)
        .setTLSPolicy(TLSPolicy(trustedRoots: roots))
    let ours = LiveTLSFile(realm: pinned)
    let baselineFile = LiveTLSFile(realm: caOnly)
    _ = try await throughput(requests: 50, inFlight: 1) { _ = try await ours.request() }
    _ = try await throughput(requests: 50, inFlight: 1) { _ = try await baselineFile.request() }

    var oursRates: [Double] = []
    var baselineRates: [Double] = []
    var oursCPU: [Double] = []
    var baselineCPU: [Double] = []
    // Shorter turns, four times as many: the difference measured is a few percent, less than what a busy
    // machine moves a 2,000-request turn by, and finer alternation lets both sides share the disturbances.
    let runs = settings.liveRuns * 4
    let turn = settings.liveRequests / 4
    for run in 0..<runs {
        // Alternate which goes first, as live.* do.
        let first: LiveTLSFile = run.isMultiple(of: 2) ? ours : baselineFile
        let second: LiveTLSFile = run.isMultiple(of: 2) ? baselineFile : ours
        let a = try await throughput(requests: turn, inFlight: 1) {
            _ = try await first.request()
        }
        let b = try await throughput(requests: turn, inFlight: 1) {
            _ = try await second.request()
        }
        let (o, base) = run.isMultiple(of: 2) ? (a, b) : (b, a)
        oursRates.append(o.perSecond)
        baselineRates.append(base.perSecond)
        oursCPU.append(o.cpuMicroseconds)
        baselineCPU.append(base.cpuMicroseconds)
    }
    let requests = (turn * runs + 50) * 2
    // Each turn against the one beside it: steadier than the ratio of the medians when the load drifts.
    let pairs = zip(oursRates, baselineRates).map { $0 / $1 }
    var note = String(
        format: "CPU %.0f µs/req vs %.0f; paired ratio %.3f", median(oursCPU), median(baselineCPU),
        median(pairs))
    if let log = target.log, let text = try? String(contentsOf: log, encoding: .utf8) {
        let connections = Set(text.split(separator: "\n")).count
        note += "; \(connections) TLS connections for \(requests) requests"
    }
    return Outcome(
        scenario: "live.curl.tls", ours: median(oursRates), baseline: median(baselineRates),
        unit: .requestsPerSecond, goal: 0.95, higherIsBetter: true, note: note)
}

/// live.curl.h2.concurrent8: 8 requests in flight over HTTP/2 (TLS, ALPN) on CurlBackend, against libcurl's
/// multi interface by hand over HTTP/2 to the same nginx, held to one connection; each client in a process of
/// its own (LiveRounds). The connections are counted by nginx, every listener's together (its plain listener's
/// `stub_status`), so the count is what the client's process opened.
func liveCurlH2(_ settings: Settings, url: URL, caFile: URL, statusBase: URL) throws -> [Outcome] {
    let rounds = try LiveRounds(
        settings, base: url, inFlight: 8, clients: [.curlH2, .rawLibcurlH2],
        clientArguments: ["--ca", caFile.path],
        statusBase: statusBase)
    var throughput = rounds.throughput("live.curl.h2.concurrent8", .curlH2, against: .rawLibcurlH2, goal: 0.7)
    let raw = rounds.connections("raw", .rawLibcurlH2, goal: 1)
    throughput.note += String(format: "; raw libcurl's connections per round: %.0f at most", raw.ours)
    return [throughput, rounds.connections("live.curl.h2.concurrent8.connections", .curlH2, goal: 1)]
}
