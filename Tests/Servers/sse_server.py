"""A streaming server for the streaming tests: server-sent events, JSON Lines, big bodies, drops.

Run: python3 sse_server.py PORT PRIVATE_PORT   (prints "ready" once both listen)

Every body is sent with chunked transfer encoding, each piece flushed on its own (TCP_NODELAY), so that a
client sees the chunk boundaries the path describes.

  /events               8 events in 12 pieces, 20 ms apart: ids, a retry, comments, multi-line data, CRLF,
                        CR, LF, a field without a value, a BOM first, and a UTF-8 character split between
                        two pieces; then the stream ends
  /events-then-drop     2 events, then the connection closes without the last chunk
  /ticks?count=N&every=S  N events (`id: i`, `data: tick i`), S seconds apart (default 1000, 0.05)
  /jsonl?count=N        N lines of JSON, `{"n": i, "text": "line i"}`, about 64 KiB per piece
  /bytes?mb=N           N MiB of a byte pattern, 64 KiB pieces, as fast as the client reads
  /resumable?total=N&per=P
                        with `Last-Event-ID: L` (0 if absent): `retry: 50`, then events L+1 … L+P (at most
                        N; `data: event i after L`), then the connection drops mid-stream; 204 once L >= N
  /bad-items?kind=K&split=S
                        items, then a bad one, then one more: K is `jsonl` (`[0]`, `[1]`, `oops`, `[3]`),
                        `lines` (`a`, `bb`, 40 x's, `last`) or `sse` (events `a` id 1, `bb` id 2, one with
                        40 bytes of data, `last`); S is `one` (the whole body in one piece) or `bytes`
                        (one piece per byte)
  /no-events            `retry: 10` and a comment, then the stream ends: never an event
  /id-only              without `Last-Event-ID`: an event with id 1, then a block with only `id: 2`, then
                        the stream ends; with one, 204
  /no-content           204
  /error                429 with a JSON error body, `{"message": "slow down"}`

The second port (PRIVATE_PORT) serves the same paths: one test counts every socket to it as its own.
"""
import json
import socket
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


BAD_ITEMS = {
    "jsonl": b"[0]\n[1]\noops\n[3]\n",
    "lines": b"a\nbb\n" + b"x" * 40 + b"\nlast\n",
    "sse": b"id: 1\ndata: a\n\nid: 2\ndata: bb\n\ndata: " + b"x" * 40 + b"\n\ndata: last\n\n",
}

EVENT_PIECES = [
    b"\xef\xbb\xbf: a comment first\n",
    b"retry: 250\nid: 1\ndata: first\n\n",
    b"id: 2\r\nevent: update\r\ndata: line one\r\ndata: line two\r\n\r\n",
    b"id: 3\rdata: cr only\r\r",
    b"data\n\n",  # a field without a value: an empty event
    b"id: 4\ndata: caf\xc3",  # "café €" split inside the é
    b"\xa9 \xe2\x82",  # and inside the €
    b"\xac\n\n",
    b": keep-alive\n\n",
    b"id: 5\ndata:no space\ndata:  two spaces\n\n",
    b"event: done\ndata: bye\n\n",
    b"data: never dispatched (no blank line)",
]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def start(self, content_type, status=200, headers=()):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache")
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.flush()

    def piece(self, data):
        if data:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

    def end(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        try:
            if url.path == "/events":
                self.start("text/event-stream")
                for piece in EVENT_PIECES:
                    self.piece(piece)
                    time.sleep(0.02)
                self.end()
            elif url.path == "/events-then-drop":
                self.start("text/event-stream")
                self.piece(b"id: 1\ndata: one\n\n")
                self.piece(b"id: 2\ndata: two\n\n")
                time.sleep(0.05)
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
            elif url.path == "/ticks":
                count = int(query.get("count", "1000"))
                every = float(query.get("every", "0.05"))
                self.start("text/event-stream")
                for i in range(1, count + 1):
                    self.piece(b"id: %d\ndata: tick %d\n\n" % (i, i))
                    time.sleep(every)
                self.end()
            elif url.path == "/jsonl":
                count = int(query.get("count", "100000"))
                self.start("application/jsonl")
                batch = []
                size = 0
                for i in range(count):
                    line = json.dumps({"n": i, "text": "line %d" % i}).encode() + b"\n"
                    batch.append(line)
                    size += len(line)
                    if size >= 65536:
                        self.piece(b"".join(batch))
                        batch, size = [], 0
                self.piece(b"".join(batch))
                self.end()
            elif url.path == "/bytes":
                total = int(query.get("mb", "1")) << 20
                self.start("application/octet-stream")
                block = bytes(range(256)) * 256
                sent = 0
                while sent < total:
                    piece = block[: min(len(block), total - sent)]
                    self.piece(piece)
                    sent += len(piece)
                self.end()
            elif url.path == "/resumable":
                total = int(query.get("total", "6"))
                per = int(query.get("per", "2"))
                last = int(self.headers.get("Last-Event-ID") or 0)
                if last >= total:
                    self.send_response(204)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.start("text/event-stream")
                self.piece(b"retry: 50\n\n")
                for i in range(last + 1, min(last + per, total) + 1):
                    self.piece(b"id: %d\ndata: event %d after %d\n\n" % (i, i, last))
                    time.sleep(0.02)
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
            elif url.path == "/bad-items":
                body = BAD_ITEMS[query.get("kind", "jsonl")]
                self.start("text/event-stream" if query.get("kind") == "sse" else "text/plain")
                if query.get("split") == "bytes":
                    for byte in body:
                        self.piece(bytes([byte]))
                else:
                    self.piece(body)
                self.end()
            elif url.path == "/no-events":
                self.start("text/event-stream")
                self.piece(b"retry: 10\n: nothing yet\n\n")
                self.end()
            elif url.path == "/id-only":
                if self.headers.get("Last-Event-ID") is not None:
                    self.send_response(204)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.start("text/event-stream")
                self.piece(b"retry: 10\nid: 1\ndata: one\n\nid: 2\n\n")
                self.end()
            elif url.path == "/no-content":
                self.send_response(204)
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif url.path == "/error":
                body = b'{"message": "slow down"}'
                self.send_response(429)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            else:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    servers = [Server(("127.0.0.1", int(port)), Handler) for port in sys.argv[1:3]]
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    print("ready", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
