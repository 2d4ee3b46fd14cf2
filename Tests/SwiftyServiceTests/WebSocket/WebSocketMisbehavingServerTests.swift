import Foundation
import SwiftyService
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A server that breaks RFC 6455 (Tests/Servers/ws_misbehaving_server.py): each misbehaviour ends the socket
/// with the right close code sent to the server and the right error for the reader, never a hang.
@Suite(.timeLimit(.minutes(5))) struct WebSocketMisbehavingServerTests {
    /// Opens the misbehaving path, reads until the end, and returns the failure and the server's record.
    private func run(_ path: String, options: WebSocketOptions = WebSocketOptions()) async throws
        -> (messages: [WebSocketMessage], error: WebSocketError?, closeCode: Int?)
    {
        let id = UUID().uuidString
        let socket = try await TestEndpoint(try WebSocketServers.realm("WS_MISBEHAVING_URL"), path, parameters: ["id": id])
            .webSocket(options: options)
        let (messages, failure) = await drain(socket)
        return (messages, failure?.webSocketError, try await WebSocketServers.report(id).closeCode)
    }

    @Test func aMaskedServerFrameIsAProtocolError() async throws {
        let (messages, error, closeCode) = try await run("masked")
        #expect(messages.isEmpty)
        #expect(error?.closeCode == .protocolError)
        #expect(closeCode == 1002)
    }

    @Test func aReservedOpcodeIsAProtocolError() async throws {
        let (_, error, closeCode) = try await run("bad-opcode")
        #expect(error?.closeCode == .protocolError)
        #expect(closeCode == 1002)
    }

    @Test func aReservedBitIsAProtocolError() async throws {
        let (_, error, closeCode) = try await run("reserved-bit")
        #expect(error?.closeCode == .protocolError)
        #expect(closeCode == 1002)
    }

    @Test func invalidUTF8SplitAcrossFragmentsCloses1007() async throws {
        let (messages, error, closeCode) = try await run("bad-utf8")
        #expect(messages.isEmpty)
        #expect(error?.closeCode == .invalidFramePayloadData)
        #expect(closeCode == 1007)
    }

    @Test func aTwoGigabyteHeaderCloses1009WithoutReadingThePayload() async throws {
        let id = UUID().uuidString
        let socket = try await TestEndpoint(try WebSocketServers.realm("WS_MISBEHAVING_URL"), "huge", parameters: ["id": id])
            .webSocket()
        let (_, failure) = await drain(socket)
        #expect(failure?.webSocketError == .messageTooBig(limit: 16 << 20))
        let report = try await WebSocketServers.report(id)
        #expect(report.closeCode == 1009)
        // The payload was never read: the server could send no more than the sockets' buffers hold.
        #expect(report.sent < 64 << 20)
    }

    @Test func aServerThatNeverClosesIsLeftAfterTheCloseTimeout() async throws {
        let socket = try await TestEndpoint(try WebSocketServers.realm("WS_MISBEHAVING_URL"), "never-closes")
            .webSocket(options: WebSocketOptions(closeTimeout: 0.5))
        #expect(try await socket.receive() == .text("hi"))
        let start = ContinuousClock.now
        await socket.close()
        // The server would hold the connection for 30 s.
        #expect(seconds(since: start) < 20)
        #expect(try await socket.receive() == nil)
    }

    @Test func aConnectionEndingMidFrameIsAConnectionLoss() async throws {
        let (messages, error, _) = try await run("mid-frame")
        #expect(messages.isEmpty)
        guard case .connectionLost? = error else {
            Issue.record("expected a connection loss, got \(String(describing: error))")
            return
        }
    }

    @Test func aWrongAcceptFailsTheHandshakeAndNothingIsSentAfterIt() async throws {
        let id = UUID().uuidString
        let realm = try WebSocketServers.realm("WS_MISBEHAVING_URL")
        await #expect {
            _ = try await TestEndpoint(realm, "wrong-accept", parameters: ["id": id]).webSocket()
        } throws: { error in
            guard case .handshakeFailed? = (error as? ServiceError)?.webSocketError else { return false }
            return true
        }
        #expect(try await WebSocketServers.report(id).bytes == 0)
    }

    @Test func aServerThatNeverAnswersPingsIsDroppedAfterThePingTimeout() async throws {
        // The server would end the connection after 30 s, without a close frame: a connection loss.
        let (messages, error, _) = try await run("no-pong", options: WebSocketOptions(pingInterval: 0.2, pingTimeout: 0.5))
        #expect(messages == [.text("hi")])
        #expect(error == .pingTimedOut)
    }
}
