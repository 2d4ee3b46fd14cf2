"""A server that breaks HTTP on purpose, one way per path, for the robustness tests.

Run: python3 misbehaving_server.py PORT   (prints "sink-port N", then "ready" once listening)

  /reset-before-headers   reads the request, then resets the connection
  /reset-after-headers    sends a head (Content-Length: 1000) and 100 bytes, then resets
  /short-body             declares Content-Length: 1000, sends 100 bytes, closes normally
  /malformed-status       answers with a status line that is not HTTP
  /trickle?interval=I&count=N
                          declares N bytes (60 if absent) and sends one every I seconds (1 if absent)
  /huge                   declares a 1 GB body and sends zeros as fast as it can
  /big                    the same with 16 MB
  /huge-chunked           sends 1 GB of zeros in 1 MB chunks, no length declared
  /big-chunked            the same with 16 MB
  /bad-chunked            sends a chunked body whose chunk size is not hexadecimal
  /redirect-loop          redirects to itself forever
  /invalid-json           200 with a JSON content type and a body that is not JSON
  /bad-gzip               Content-Encoding: gzip over bytes that are not gzip
  /redirect?to=L&status=S answers status S (302 if absent) with exactly `Location: L` (L percent-decoded
                          once from the query): file:, gopher:, dict:, ftp:, upper-case HTTP: targets
  /many-headers?count=N&size=S
                          200 with N distinct headers (`<i in base 36>: v`, the value S bytes long, 1 if
                          absent) and a 2-byte body, sent at once. At most 8 bytes a line, so that 35,000 stay under the 300 KiB of head that
                          libcurl 7.88.1 (Debian's, with the fix of CVE-2023-38039) reads before failing on
                          its own; with `X-H<i>: v` it would, and the cost of many fields would not show.
                          The space after the colon is needed: FoundationNetworking fails on `name:value`.
  /zeros?mb=N             200 with N MB of zeros, Content-Length declared, sent as fast as possible
  /gzip-zeros?mb=N        200 with N MB of zeros as gzip (Content-Encoding: gzip), about 1 KB of gzip per MB,
                          no length declared, made as it is sent: 10240 is a gzip bomb of 10 MB that decodes
                          to 10 GB; a client that stops reading costs the server nothing more
  /cookies?l00=L&l01=L…   200 with one `Set-Cookie: L` line per parameter, in the parameters' order (each L
                          percent-decoded once, byte for byte, so that it may hold commas, quotes and control
                          characters), and as its body the request's `Cookie` header exactly as it came (empty
                          without one); with `redirect=P`, a 302 to P instead, its lines set all the same
  /upload?id=I&status=S&pause=P
                          reads the request's body (Content-Length or chunked), sleeping P seconds (0 if
                          absent) after each read of at most 64 KiB; answers `100 Continue` first when the
                          request expects it; then S (200 if absent) with JSON {"length", "sha256", "chunked",
                          "expect", "complete"}, which it also keeps under I; with `after=N&location=L`,
                          answers S with `Location: L` (percent-decoded once) as soon as N bytes of body are
                          in, then reads the rest and drops it
  /refuse-upload?id=I&status=S
                          answers S (413 if absent) as soon as the head is in, without a `100 Continue` and
                          without reading the body, then counts the body bytes that come anyway (until the
                          client closes, 2 s at most) and keeps the count under I as "length"
  /uploads?id=I           the JSON list of what the requests under I delivered, in order (waits up to 5 s
                          for one still being counted)
  /sink-bytes             the number of bytes the sink has received, as text
  /sink-reset             sets that number to 0 (answers 204)

The sink is a second plain TCP listener on a port of its own (the "sink-port" line): it accepts anything,
answers nothing and counts every byte received, so a test can tell that a redirect to gopher://, dict://
or ftp:// at that port sent nothing at all.
"""
import hashlib
import json
import socket
import socketserver
import struct
import sys
import threading
import time
import urllib.parse
import zlib


def base36(number):
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    text = ""
    while True:
        number, digit = divmod(number, 36)
        text = digits[digit] + text
        if number == 0:
            return text


def read_request(connection, data):
    """Reads one request from `data` and then the connection: its body and the bytes after it, or None when
    the connection closes first."""
    while b"\r\n\r\n" not in data:
        chunk = connection.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = connection.recv(65536)
        if not chunk:
            return None
        body += chunk
    return body[:length], body[length:]


