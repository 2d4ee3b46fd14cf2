import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The limit of connections to one host, kept by the loop itself rather than left to libcurl (which would
/// hold a request past it in a queue of its own, with no sign): a hop past its realm's limit (or the
/// backend's) waits in ``CurlLoop/connections`` and its call hears of it; it starts when a hop to the same host
/// gives its connection back. A host that answers over HTTP/2 takes every hop at once: libcurl multiplexes
/// them over its connections.
///
/// Driver only, like the rest of the loop.
extension CurlLoop {
    /// Whether the transfer's hop, to `host` (``BackendRequest/hostKey(ofURL:)``), holds a connection to it,
    /// taking one if the limit allows; if not, the hop waits for one (and its call is told), and `false`.
    func holdsConnection(_ transfer: CurlTransfer, host: String) -> Bool {
        guard transfer.connectionHost == nil else { return true }
        let limit = transfer.request.maxConnectionsPerHost.map { max($0, 1) } ?? maxConnectionsPerHost
        allowConnections(perHost: limit)
        guard connections.enter(transfer, host: host, limit: limit) else {
            // The request's timeout runs while it waits, as libcurl's own waiting did.
            transfer.silenceLimit = transfer.hop.timeout.usableTimeout
            transfer.heardFrom()
            transfer.waitingForConnectionSince = CurlTransfer.monotonicSeconds()
            waitingForConnection += 1
            countTransfers()
            transfer.request.reportWaitingForConnection(ConnectionWait(host: host, limit: limit))
            return false
        }
        transfer.connectionHost = host
        return true
    }

    /// Gives the hop's connection back, if it holds one: the hops waiting for one to that host may start.
    func leaveHost(of transfer: CurlTransfer) {
        guard let host = transfer.connectionHost else { return }
        transfer.connectionHost = nil
        start(connections.leave(host), holding: host)
    }

    /// Takes a hop that waits for a connection out of the line (it was cancelled, or timed out).
    func stopWaitingForConnection(_ transfer: CurlTransfer) {
        guard transfer.waitingForConnectionSince != nil else { return }
        _ = connections.withdraw(transfer, host: transfer.hop.host)
        endWait(of: transfer)
    }

    /// A response came over HTTP/2 from `host`, during a turn (libcurl's callbacks may not start transfers):
    /// the loop lets every hop to it share its connections once the turn is over.
    func noteMultiplexing(_ host: String) {
        if !multiplexingHosts.contains(host) { multiplexingHosts.append(host) }
    }

    /// Starts the hops that waited for connections to hosts found to multiplex in the last turn.
    func startTransfersSharingConnections() {
        let hosts = multiplexingHosts
        multiplexingHosts.removeAll()
        for host in hosts { start(connections.learnMultiplexing(host), holding: host) }
    }

    /// Begins the hops the gate let through, each now holding a connection to `host`.
    private func start(_ transfers: [CurlTransfer], holding host: String) {
        for transfer in transfers {
            endWait(of: transfer)
            transfer.connectionHost = host
            begin(transfer)
        }
    }

    private func endWait(of transfer: CurlTransfer) {
        guard let since = transfer.waitingForConnectionSince else { return }
        transfer.waitedForConnections += CurlTransfer.monotonicSeconds() - since
        transfer.waitingForConnectionSince = nil
        waitingForConnection -= 1
        countTransfers()
    }
}
