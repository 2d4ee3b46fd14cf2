"""WebSocket test server on the `websockets` package (PyPI), for WebSocketRealServerTests and the benchmarks.

Usage: ws_server.py PORT TLS_PORT CERT KEY [STRICT_PORT UNCOMPRESSED_PORT]   (TLS_PORT 0: no TLS listener)
Prints "ready" once every listener accepts. The plain and TLS listeners accept permessage-deflate (RFC 7692) with
the package's defaults (server_max_window_bits=12, and client_max_window_bits=12 to a client that offers the
parameter); STRICT_PORT's demands no context takeover both ways and 10-bit windows; UNCOMPRESSED_PORT's
accepts no extension. Paths:
  /echo                 every message back, as it came (text or binary)
  /headers              one text message: the handshake's request headers as JSON (lower-case names)
  /subprotocol          one text message: the subprotocol chosen ("chat.v2" if offered, else "chat.v1", else none)
  /large?size=N         one binary message of N bytes (byte i is i % 251)
  /fragmented           a text message in 3 fragments, then a binary one in 2
  /ping                 pings the client and sends "pong received" once its pong came
  /close?code=C&reason=R  closes with code C and reason R
  /auth                 401 with a JSON body unless `Authorization: Bearer good`; then like /echo
  /flood?size=N         binary messages of N bytes as fast as the client takes them
  /count?id=X           (plain HTTP) how many handshakes with `id=X` in their query each listener saw, as JSON
  /extensions           one text message: the extensions agreed, as JSON (a list; the server's view of each side)
  /text?size=N          one text message of N bytes of repetitive JSON-like lines (compresses well)
"""
import asyncio
import http
import json
import ssl
import sys
from urllib.parse import parse_qs, urlsplit

from websockets.asyncio.server import serve
from websockets.extensions.permessage_deflate import ServerPerMessageDeflateFactory
from websockets.datastructures import Headers
from websockets.http11 import Response

handshakes = {}


def make_process_request(listener):
    def process_request(connection, request):
        target = urlsplit(request.path)
        path, query = target.path, parse_qs(target.query)
        tag = query.get("id", [""])[-1]
        if path == "/count":
            body = json.dumps({listener: handshakes.get((listener, tag), 0) for listener in ("plain", "tls")}).encode()
            return Response(200, "OK", Headers([("Content-Type", "application/json"),
                                                ("Content-Length", str(len(body)))]), body)
        handshakes[(listener, tag)] = handshakes.get((listener, tag), 0) + 1
        if path == "/auth" and request.headers.get("Authorization") != "Bearer good":
            body = json.dumps({"error": "token refused"}).encode()
            return Response(401, "Unauthorized", Headers([("Content-Type", "application/json"),
                                                          ("Content-Length", str(len(body)))]), body)
        return None
    return process_request


def select_subprotocol(connection, offered):
    for choice in ("chat.v2", "chat.v1"):
        if choice in offered:
            return choice
    return None


async def handler(ws):
    target = urlsplit(ws.request.path)
    query = {key: values[-1] for key, values in parse_qs(target.query).items()}
    path = target.path
    if path in ("/echo", "/auth"):
        async for message in ws:
            await ws.send(message)
    elif path == "/headers":
        await ws.send(json.dumps({name.lower(): value for name, value in ws.request.headers.raw_items()}))
        await ws.wait_closed()
    elif path == "/subprotocol":
        await ws.send(ws.subprotocol or "none")
        await ws.wait_closed()
    elif path == "/large":
        size = int(query.get("size", "1048576"))
        await ws.send((bytes(range(251)) * (size // 251 + 1))[:size])
        await ws.wait_closed()
    elif path == "/fragmented":
        await ws.send(["Hel", "lo, ", "κόσμε"])
        await ws.send([b"\x00\x01", b"\x02"])
        await ws.wait_closed()
    elif path == "/ping":
        waiter = await ws.ping(b"are you there")
        await waiter
        await ws.send("pong received")
        await ws.wait_closed()
    elif path == "/extensions":
        await ws.send(json.dumps([
            {"name": extension.name,
             "client_no_context_takeover": getattr(extension, "remote_no_context_takeover", None),
             "server_no_context_takeover": getattr(extension, "local_no_context_takeover", None),
             "client_max_window_bits": getattr(extension, "remote_max_window_bits", None),
             "server_max_window_bits": getattr(extension, "local_max_window_bits", None)}
            for extension in ws.protocol.extensions]))
        await ws.wait_closed()
    elif path == "/text":
        await ws.send(compressible_text(int(query.get("size", "1048576"))))
        await ws.wait_closed()
    elif path == "/close":
        await ws.close(int(query.get("code", "1000")), query.get("reason", ""))
    elif path == "/flood":
        payload = b"x" * int(query.get("size", "65536"))
        try:
            while True:
                await ws.send(payload)
                # `send` yields only once the socket's buffer is full: to a client that reads as fast as this
                # writes, the loop would serve no other connection (a CI run saw a keep-alive test's pongs wait 10 s).
                await asyncio.sleep(0)
        except Exception:
            pass
    else:
        await ws.close(1008, "unknown path")


def compressible_text(size):
    """`size` bytes of JSON-like lines that differ a little from one another, as real traffic does."""
    lines, total, index = [], 0, 0
    while total < size:
        line = '{"id": %d, "user": "user-%d", "text": "message number %d", "ok": true}\n' % (index, index % 97, index)
        lines.append(line)
        total += len(line)
        index += 1
    return "".join(lines)[:size]


async def main():
    port, tls_port = int(sys.argv[1]), int(sys.argv[2])
    # Messages up to 64 MiB in, no keep-alive pings of the server's own (the tests ping when they mean to).
    options = dict(max_size=64 << 20, ping_interval=None, select_subprotocol=select_subprotocol)
    async with serve(handler, "127.0.0.1", port, process_request=make_process_request("plain"), **options):
        if tls_port:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(sys.argv[3], sys.argv[4])
            async with serve(handler, "127.0.0.1", tls_port, ssl=context,
                             process_request=make_process_request("tls"), **options):
                await serve_variants(options)
        else:
            await serve_variants(options)


async def serve_variants(options):
    """The listeners with other compression settings, when their ports are given; then "ready"."""
    if len(sys.argv) < 7:
        print("ready", flush=True)
        await asyncio.Future()
    strict = ServerPerMessageDeflateFactory(
        server_no_context_takeover=True, client_no_context_takeover=True, server_max_window_bits=10,
        client_max_window_bits=10)
    async with serve(handler, "127.0.0.1", int(sys.argv[5]), process_request=make_process_request("strict"),
                     extensions=[strict], compression=None, **options):
        async with serve(handler, "127.0.0.1", int(sys.argv[6]), process_request=make_process_request("uncompressed"),
                         compression=None, **options):
            print("ready", flush=True)
            await asyncio.Future()


if __name__ == "__main__":
    asyncio.run(main())