class Uploads:
    """What each upload delivered, by the id its query gave."""
    records = {}
    counting = {}
    changed = threading.Condition()

    @classmethod
    def begin(cls, key):
        with cls.changed:
            cls.counting[key] = cls.counting.get(key, 0) + 1

    @classmethod
    def end(cls, key, record):
        with cls.changed:
            cls.records.setdefault(key, []).append(record)
            cls.counting[key] -= 1
            cls.changed.notify_all()

    @classmethod
    def of(cls, key):
        with cls.changed:
            cls.changed.wait_for(lambda: cls.counting.get(key, 0) == 0, timeout=5)
            return list(cls.records.get(key, []))


class BodyReader:
    """Reads a request's body from a connection, after the bytes of it that came with the head."""

    def __init__(self, connection, head, rest, pause):
        self.connection = connection
        self.buffer = rest
        self.pause = pause
        self.chunked = b"transfer-encoding: chunked" in head.lower()
        self.length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                self.length = int(value.strip())

    def more(self):
        chunk = self.connection.recv(65536)
        if not chunk:
            raise EOFError
        if self.pause:
            time.sleep(self.pause)
        self.buffer += chunk

    def take(self, count):
        while len(self.buffer) < count:
            self.more()
        taken, self.buffer = self.buffer[:count], self.buffer[count:]
        return taken

    def line(self):
        while b"\r\n" not in self.buffer:
            self.more()
        line, _, self.buffer = self.buffer.partition(b"\r\n")
        return line

    def pieces(self):
        """The body's bytes, a piece at a time."""
        if not self.chunked:
            left = self.length
            while left > 0:
                if not self.buffer:
                    self.more()
                piece, self.buffer = self.buffer[:left], self.buffer[left:]
                left -= len(piece)
                yield piece
            return
        while True:
            size = int(self.line().split(b";")[0], 16)
            if size == 0:
                while self.line():
                    pass
                return
            left = size
            while left > 0:
                if not self.buffer:
                    self.more()
                piece, self.buffer = self.buffer[:left], self.buffer[left:]
                left -= len(piece)
                yield piece
            self.take(2)


def reset(connection):
    # SO_LINGER with a zero timeout turns close() into a TCP reset.
    connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    connection.close()


class Sink(socketserver.BaseRequestHandler):
    """Counts every byte any client sends; never answers."""
    received = 0
    lock = threading.Lock()

    def handle(self):
        while True:
            try:
                chunk = self.request.recv(65536)
            except OSError:
                return
            if not chunk:
                return
            with Sink.lock:
                Sink.received += len(chunk)


