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
The /deflate-* paths answer the handshake with `Sec-WebSocket-Extensions: permessage-deflate` (RFC 7692):
  /deflate-bomb      one binary message of 64 MiB of zeros, compressed to 64 KiB
  /deflate-flood     (with server_no_context_takeover) binary messages of 1 MiB of zeros, 1 KiB compressed, 3200
                     a second, never answering the client's close frame
  /deflate-invalid   a text frame with RSV1 whose payload is not DEFLATE data
  /deflate-bad-utf8  a compressed text message that inflates to invalid UTF-8 ("κ" then 0xFF)
  /deflate-control-rsv1       a ping with RSV1 set
  /deflate-continuation-rsv1  a compressed text message whose continuation frame has RSV1 set too
  /deflate-inspect   answers each data message of the client with a text frame of JSON: whether its frame had
                     RSV1, its payload's length on the wire, and its text (inflated with Python's zlib if RSV1)
  /extension?answer=X  answers the handshake with `Sec-WebSocket-Extensions: X`, then sends "hi" (compressed
                     when X starts with permessage-deflate)
"""
import asyncio
import base64
import hashlib
import json
import struct
import sys
import zlib
from urllib.parse import parse_qs, urlsplit

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
reports = {}
bomb = None  # /deflate-bomb's compressed payload, made on first use


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


def deflate(data):
    """`data` compressed as permessage-deflate sends it: raw DEFLATE, flushed, without the final 00 00 ff ff."""
    compressor = zlib.compressobj(wbits=-15)
    compressed = compressor.compress(data) + compressor.flush(zlib.Z_SYNC_FLUSH)
    assert compressed.endswith(b"\x00\x00\xff\xff")
    return compressed[:-4]


def unmasked_frames(buffer):
    """The whole client frames at the start of `buffer` as (first byte, payload), and the bytes left over."""
    frames = []
    while len(buffer) >= 2:
        length, offset = buffer[1] & 0x7F, 2
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
        frames.append((buffer[0], bytes(b ^ key[i % 4] for i, b in enumerate(buffer[total - length:total]))))
        buffer = buffer[total:]
    return frames, buffer


async def inspect_client(reader, writer, record):
    """Answers each of the client's data frames with what it was on the wire, until its close frame."""
    buffer = b""
    # One decompressor for the connection: both sides keep their context from message to message.
    decompressor = zlib.decompressobj(wbits=-15)
    while True:
        chunk = await reader.read(65536)
        if not chunk:
            return
        buffer += chunk
        frames, buffer = unmasked_frames(buffer)
        for first, payload in frames:
            opcode = first & 0x0F
            if opcode == 8:
                record["close_code"] = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else None
                writer.write(frame(0x8, payload[:2]))
                await writer.drain()
                return
            if opcode in (1, 2):
                compressed = bool(first & 0x40)
                data = decompressor.decompress(payload + b"\x00\x00\xff\xff") if compressed else payload
                answer = {"rsv1": compressed, "wire": len(payload), "text": data.decode("utf-8", "replace")}
                writer.write(frame(0x1, json.dumps(answer).encode()))
                await writer.drain()


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
            frames, buffer = unmasked_frames(buffer)
            for first, payload in frames:
                if first & 0x0F == 8:
                    record["close_code"] = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else None
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
    extension = "permessage-deflate" if path.startswith("/deflate-") else query.get("answer")
    if path == "/deflate-flood":
        extension += "; server_no_context_takeover"  # so that one compressed message can be sent again and again
    writer.write(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  f"Sec-WebSocket-Accept: {accept}\r\n"
                  + (f"Sec-WebSocket-Extensions: {extension}\r\n" if extension else "") + "\r\n").encode())
    if path == "/never-reads":
        # Reads nothing after the handshake: the client's messages fill the connection, then its send buffer.
        await writer.drain()
        await asyncio.sleep(30)
        writer.close()
        return
    if path == "/deflate-inspect":
        try:
            await asyncio.wait_for(inspect_client(reader, writer, record), timeout=20)
        except (ConnectionError, asyncio.TimeoutError):
            pass
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
                await asyncio.sleep(0)  # drain() yields only once the buffer is full: let other connections in
        elif path == "/never-closes" or path == "/no-pong":
            writer.write(frame(0x1, b"hi"))
            await writer.drain()
            await asyncio.sleep(30)
        elif path == "/deflate-bomb":
            global bomb
            bomb = bomb or deflate(bytes(64 << 20))
            writer.write(frame(0x2, bomb, rsv=0x40))
        elif path == "/deflate-flood":
            # 64 messages every 20 ms: 3 GiB a second once inflated, more than a client can inflate, for little
            # of the server's time.
            message = frame(0x2, deflate(bytes(1 << 20)), rsv=0x40)
            while not reading.done():
                writer.write(message * 64)
                await writer.drain()
                record["sent"] += 64
                await asyncio.sleep(0.02)
        elif path == "/deflate-invalid":
            writer.write(frame(0x1, b"\xff\xff\xff\xff\xff", rsv=0x40))
        elif path == "/deflate-bad-utf8":
            writer.write(frame(0x1, deflate("κ".encode() + b"\xff"), rsv=0x40))
        elif path == "/deflate-control-rsv1":
            writer.write(frame(0x9, b"ping", rsv=0x40))
        elif path == "/deflate-continuation-rsv1":
            compressed = deflate(b"hello, world")
            writer.write(frame(0x1, compressed[:4], fin=False, rsv=0x40))
            writer.write(frame(0x0, compressed[4:], rsv=0x40))
        elif path == "/extension":
            hello = (frame(0x1, deflate(b"hi"), rsv=0x40) if extension.startswith("permessage-deflate")
                     else frame(0x1, b"hi"))
            writer.write(hello)
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
