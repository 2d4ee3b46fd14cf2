import Foundation
import Testing

@testable import SwiftyService

/// CurlBackend's in-memory bodies: chunks copied into one region that becomes the response's `Data`.
@Suite struct ResponseBodyBufferTests {
    private func append(_ bytes: [UInt8], to buffer: inout ResponseBodyBuffer) -> Bool {
        bytes.withUnsafeBytes { buffer.append($0) }
    }

    @Test func chunksPastTheReserveArriveWholeAndInOrder() {
        var buffer = ResponseBodyBuffer()
        buffer.reserve(16)
        var expected: [UInt8] = []
        for round in 0..<300 {
            let chunk = (0..<(round % 37 + 1)).map { UInt8(truncatingIfNeeded: round &* 7 &+ $0) }
            #expect(append(chunk, to: &buffer))
            expected += chunk
        }
        #expect(buffer.count == expected.count)
        #expect(buffer.take() == Data(expected))
        #expect(buffer.count == 0)
        #expect(buffer.take().isEmpty)
    }

    @Test func aRedirectsBodyIsForgottenAndTheNextHopsKept() {
        var buffer = ResponseBodyBuffer()
        buffer.reserve(1024)
        #expect(append(Array("moved".utf8), to: &buffer))
        buffer.removeAll()
        #expect(append(Array("final".utf8), to: &buffer))
        #expect(buffer.take() == Data("final".utf8))
    }

    @Test func noBodyIsEmptyDataWithOrWithoutAReserve() {
        var reserved = ResponseBodyBuffer()
        reserved.reserve(1024)
        #expect(reserved.take() == Data())
        var bare = ResponseBodyBuffer()
        #expect(append([], to: &bare))
        #expect(bare.take() == Data())
        bare.deallocate()
    }

    /// 140,000 bytes in 256 KiB of room: more than 64 KiB to give back when the body becomes `Data`.
    @Test func aLargeBodyArrivesWholeWhenItsSlackIsGivenBack() {
        var buffer = ResponseBodyBuffer()
        let chunk = [UInt8](repeating: 0xAB, count: 70_000)
        #expect(append(chunk, to: &buffer))
        #expect(append(chunk, to: &buffer))
        let data = buffer.take()
        #expect(data.count == 140_000)
        #expect(data.allSatisfy { $0 == 0xAB })
    }
}
