"""A server of byte ranges (RFC 9110 §14) that cuts its answers where a test says, for the resumable downloads.

Run: python3 range_server.py PORT   (prints "ready" once listening)

  /setup?id=X[&validator=etag|weak|lastmod|none][&ranges=0][&cuts=P1,P2,…][&stall=S][&change_after=K]
        [&bad_range=1][&gzip=1][&overstate=1]
      How the server answers resource X's requests from now on (each call replaces the last; none: all
      defaults). Kept apart from /file so that the URL a client resumes is the URL it started with.
  /file?id=X&size=N
      N bytes (random, seeded by the version) of resource X. Version 1 at first; with change_after=K, version 2
      from X's K+1-th request on (another body, another validator). With `Accept-Ranges: bytes` (unless
      ranges=0: then every Range is ignored and no such header is sent) a `Range: bytes=S-` or `bytes=S-E`
      is answered 206 with its Content-Range, or 416 with `Content-Range: bytes */N` when S >= N; an
      `If-Range` that is not the current ETag (exact, strong only) or Last-Modified gets the whole body in a
      200. validator: a strong ETag (default), a weak one, a Last-Modified date, or none.
      cuts: positions in the body; an answer whose bytes reach the next cut not yet used sends the bytes up to
      it and closes the connection (stall=S: goes silent S seconds first). bad_range=1: a 206 whose
      Content-Range starts 7 bytes after the asked start. overstate=1: a Content-Length one more than the body,
      and the connection closed after it (the client has it all, and fails). gzip=1: `Content-Encoding: gzip` (the body gzipped;
      a cut then counts bytes of the gzip).
  /stats?id=X   JSON: requests, body_bytes (body bytes sent, all answers), ranges (each request's Range header
                or null), if_ranges, statuses, and sha256 of each version's body
"""
import gzip
import hashlib
import json
import random
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

lock = threading.Lock()
resources = {}
bodies = {}
setups = {}


def body_of(version, size):
    key = (version, size)
    with lock:
        if key not in bodies:
            generator = random.Random(version * 7919 + size)
            # randbytes takes at most 2^31 bits at once: a MiB at a time.
            bodies[key] = b"".join(generator.randbytes(min(1 << 20, size - offset))
                                   for offset in range(0, size, 1 << 20))
        return bodies[key]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        target = urlsplit(self.path)
        query = {key: values[-1] for key, values in parse_qs(target.query).items()}
        if target.path == "/stats":
            return self.stats(query.get("id", ""))
        if target.path == "/file":
            with lock:
                options = dict(setups.get(query.get("id", ""), {}))
            options.update(query)
            return self.file(options)
        if target.path == "/setup":
            with lock:
                setups[query.get("id", "")] = query
                if query.get("id", "") in resources:
                    resources[query["id"]]["cuts_used"] = 0
            self.send_response(204)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def stats(self, resource_id):
        with lock:
            state = dict(resources.get(resource_id, {}))
        size = state.get("size", 0)
        state["sha256"] = {str(version): hashlib.sha256(body_of(version, size)).hexdigest() for version in (1, 2)}
        state.pop("cuts_used", None)
        data = json.dumps(state).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def file(self, query):
        resource_id, size = query.get("id", ""), int(query.get("size", "1048576"))
        cuts = sorted(int(cut) for cut in query.get("cuts", "").split(",") if cut)
        with lock:
            state = resources.setdefault(resource_id, {
                "size": size, "requests": 0, "body_bytes": 0, "ranges": [], "if_ranges": [], "statuses": [],
                "cuts_used": 0})
            state["requests"] += 1
            state["ranges"].append(self.headers.get("Range"))
            state["if_ranges"].append(self.headers.get("If-Range"))
            change_after = int(query.get("change_after", "0"))
            version = 2 if change_after and state["requests"] > change_after else 1
        body = body_of(version, size)
        etag = '"v%d-%d"' % (version, size)
        last_modified = "Mon, 0%d Nov 2026 10:00:00 GMT" % version
        validator = query.get("validator", "etag")
        headers = []
        if validator == "etag":
            headers.append(("ETag", etag))
        elif validator == "weak":
            headers.append(("ETag", "W/" + etag))
        elif validator == "lastmod":
            headers.append(("Last-Modified", last_modified))
        ranges = query.get("ranges", "1") != "0"
        if ranges:
            headers.append(("Accept-Ranges", "bytes"))
        status, start, end = 200, 0, size
        asked = self.headers.get("Range") if ranges else None
        if_range = self.headers.get("If-Range")
        if asked and if_range is not None:
            current = etag if validator == "etag" else last_modified if validator == "lastmod" else None
            if if_range != current:
                asked = None
        if asked and asked.startswith("bytes="):
            first, _, last = asked[len("bytes="):].partition("-")
            start = int(first)
            end = min(size, int(last) + 1) if last else size
            if start >= size:
                return self.answer(416, headers + [("Content-Range", "bytes */%d" % size)], b"", resource_id)
            status = 206
            if query.get("bad_range") == "1":
                start = min(size - 1, start + 7)
            headers.append(("Content-Range", "bytes %d-%d/%d" % (start, end - 1, size)))
        piece = body[start:end]
        if query.get("gzip") == "1":
            piece = gzip.compress(piece, 1)
            headers.append(("Content-Encoding", "gzip"))
        with lock:
            used = state["cuts_used"]
            pending = [cut for cut in cuts[used:] if cut > start]
            cut = pending[0] if pending and pending[0] < start + len(piece) else None
            if cut is not None:
                state["cuts_used"] = cuts.index(cut) + 1
        self.answer(status, headers, piece, resource_id, cut=None if cut is None else cut - start,
                    stall=float(query.get("stall", "0")), overstate=query.get("overstate") == "1")

    def answer(self, status, headers, piece, resource_id, cut=None, stall=0.0, overstate=False):
        with lock:
            resources[resource_id]["statuses"].append(status)
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(piece) + (1 if overstate else 0)))
        self.end_headers()
        sent = piece if cut is None else piece[:cut]
        if overstate:
            cut = len(piece)
        view, offset = memoryview(sent), 0
        try:
            while offset < len(view):
                chunk = view[offset:offset + 65536]
                self.wfile.write(chunk)
                offset += len(chunk)
                with lock:
                    resources[resource_id]["body_bytes"] += len(chunk)
            self.wfile.flush()
            if cut is not None:
                if stall:
                    time.sleep(stall)
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            self.close_connection = True


def main():
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
    server.daemon_threads = True
    print("ready", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
