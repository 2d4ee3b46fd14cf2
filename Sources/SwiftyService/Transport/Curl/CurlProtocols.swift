import Foundation

/// Keeps libcurl itself to http and https, for the first request and for any redirect, on every handle.
///
/// SwiftyService refuses other schemes before a request reaches the backend and at each redirect, but
/// libcurl would fetch `file:`, `gopher:`, `dict:`, `ftp:`… URLs it is given; this holds even if one of
/// those checks had a bug. A handle that cannot be restricted sends nothing.
package enum CurlProtocols {
    /// `CURLOPT_PROTOCOLS_STR`, `CURLOPT_REDIR_PROTOCOLS_STR` (libcurl 7.85 and later).
    static let names: [(option: Int32, name: String)] = [
        (LibCurl.Option.protocolsString, "CURLOPT_PROTOCOLS_STR"),
        (LibCurl.Option.redirectProtocolsString, "CURLOPT_REDIR_PROTOCOLS_STR"),
    ]
    /// `CURLOPT_PROTOCOLS`, `CURLOPT_REDIR_PROTOCOLS`: the bitmask forms that libcurl before 7.85 takes.
    static let masks: [(option: Int32, name: String)] = [
        (LibCurl.Option.protocols, "CURLOPT_PROTOCOLS"),
        (LibCurl.Option.redirectProtocols, "CURLOPT_REDIR_PROTOCOLS"),
    ]
    /// `CURLPROTO_HTTP | CURLPROTO_HTTPS`
    static let httpMask = 1 | 2

    /// Restricts a handle with the setters given (`curl_easy_setopt` for a string and for a number, each
    /// returning libcurl's result code); `nil` once both the request and the redirect protocols are http and
    /// https, else the error to fail the transfer with.
    package static func restrict(
        setString: (Int32, String) -> Int32, setNumber: (Int32, Int) -> Int32
    ) -> CurlUnavailable? {
        var refused: [String] = []
        for (string, mask) in zip(names, masks) {
            let byName = setString(string.option, "http,https")
            if byName == 0 { continue }
            let byMask = setNumber(mask.option, httpMask)
            if byMask == 0 { continue }
            refused.append("\(string.name) (\(byName)), \(mask.name) (\(byMask))")
        }
        guard !refused.isEmpty else { return nil }
        return CurlUnavailable(
            reason: "it could not be restricted to http and https, so nothing was sent; it refused "
                + refused.joined(separator: ", "))
    }
}
