// libcurl's callbacks: plain C functions, handed the transfer they belong to (CurlLoop sets them on each hop).

let curlWrite: @convention(c) (UnsafeMutableRawPointer?, Int, Int, UnsafeMutableRawPointer?) -> Int =
    {
        data, size, count, context in
        guard let data, let context else { return 0 }
        let bytes = size * count
        // Borrowed, not retained: the loop holds the transfer for as long as libcurl may call back.
        return Unmanaged<CurlTransfer>.fromOpaque(context)._withUnsafeGuaranteedRef { transfer in
            let chunk = UnsafeRawBufferPointer(start: data, count: bytes)
            if transfer.sink != nil { return transfer.stream(chunk) }
            return transfer.write(chunk) ? bytes : 0
        }
    }

let curlHeader: @convention(c) (UnsafeMutableRawPointer?, Int, Int, UnsafeMutableRawPointer?) -> Int =
    {
        data, size, count, context in
        guard let data, let context else { return 0 }
        let bytes = size * count
        // Anything but `bytes` makes libcurl abort the transfer at once (CURLE_WRITE_ERROR).
        return Unmanaged<CurlTransfer>.fromOpaque(context)._withUnsafeGuaranteedRef { transfer in
            transfer.header(UnsafeRawBufferPointer(start: data, count: bytes)) ? bytes : 0
        }
    }

let curlRead: @convention(c) (UnsafeMutableRawPointer?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
    buffer, size, count, context in
    guard let buffer, let context else { return CurlTransfer.readAbort }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
    return transfer.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: size * count))
}

/// `CURLOPT_SEEKFUNCTION`: 0 (`CURL_SEEKFUNC_OK`) when the body is back at `offset`, 2 (`CURL_SEEKFUNC_CANTSEEK`)
/// otherwise, so libcurl fails the request rather than send a body that does not start where it should.
let curlSeek: @convention(c) (UnsafeMutableRawPointer?, Int64, Int32) -> Int32 = { context, offset, origin in
    guard let context, origin == 0 else { return 2 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
    return transfer.rewind(to: offset) ? 0 : 2
}
