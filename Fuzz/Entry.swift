// libFuzzer's entry point: runs the target FUZZ_TARGET names (see FuzzTargets.all); a broken rule aborts.
import Foundation

let targetName = ProcessInfo.processInfo.environment["FUZZ_TARGET"] ?? ""

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let target = FuzzTargets.all[targetName] else {
        fatalError("FUZZ_TARGET must be one of \(FuzzTargets.all.keys.sorted()), not '\(targetName)'")
    }
    let data = bytes.map { Data(bytes: $0, count: count) } ?? Data()
    do {
        try target(data)
    } catch {
        fatalError("\(targetName): \(error)")
    }
    return 0
}
