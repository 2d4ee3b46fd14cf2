import CCurlShim
import Foundation
import SwiftyService

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// libcurl's multi interface, driven by one dedicated thread.
///
/// Other threads only queue work (a transfer to start, one to cancel) and wake the loop with
/// `curl_multi_wakeup`; every libcurl call and every transfer's state change happens on the loop thread.
final class CurlLoop: @unchecked Sendable {
    let curl: LibCurl
    private let multi: LibCurl.Handle
    private let lock = NSLock()
    private var queuedStarts: [CurlTransfer] = []
    private var queuedCancels: [CurlTransfer] = []
    private var stopping = false
    /// Loop thread only: the transfers whose handles are in the multi handle, by handle address.
    private var active: [UnsafeMutableRawPointer: CurlTransfer] = [:]

    init(curl: LibCurl, maxConnectionsPerHost: Int) throws {
        guard let multi = curl.multiInit() else { throw CurlUnavailable(reason: "curl_multi_init failed") }
        self.curl = curl
        self.multi = multi
        curl.setMulti(multi, LibCurl.Option.multiMaxHostConnections, maxConnectionsPerHost)
        threadName = Self.nextThreadName()
        let thread = Thread { [self] in run() }
        thread.name = threadName
        thread.start()
    }

    func start(_ transfer: CurlTransfer) {
        lock.withLock { queuedStarts.append(transfer) }
        _ = curl.multiWakeup(multi)
    }

    func cancel(_ transfer: CurlTransfer) {
        lock.withLock { queuedCancels.append(transfer) }
        _ = curl.multiWakeup(multi)
    }

    /// Ends the loop: unfinished transfers end as cancelled, then the multi handle goes.
    func shutdown() {
        lock.withLock { stopping = true }
        _ = curl.multiWakeup(multi)
    }

    /// The number of transfers in flight (for tests and leak checks).
    var activeCount: Int { lock.withLock { active.count + queuedStarts.count } }

    /// The loop thread's name, unique to this loop, as the system shows it (Linux keeps 15 characters).
    let threadName: String

    private static let namingLock = NSLock()
    nonisolated(unsafe) private static var loopsStarted = 0

    private static func nextThreadName() -> String {
        let number = namingLock.withLock {
            loopsStarted += 1
            return loopsStarted
        }
        return "SwiftyCurl-\(number % 10_000)"
    }

    private func run() {
        _ = ccurl_name_this_thread(threadName)
        var running: Int32 = 0
        while true {
            let (starts, cancels, stop) = lock.withLock { () -> ([CurlTransfer], [CurlTransfer], Bool) in
                defer {
                    queuedStarts = []
                    queuedCancels = []
                }
                return (queuedStarts, queuedCancels, stopping)
            }
            for transfer in starts { begin(transfer) }
            for transfer in cancels { abort(transfer, with: URLError(.cancelled)) }
            if stop {
                for transfer in Array(active.values) { abort(transfer, with: URLError(.cancelled)) }
                break
            }
            _ = curl.multiPerform(multi, &running)
            var queued: Int32 = 0
            while let message = curl.multiInfoRead(multi, &queued) {
                guard message.pointee.msg == LibCurl.messageDone, let handle = message.pointee.easy_handle,
                    let transfer = active[handle]
                else { continue }
                complete(transfer, code: message.pointee.data.result)
            }
            let wait = timeOutSilences()
            _ = curl.multiPoll(multi, nil, 0, wait, nil)
        }
        _ = curl.multiCleanup(multi)
    }

    /// Ends the transfers that have heard nothing for their timeout, and says how long the loop may wait
    /// before the next one could (1 s at most): a timeout is the longest silence, to the millisecond.
    private func timeOutSilences() -> Int32 {
        let now = ProcessInfo.processInfo.systemUptime
        var wait: TimeInterval = 1
        for transfer in Array(active.values) {
            let left = transfer.heardAt + transfer.silenceLimit - now
            if left <= 0 {
                abort(transfer, with: URLError(.timedOut))
            } else {
                wait = min(wait, left)
            }
        }
        return Int32((wait * 1000).rounded(.up))
    }

    /// Starts the transfer's current hop.
    private func begin(_ transfer: CurlTransfer) {
        guard !transfer.isFinished else { return }
        do {
            try transfer.prepareHop()
        } catch {
            transfer.finish(.failure(error))
            return
        }
        guard let handle = curl.easyInit() else {
            transfer.finish(.failure(URLError(.cannotConnectToHost)))
            return
        }
        transfer.handle = handle
        if let refusal = CurlProtocols.restrict(
            setString: { curl.set(handle, $0, string: $1) }, setNumber: { curl.set(handle, $0, $1) })
        {
            curl.easyCleanup(handle)
            transfer.handle = nil
            transfer.finish(.failure(refusal))
            return
        }
        configure(handle, for: transfer)
        active[handle] = transfer
        _ = curl.multiAddHandle(multi, handle)
    }