class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        connection = self.request
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = connection.recv(65536)
            if not chunk:
                return
            data += chunk
        self.data = data
        target = data.split(b" ", 2)[1].decode("latin-1")
        path, _, query = target.partition("?")
        self.query = urllib.parse.parse_qs(query)
        self.raw_query = query
        try:
            getattr(self, "route_" + path.strip("/").replace("-", "_"), self.route_missing)(connection)
        except (BrokenPipeError, ConnectionResetError):
            pass

    @staticmethod
    def head(status, headers):
        # One request per connection: the client must not count on reusing it.
        if not any(name.lower() == "connection" for name, _ in headers):
            headers = headers + [("Connection", "close")]
        lines = [f"HTTP/1.1 {status}"] + [f"{name}: {value}" for name, value in headers] + ["", ""]
        return "\r\n".join(lines).encode("latin-1")

    def route_missing(self, connection):
        connection.sendall(self.head("404 Not Found", [("Content-Length", "0"), ("Connection", "close")]))

    def route_reset_before_headers(self, connection):
        reset(connection)

    def route_reset_after_headers(self, connection):
        connection.sendall(self.head("200 OK", [("Content-Length", "1000")]) + b"x" * 100)
        time.sleep(0.1)
        reset(connection)

    def route_short_body(self, connection):
        connection.sendall(self.head("200 OK", [("Content-Length", "1000"), ("Connection", "close")]) + b"x" * 100)
        connection.shutdown(socket.SHUT_WR)

    def route_malformed_status(self, connection):
        connection.sendall(b"HTXP/9.9 two hundred\r\nContent-Length: 2\r\n\r\nok")
        connection.shutdown(socket.SHUT_WR)

    def route_trickle(self, connection):
        interval = float(self.query.get("interval", ["1"])[0])
        count = int(self.query.get("count", ["60"])[0])
        connection.sendall(self.head("200 OK", [("Content-Length", str(count)), ("Connection", "close")]))
        for _ in range(count):
            connection.sendall(b"x")
            time.sleep(interval)

    def route_slow_head(self, connection):
        # The head a line at a time: the server never falls silent for longer than the interval.
        interval = float(self.query.get("interval", ["0.5"])[0])
        count = int(self.query.get("count", ["6"])[0])
        connection.sendall(b"HTTP/1.1 200 OK\r\n")
        for number in range(count):
            time.sleep(interval)
            connection.sendall(f"X-Line-{number}: {number}\r\n".encode("latin-1"))
        connection.sendall(b"Content-Length: 2\r\nConnection: close\r\n\r\nok")

    def route_huge(self, connection, megabytes=1 << 10):
        connection.sendall(self.head("200 OK", [("Content-Length", str(megabytes << 20)), ("Connection", "close")]))
        block = b"\0" * (1 << 20)
        for _ in range(megabytes):
            connection.sendall(block)

    def route_big(self, connection):
        self.route_huge(connection, megabytes=16)

    def route_huge_chunked(self, connection, megabytes=1 << 10):
        connection.sendall(self.head("200 OK", [("Transfer-Encoding", "chunked"), ("Connection", "close")]))
        chunk = b"100000\r\n" + b"\0" * (1 << 20) + b"\r\n"
        for _ in range(megabytes):
            connection.sendall(chunk)
        connection.sendall(b"0\r\n\r\n")

    def route_big_chunked(self, connection):
        self.route_huge_chunked(connection, megabytes=16)

    def route_bad_chunked(self, connection):
        connection.sendall(
            self.head("200 OK", [("Transfer-Encoding", "chunked"), ("Connection", "close")])
            + b"5\r\nhello\r\nzz\r\nnot a chunk\r\n0\r\n\r\n")
        connection.shutdown(socket.SHUT_WR)

    def route_redirect_loop(self, connection):
        connection.sendall(self.head("302 Found", [("Location", "/redirect-loop"), ("Content-Length", "0")]))

    def route_invalid_json(self, connection):
        body = b'{"id": 1, "name": '
        connection.sendall(
            self.head("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]) + body)

    def route_bad_gzip(self, connection):
        body = b"this is not gzip at all, not even close"
        connection.sendall(
            self.head("200 OK", [("Content-Encoding", "gzip"), ("Content-Length", str(len(body))),
                                 ("Connection", "close")]) + body)
        connection.shutdown(socket.SHUT_WR)

    def route_redirect(self, connection):
        status = self.query.get("status", ["302"])[0]
        location = self.query.get("to", ["/"])[0]
        # A body the client sends at once (it waits for no 100 Continue) is read first: closed with it unread,
        # the connection is reset under the client, which can fail its send ("Broken pipe") before it reads
        # the answer (seen in a ThreadSanitizer run).
        if (self.header(b"expect") or "").lower() != "100-continue":
            head, _, rest = self.data.partition(b"\r\n\r\n")
            try:
                for _ in BodyReader(connection, head, rest, 0).pieces():
                    pass
            except (EOFError, OSError, ValueError):
                pass
        connection.sendall(self.head(f"{status} Redirect", [("Location", location), ("Content-Length", "0")]))

    def route_many_headers(self, connection):
        count = int(self.query.get("count", ["100"])[0])
        value = "v" * int(self.query.get("size", ["1"])[0])
        lines = "".join(f"{base36(index)}: {value}\r\n" for index in range(count))
        connection.sendall(
            b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n" + lines.encode("latin-1")
            + b"\r\nok")
        connection.shutdown(socket.SHUT_WR)

    def route_zeros(self, connection):
        self.route_huge(connection, megabytes=int(self.query.get("mb", ["1"])[0]))

    def route_gzip_zeros(self, connection):
        megabytes = int(self.query.get("mb", ["1"])[0])
        connection.sendall(self.head("200 OK", [("Content-Encoding", "gzip"), ("Connection", "close")]))
        # After a full flush the compressor starts afresh, so every megabyte of zeros compresses to the same
        # bytes: the second one is sent for every megabyte after the first, without compressing it again.
        compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
        block = b"\0" * (1 << 20)
        first = compressor.compress(block) + compressor.flush(zlib.Z_FULL_FLUSH)
        connection.sendall(first)
        if megabytes > 1:
            repeated = compressor.compress(block) + compressor.flush(zlib.Z_FULL_FLUSH)
            for _ in range(megabytes - 2):
                connection.sendall(repeated)
            compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
            # The stream's end: an empty final block, then the CRC-32 and length of everything sent.
            crc = 0
            for _ in range(megabytes):
                crc = zlib.crc32(block, crc)
            connection.sendall(repeated + b"\x03\x00" + struct.pack("<II", crc, (megabytes << 20) & 0xFFFFFFFF))
        else:
            connection.sendall(compressor.flush())
        connection.shutdown(socket.SHUT_WR)

    def route_cookies(self, connection):
        lines = []
        for pair in self.raw_query.split("&"):
            key, _, value = pair.partition("=")
            if key.startswith("l"):
                lines.append((key, urllib.parse.unquote_to_bytes(value)))
        cookie = b""
        for line in self.data.split(b"\r\n\r\n", 1)[0].split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"cookie":
                cookie = value.strip(b" \t")
        redirect = self.query.get("redirect")
        status = b"302 Found\r\nLocation: " + redirect[0].encode("latin-1") if redirect else b"200 OK"
        head = b"HTTP/1.1 " + status + b"\r\nConnection: close\r\nContent-Type: application/octet-stream\r\n"
        head += b"".join(b"Set-Cookie: " + line + b"\r\n" for _, line in sorted(lines))
        head += b"Content-Length: " + str(len(cookie)).encode() + b"\r\n\r\n"
        connection.sendall(head + cookie)

    def route_echo_then_reset(self, connection):
        # Answers with the request's body and keeps the connection, as if for the next request; resets it once
        # that request has arrived, before a byte of answer: the client must send it again on a new connection,
        # body and all (libcurl rewinds the body through the backend's seek function).
        request = read_request(connection, self.data)
        if request is None:
            return
        body, rest = request
        connection.sendall(self.head("200 OK", [("Content-Length", str(len(body))), ("Connection", "keep-alive")])
                           + body)
        # The next request is read whole, body included, before the reset: reset while libcurl still sends
        # that body, the send fails (curl 55), which libcurl does not retry, where a failed read (curl 56) of a
        # kept connection it does. Which of the two came first was the machine's timing (a CI run under
        # AddressSanitizer got the send failure).
        if read_request(connection, rest) is not None:
            reset(connection)

    def header(self, name):
        for line in self.data.split(b"\r\n\r\n", 1)[0].split(b"\r\n")[1:]:
            key, _, value = line.partition(b":")
            if key.strip().lower() == name:
                return value.strip().decode("latin-1")
        return None

    def route_upload(self, connection):
        key = self.query.get("id", [""])[0]
        status = self.query.get("status", ["200"])[0]
        head, _, rest = self.data.partition(b"\r\n\r\n")
        expect = self.header(b"expect")
        if (expect or "").lower() == "100-continue":
            connection.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        reader = BodyReader(connection, head, rest, float(self.query.get("pause", ["0"])[0]))
        digest = hashlib.sha256()
        length = 0
        complete = False
        answer_after = int(self.query.get("after", ["-1"])[0])
        answered = False
        Uploads.begin(key)
        try:
            for piece in reader.pieces():
                digest.update(piece)
                length += len(piece)
                if not answered and 0 <= answer_after <= length:
                    answered = True
                    location = self.query.get("location", [""])[0]
                    connection.sendall(self.head(f"{status} Answered early",
                                                 [("Location", location), ("Content-Length", "0")]))
            complete = True
        except (EOFError, OSError, ValueError):
            pass
        record = {"length": length, "sha256": digest.hexdigest(), "chunked": reader.chunked,
                  "expect": expect, "complete": complete}
        Uploads.end(key, record)
        if complete and not answered:
            body = json.dumps(record).encode()
            connection.sendall(self.head(f"{status} Upload", [("Content-Type", "application/json"),
                                                               ("Content-Length", str(len(body)))]) + body)

    def route_refuse_upload(self, connection):
        key = self.query.get("id", [""])[0]
        status = self.query.get("status", ["413"])[0]
        Uploads.begin(key)
        received = len(self.data.partition(b"\r\n\r\n")[2])
        connection.sendall(self.head(f"{status} Refused", [("Content-Length", "0")]))
        connection.settimeout(0.2)
        deadline = time.monotonic() + 2
        try:
            while time.monotonic() < deadline:
                try:
                    chunk = connection.recv(65536)
                except socket.timeout:
                    continue
                if not chunk:
                    break
                received += len(chunk)
        except OSError:
            pass
        Uploads.end(key, {"length": received})

    def route_uploads(self, connection):
        body = json.dumps(Uploads.of(self.query.get("id", [""])[0])).encode()
        connection.sendall(self.head("200 OK", [("Content-Type", "application/json"),
                                                ("Content-Length", str(len(body)))]) + body)

    def route_sink_bytes(self, connection):
        with Sink.lock:
            body = str(Sink.received).encode()
        connection.sendall(self.head("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
                           + body)

    def route_sink_reset(self, connection):
        with Sink.lock:
            Sink.received = 0
        connection.sendall(self.head("204 No Content", []))


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


if __name__ == "__main__":
    sink = Server(("127.0.0.1", 0), Sink)
    threading.Thread(target=sink.serve_forever, daemon=True).start()
    with Server(("127.0.0.1", int(sys.argv[1])), Handler) as server:
        print("sink-port", sink.server_address[1], flush=True)
        print("ready", flush=True)
        server.serve_forever()
