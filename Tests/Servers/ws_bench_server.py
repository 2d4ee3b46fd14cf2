"""The benchmarks' WebSocket server and its plain TCP twin (scripts/bench; ws.* scenarios).

Usage: ws_bench_server.py WS_PORT RAW_PORT  — prints "ready". Both do the same work per message, so that the
ratio of the two measures the client: one thread per connection, blocking sockets, TCP_NODELAY.
  WebSocket  GET /echo          each message back (unmasked), as one frame
             GET /flood?size=N  binary messages of N bytes as fast as the client takes them
  TCP        a first line "echo\n": every byte back; "flood N\n": N-byte chunks as fast as they are taken
"""
import base64
import hashlib
import socket
import struct
import sys
import threading
from urllib.parse import parse_qs, urlsplit

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def header(opcode, length):
    if length < 126:
        return bytes([0x80 | opcode, length])
    if length < 65536:
        return bytes([0x80 | opcode, 126]) + struct.pack("!H", length)
    return bytes([0x80 | opcode, 127]) + struct.pack("!Q", length)


def read_exactly(connection, count, buffer):
    while len(buffer) < count:
        chunk = connection.recv(max(65536, count - len(buffer)))
        if not chunk:
            raise ConnectionError("closed")
        buffer += chunk
    return buffer[:count], buffer[count:]


def websocket(connection):
    buffer = b""
    while b"\r\n\r\n" not in buffer:
        chunk = connection.recv(65536)
        if not chunk:
            return
        buffer += chunk
    head, buffer = buffer.split(b"\r\n\r\n", 1)
    lines = head.split(b"\r\n")
    target = urlsplit(lines[0].split(b" ")[1].decode())
    key = next(line.split(b":", 1)[1].strip() for line in lines if line.lower().startswith(b"sec-websocket-key"))
    accept = base64.b64encode(hashlib.sha1(key + GUID).digest())
    connection.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                       b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n")
    if target.path == "/flood":
        size = int(parse_qs(target.query)["size"][0])
        frame = header(0x2, size) + bytes(size)
        while True:
            connection.sendall(frame)
    while True:
        start, buffer = read_exactly(connection, 2, buffer)
        opcode, length = start[0] & 0x0F, start[1] & 0x7F
        if length == 126:
            extended, buffer = read_exactly(connection, 2, buffer)
            length = struct.unpack("!H", extended)[0]
        elif length == 127:
            extended, buffer = read_exactly(connection, 8, buffer)
            length = struct.unpack("!Q", extended)[0]
        mask, buffer = read_exactly(connection, 4, buffer)
        payload, buffer = read_exactly(connection, length, buffer)
        keystream = (mask * (length // 4 + 1))[:length]
        payload = (int.from_bytes(payload, "big") ^ int.from_bytes(keystream, "big")).to_bytes(length, "big")
        if opcode == 0x8:
            connection.sendall(header(0x8, len(payload)) + payload)
            return
        connection.sendall(header(opcode, length) + payload)


def raw(connection):
    buffer = b""
    while b"\n" not in buffer:
        chunk = connection.recv(65536)
        if not chunk:
            return
        buffer += chunk
    line, buffer = buffer.split(b"\n", 1)
    words = line.split()
    if words[0] == b"flood":
        chunk = bytes(int(words[1]))
        while True:
            connection.sendall(chunk)
    if buffer:
        connection.sendall(buffer)
    while True:
        data = connection.recv(65536)
        if not data:
            return
        connection.sendall(data)


def serve(listener, handler):
    while True:
        connection, _ = listener.accept()
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def run(connection=connection):
            try:
                handler(connection)
            except (ConnectionError, OSError):
                pass
            finally:
                connection.close()

        threading.Thread(target=run, daemon=True).start()


def listen(port):
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)
    return listener


if __name__ == "__main__":
    ws_listener, raw_listener = listen(int(sys.argv[1])), listen(int(sys.argv[2]))
    threading.Thread(target=serve, args=(raw_listener, raw), daemon=True).start()
    print("ready", flush=True)
    serve(ws_listener, websocket)