    private func configure(_ handle: LibCurl.Handle, for transfer: CurlTransfer) {
        let request = transfer.current
        let context = Unmanaged.passUnretained(transfer).toOpaque()
        typealias O = LibCurl.Option
        curl.set(handle, O.url, string: request.url?.absoluteString ?? "")
        curl.set(handle, O.errorBuffer, pointer: transfer.errorBuffer)
        curl.set(handle, O.noSignal, 1)
        curl.set(handle, O.followLocation, 0)
        curl.set(handle, O.acceptEncoding, string: "")
        curl.set(handle, O.httpVersion, LibCurl.Option.httpVersion2TLS)
        curl.set(handle, O.writeFunction, pointer: unsafeBitCast(curlWrite, to: UnsafeRawPointer.self))
        curl.set(handle, O.writeData, pointer: context)
        curl.set(handle, O.headerFunction, pointer: unsafeBitCast(curlHeader, to: UnsafeRawPointer.self))
        curl.set(handle, O.headerData, pointer: context)

        let method = request.httpMethod ?? "GET"
        if transfer.hasBody {
            curl.set(handle, O.post, 1)
            curl.set(handle, O.postFieldSizeLarge, offset: transfer.bodyLength)
            curl.set(handle, O.readFunction, pointer: unsafeBitCast(curlRead, to: UnsafeRawPointer.self))
            curl.set(handle, O.readData, pointer: context)
            if method != "POST" { curl.set(handle, O.customRequest, string: method) }
        } else if method == "HEAD" {
            curl.set(handle, O.noBody, 1)
        } else if method != "GET" {
            curl.set(handle, O.customRequest, string: method)
        }

        var list: LibCurl.Handle?
        var fields = request.allHTTPHeaderFields ?? [:]
        // Without this, libcurl waits for a 100 Continue before sending bodies over 1 KiB.
        if transfer.hasBody,
            !fields.keys.contains(where: { $0.caseInsensitiveCompare("Expect") == .orderedSame })
        {
            fields["Expect"] = ""
        }
        for (name, value) in fields.sorted(by: { $0.key < $1.key }) {
            let line = value.isEmpty ? "\(name):" : "\(name): \(value)"
            list = line.withCString { curl.slistAppend(list, $0) } ?? list
        }
        transfer.headerList = list
        if let list { curl.set(handle, O.httpHeader, pointer: list) }

        // The timeout is the longest silence, which the loop watches itself (timeOutSilences): libcurl's own
        // options are a limit on the whole transfer or on its average speed, neither of which it means.
        transfer.silenceLimit = request.timeoutInterval.usableTimeout
        transfer.heardFrom()
    }

    /// A hop ended: a redirect to follow, the response, or the failure.
    private func complete(_ transfer: CurlTransfer, code: Int32) {
        guard let handle = transfer.handle else { return }
        let status = curl.responseCode(handle)
        release(transfer)
        if let problem = transfer.headTooLarge { return transfer.finish(.failure(problem)) }
        if let limit = transfer.tooLarge { return transfer.finish(.failure(ResponseTooLarge(limit: limit))) }
        guard code == 0 else {
            let reason = transfer.failureReason(or: curl.describe(code))
            let error =
                TLSFailure.error(curlCode: code, reason: reason, url: transfer.current.url)
                ?? Self.urlError(code, description: reason)
            transfer.finish(.failure(error))
            return
        }
        guard (300..<400).contains(status) else { return transfer.succeed(status: status, head: nil) }
        guard let head = transfer.response(status: status) else {
            return transfer.finish(.failure(URLError(.badServerResponse)))
        }
        switch transfer.nextHop(after: head) {
        case .follow?:
            begin(transfer)
        case .tooMany?:
            transfer.finish(.failure(URLError(.httpTooManyRedirects)))
        case let .refuse(refusal)?:
            transfer.finish(.failure(refusal))
        case .stop?, nil:
            transfer.succeed(status: status, head: head)
        }
    }

    private func abort(_ transfer: CurlTransfer, with error: URLError) {
        release(transfer)
        transfer.finish(.failure(error))
    }

    /// Takes the hop's handle out of the multi handle and frees it.
    private func release(_ transfer: CurlTransfer) {
        guard let handle = transfer.handle else { return }
        _ = curl.multiRemoveHandle(multi, handle)
        curl.easyCleanup(handle)
        curl.slistFreeAll(transfer.headerList)
        transfer.headerList = nil
        transfer.handle = nil
        active[handle] = nil
    }

    /// libcurl's result codes as the `URLError`s URLSession would report; TLS failures are
    /// ``TLSFailure``'s.
    static func urlError(_ code: Int32, description: String) -> URLError {
        let mapped: URLError.Code =
            switch code {
            case 6: .cannotFindHost
            case 5: .cannotConnectToHost
            case 7: .cannotConnectToHost
            case 28: .timedOut
            case 18, 52, 55, 56: .networkConnectionLost
            case 61: .cannotDecodeContentData
            case 1, 3: .unsupportedURL
            case 8: .badServerResponse
            case 42: .cancelled
            case 47: .httpTooManyRedirects
            default: .unknown
            }
        return URLError(mapped, userInfo: [NSLocalizedDescriptionKey: "\(description) (curl \(code))"])
    }
}

// libcurl's callbacks: plain C functions, handed the transfer they belong to.

private let curlWrite: @convention(c) (UnsafeMutableRawPointer?, Int, Int, UnsafeMutableRawPointer?) -> Int =
    {
        data, size, count, context in
        guard let data, let context else { return 0 }
        let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
        let bytes = size * count
        return transfer.write(UnsafeRawBufferPointer(start: data, count: bytes)) ? bytes : 0
    }

private let curlHeader: @convention(c) (UnsafeMutableRawPointer?, Int, Int, UnsafeMutableRawPointer?) -> Int =
    {
        data, size, count, context in
        guard let data, let context else { return 0 }
        let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
        let bytes = size * count
        // Anything but `bytes` makes libcurl abort the transfer at once (CURLE_WRITE_ERROR).
        return transfer.header(UnsafeRawBufferPointer(start: data, count: bytes)) ? bytes : 0
    }

private let curlRead: @convention(c) (UnsafeMutableRawPointer?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
    buffer, size, count, context in
    guard let buffer, let context else { return CurlTransfer.readAbort }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
    return transfer.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: size * count))
}
