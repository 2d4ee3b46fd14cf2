"""A WebSocket server that breaks RFC 6455 on purpose, for WebSocketMisbehavingServerTests.

Usage: ws_misbehaving_server.py PORT   — prints "ready". Each WebSocket path is one misbehaviour; with
`?id=X` the server records what the client sent back (its close frame's code, bytes after the handshake)
and how many bytes of frames it managed to send (`sent`),
and a plain `GET /report?id=X` answers that record as JSON.
  /masked            a masked text frame (servers must not mask)
  /bad-opcode        a frame with the reserved opcode 3
  /reserved-bit      a text frame with RSV1 set (no extension was negotiated)
  /bad-utf8          a text message in two fragments: valid "κ", then an invalid byte (0xFF)
  /huge              a binary frame header announcing 2 GB, then as many zeros as the client takes
  /never-closes      a text frame "hi"; never answers a close frame nor ends the connection
  /mid-frame         a frame header announcing 100 bytes, 10 of them, then the connection ends
  /wrong-accept      a 101 whose Sec-WebSocket-Accept does not match the key
  /no-pong           a text frame "hi", then nothing: pings are never answered
"""
import asyncio
import base64
import hashlib
import json
import struct
import sys
from urllib.parse import parse_qs, urlsplit

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
reports = {}


def frame(opcode, payload, fin=True, rsv=0, mask=None):
    head = bytes([(0x80 if fin else 0) | rsv | opcode])
    length = len(payload)
    mask_bit = 0x80 if mask else 0
    if length < 126:
        head += bytes([mask_bit | length])
    elif length < 65536:
        head += bytes([mask_bit | 126]) + struct.pack("!H", length)
    else:
        head += bytes([mask_bit | 127]) + struct.pack("!Q", length)
    if mask:
        payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        head += mask
    return head + payload


async def read_client(reader, record):
    """Reads the client's frames after the handshake, recording its close code and the byte count."""
    buffer = b""
    try:
        while True:
            chunk = await reader.read(65536)
            if not chunk:
                return
            record["bytes"] += len(chunk)
            buffer += chunk
            while len(buffer) >= 2:
                length = buffer[1] & 0x7F
                offset = 2
                if length == 126:
                    if len(buffer) < 4:
                        break
                    length, offset = struct.unpack("!H", buffer[2:4])[0], 4
                elif length == 127:
                    if len(buffer) < 10:
                        break
                    length, offset = struct.unpack("!Q", buffer[2:10])[0], 10
                masked = buffer[1] & 0x80
                total = offset + (4 if masked else 0) + length
                if len(buffer) < total:
                    break
                key = buffer[offset:offset + 4] if masked else b"\0\0\0\0"
                payload = bytes(b ^ key[i % 4] for i, b in enumerate(buffer[total - length:total]))
                if buffer[0] & 0x0F == 8:
                    record["close_code"] = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else None
                buffer = buffer[total:]
    except ConnectionError:
        return


async def handle(reader, writer):
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
        writer.close()
        return
    lines = head.decode("latin-1").split("\r\n")
    target = urlsplit(lines[0].split(" ")[1])
    query = {key: values[-1] for key, values in parse_qs(target.query).items()}
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
    path = target.path
    if path == "/report":
        body = json.dumps(reports.get(query.get("id"), {})).encode()
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                     b"Connection: close\r\n\r\n" % len(body) + body)
        await writer.drain()
        writer.close()
        return
    record = {"close_code": None, "bytes": 0, "sent": 0}
    reports[query.get("id", "")] = record
    key = headers.get("sec-websocket-key", "")
    accept = base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
    if path == "/wrong-accept":
        accept = base64.b64encode(hashlib.sha1(b"not the key").digest()).decode()
    writer.write(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  f"Sec-WebSocket-Accept: {accept}\r\n\r\n").encode())
    if path == "/never-reads":
        # Reads nothing after the handshake: the client's messages fill the connection, then its send buffer.
        await writer.drain()
        await asyncio.sleep(30)
        writer.close()
        return
    reading = asyncio.ensure_future(read_client(reader, record))
    try:
        if path == "/masked":
            writer.write(frame(0x1, b"hello", mask=b"\x01\x02\x03\x04"))
        elif path == "/bad-opcode":
            writer.write(frame(0x3, b"?"))
        elif path == "/reserved-bit":
            writer.write(frame(0x1, b"hello", rsv=0x40))
        elif path == "/bad-utf8":
            writer.write(frame(0x1, "κ".encode(), fin=False))
            await writer.drain()
            await asyncio.sleep(0.05)
            writer.write(frame(0x0, b"\xff", fin=True))
        elif path == "/huge":
            writer.write(bytes([0x82, 127]) + struct.pack("!Q", 2 << 30))
            zeros = bytes(65536)
            for _ in range((2 << 30) // len(zeros)):
                if reading.done():
                    break
                writer.write(zeros)
                await writer.drain()
                record["sent"] += len(zeros)
        elif path == "/never-closes" or path == "/no-pong":
            writer.write(frame(0x1, b"hi"))
            await writer.drain()
            await asyncio.sleep(30)
        elif path == "/mid-frame":
            writer.write(bytes([0x82, 100]) + bytes(10))
            await writer.drain()
            await asyncio.sleep(0.1)
            writer.close()
            return
        await writer.drain()
        await asyncio.wait_for(reading, timeout=10)
    except (ConnectionError, asyncio.TimeoutError):
        pass
    finally:
        reading.cancel()
        writer.close()


async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", int(sys.argv[1]))
    async with server:
        print("ready", flush=True)
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
