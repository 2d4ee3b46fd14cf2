"""An HTTP/2 server over TLS (HTTP/1.1 too, by ALPN) for the connection-limit tests: hypercorn (PyPI, installed
into the venv by scripts/httpbin) with a small ASGI app.

Run: python3 http2_server.py PORT CERT.pem KEY.pem [CLEARTEXT_PORT]   (prints "ready" once it listens)

On CLEARTEXT_PORT it speaks HTTP/1.1 and cleartext HTTP/2 with prior knowledge (h2c).

  /ticks?count=N&every=S   N events (`id: i`, `data: tick i`), S seconds apart (default 1000, 0.05), as
                           text/event-stream; the head says which connection carries the stream
                           (`X-Client-Port`, the client's port: every stream multiplexed over one connection
                           has the same) and in which protocol (`X-HTTP-Version`: 2 or 1.1)
  /echo                    the request body's length and SHA-256 as JSON ({"length", "sha256"}), read as it
                           comes, with the same two headers
"""
import asyncio
import hashlib
import json
import sys
import urllib.parse

from hypercorn.asyncio import serve
from hypercorn.config import Config


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] != "http":
        return
    query = dict(urllib.parse.parse_qsl(scope.get("query_string", b"").decode()))
    client_port = str((scope.get("client") or ("", 0))[1]).encode()
    if scope["path"] == "/echo":
        digest, length = hashlib.sha256(), 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return
            body = message.get("body", b"")
            digest.update(body)
            length += len(body)
            if not message.get("more_body", False):
                break
        answer = json.dumps({"length": length, "sha256": digest.hexdigest()}).encode()
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(answer)).encode()),
            (b"x-client-port", client_port), (b"x-http-version", scope["http_version"].encode())]})
        await send({"type": "http.response.body", "body": answer})
        return
    if scope["path"] != "/ticks":
        await send({"type": "http.response.start", "status": 404, "headers": [(b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})
        return
    count = int(query.get("count", "1000"))
    every = float(query.get("every", "0.05"))
    await send({
        "type": "http.response.start",
        "status": 200,
        "headers": [
            (b"content-type", b"text/event-stream"),
            (b"cache-control", b"no-cache"),
            (b"x-client-port", client_port),
            (b"x-http-version", scope["http_version"].encode()),
        ],
    })
    for i in range(1, count + 1):
        await send({"type": "http.response.body", "body": b"id: %d\ndata: tick %d\n\n" % (i, i), "more_body": True})
        await asyncio.sleep(every)
    await send({"type": "http.response.body", "body": b""})


async def main():
    port, certfile, keyfile = sys.argv[1:4]
    cleartext_port = sys.argv[4] if len(sys.argv) > 4 else None
    config = Config()
    config.bind = ["127.0.0.1:%s" % port]
    if cleartext_port:
        config.insecure_bind = ["127.0.0.1:%s" % cleartext_port]
    config.certfile = certfile
    config.keyfile = keyfile
    config.alpn_protocols = ["h2", "http/1.1"]
    config.accesslog = None
    config.errorlog = None
    config.keep_alive_timeout = 75
    ready = asyncio.Event()
    server = asyncio.ensure_future(serve(app, config, shutdown_trigger=asyncio.Future))
    # hypercorn has no "listening" hook: wait until the port answers.
    for _ in range(200):
        try:
            for listening in [port] + ([cleartext_port] if cleartext_port else []):
                reader, writer = await asyncio.open_connection("127.0.0.1", int(listening))
                writer.close()
            ready.set()
            break
        except OSError:
            await asyncio.sleep(0.05)
    print("ready" if ready.is_set() else "not listening", flush=True)
    await server


if __name__ == "__main__":
    asyncio.run(main())
