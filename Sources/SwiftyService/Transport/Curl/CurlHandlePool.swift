/// An easy handle the loop keeps between transfers, with the header list it last sent.
///
/// Creating and freeing an easy handle per request was most of the loop's malloc traffic; a realm sends the same
/// header fields request after request, so their list is rebuilt only when they change. Loop thread only.
final class PooledHandle {
    let raw: LibCurl.Handle
    /// What the handle's options were set for, when another hop like it may reuse them as they are; `nil` once
    /// they were changed for one transfer only, or reset.
    var setup: ReusableSetup?
    private var sentFields: [String: String]?
    private var headerList: LibCurl.Handle?
    /// libcurl's error buffer (`CURLOPT_ERRORBUFFER`, `CURL_ERROR_SIZE` bytes): the TLS library's reason for a
    /// failure, which the result code alone does not tell. The handle's own, so no transfer allocates one.
    let errorBuffer: UnsafeMutablePointer<CChar>
    static let errorBufferSize = 256

    init(_ raw: LibCurl.Handle) {
        self.raw = raw
        errorBuffer = .allocate(capacity: Self.errorBufferSize)
        errorBuffer.initialize(repeating: 0, count: Self.errorBufferSize)
    }

    deinit {
        errorBuffer.deallocate()
    }

    /// Empties the error buffer for the next transfer.
    func clearErrorBuffer() {
        errorBuffer[0] = 0
    }

    /// What libcurl said about the transfer's failure: its error buffer, or `fallback` when that is empty.
    func failureReason(or fallback: String) -> String {
        errorBuffer[0] == 0 ? fallback : String(cString: errorBuffer)
    }

    /// libcurl's list of `fields` (`CURLOPT_HTTPHEADER`), owned by the handle: the last one when the fields are
    /// the same, otherwise a new one. Unless the fields set their own, it offers `codings` first: libcurl,
    /// which decodes them either way (`CURLOPT_ACCEPT_ENCODING`), would otherwise format that line anew
    /// for every request.
    func headerList(for fields: [String: String], offering codings: String, _ curl: LibCurl) -> LibCurl.Handle? {
        if fields == sentFields { return headerList }
        curl.slistFreeAll(headerList)
        var list: LibCurl.Handle?
        if !fields.keys.contains(where: { $0.caseInsensitiveCompare("Accept-Encoding") == .orderedSame }) {
            list = "Accept-Encoding: \(codings)".withCString { curl.slistAppend(list, $0) } ?? list
        }
        // Sorted, so that a request's fields go out in the same order whatever the dictionary's.
        for (name, value) in fields.sorted(by: { $0.key < $1.key }) {
            let line = value.isEmpty ? "\(name):" : "\(name): \(value)"
            list = line.withCString { curl.slistAppend(list, $0) } ?? list
        }
        headerList = list
        sentFields = fields
        return list
    }

    func free(_ curl: LibCurl) {
        curl.easyCleanup(raw)
        curl.slistFreeAll(headerList)
        headerList = nil
    }
}

/// The loop's idle easy handles, reset for their next transfer (`curl_easy_reset` keeps nothing of the last
/// transfer's options; connections stay in the multi handle's cache). Loop thread only.
final class CurlHandlePool {
    private let curl: LibCurl
    // Unchecked for exclusivity: the loop thread's alone, never accessed in overlapping ways.
    @exclusivity(unchecked) private var idle: [PooledHandle] = []
    /// More idle handles than this are freed: a burst's handles need not outlive it.
    static let capacity = 64

    init(curl: LibCurl) {
        self.curl = curl
    }

    /// An idle handle, or a new one; `nil` when libcurl cannot make one.
    func take() -> PooledHandle? {
        idle.popLast() ?? curl.easyInit().map(PooledHandle.init)
    }

    /// Takes back a handle that is out of the multi handle. Its options stay until ``reset(_:)``: a next hop with
    /// the same ``ReusableSetup`` uses them as they are.
    func giveBack(_ handle: PooledHandle) {
        guard idle.count < Self.capacity else { return handle.free(curl) }
        idle.append(handle)
    }

    /// Puts every option of the handle back to libcurl's default (`curl_easy_reset`), for a hop set up anew.
    func reset(_ handle: PooledHandle) {
        curl.easyReset(handle.raw)
        handle.setup = nil
    }

    /// Frees every idle handle (the loop is ending).
    func drain() {
        for handle in idle { handle.free(curl) }
        idle = []
    }
}

/// What a hop's handle options depend on, for a hop whose options are all set from it: a bodiless request
/// without a stream. Two hops with equal setups set the same options, so the second may keep the first one's.
struct ReusableSetup {
    let url: String
    let method: String
    let fields: [String: String]
    /// The options of the hop's TLS policy, as the loop made them once for the policy: the same object for
    /// the same policy (held here, so that another policy's cannot take its place unseen).
    let tls: CurlTLSOptions?

    /// The hop's setup, or `nil` when its options depend on more (a body, a stream).
    init?(for transfer: CurlTransfer, url: String, fields: [String: String], tls: CurlTLSOptions?) {
        guard Self.applies(to: transfer, url: url) else { return nil }
        self.url = url
        method = transfer.hop.method
        self.fields = fields
        self.tls = tls
    }

    /// Whether the hop's options are all set from its setup.
    static func applies(to transfer: CurlTransfer, url: String) -> Bool {
        !transfer.hasBody && transfer.sink == nil && !url.isEmpty
    }

    /// Whether this is the setup of the hop to `url` with `fields` and `tls`: compared in place, with no setup
    /// made for the hop (a copy of its URL, method and fields, and a release of each, for every request).
    func isSetup(
        of transfer: CurlTransfer, url: String, fields: [String: String], tls: CurlTLSOptions?
    ) -> Bool {
        Self.applies(to: transfer, url: url) && self.tls === tls && self.url == url
            && method == transfer.hop.method && self.fields == fields
    }
}
