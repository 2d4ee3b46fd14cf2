"""A server for the HTTP cache tests: every answer's status, headers, body and timing come from the URL.

Run: python3 cache_server.py PORT   (prints "ready" once it listens)

  /script/<id>?h=Name:%20value&...   (h[] works too) answers with those headers. In a value, @now is the
        current time as an IMF-fixdate, @now+N / @now-N that many seconds from it, and @self the path and
        query the request was sent to. Other parameters:
        status=N      the status of a full answer (default 200)
        body=TEXT     the body (default "<id> #<n>", n counting this id's requests from 1)
        h304=...      headers of a 304 (default: the ETag, Cache-Control, Expires and Date of h); a 304
                      answers when If-None-Match names the ETag of h, or If-Modified-Since is at or after
                      its Last-Modified; never when notmodified=0
        then=STATUS   from the second request of this id on, answer STATUS (a 5xx) with no cache headers;
                      then=close closes the connection without an answer instead
        first=STATUS  the first request of this id answers STATUS with no cache headers (a 503 to retry)
        delay=S       from the second request of this id on, wait S seconds before answering
        chunks=N      the body in N pieces, chunked (no Content-Length), a flush after each
        pace=S        with chunks, S seconds between pieces
        cut=1         with chunks, the connection closes after half the pieces, the body unfinished
  /unknown-encoding  200, `Content-Encoding: x-unknown`, a body that is not encoded at all
  /unknown-transfer-coding  200, `Transfer-Encoding: x-unknown`, a body not encoded at all that runs to the
                      end of the connection
  /redirect-with-body  302 to /script/target with a body of its own, "the 302's own body"
  /count/<id>         {"count": n}: how many requests /script/<id> has had

Connections are kept alive (HTTP/1.1, Content-Length on every answer), as a cache's origin would.
"""
import email.utils
import json
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

counts = {}
lock = threading.Lock()


def expand(value, path=""):
    """@now, @now+N and @now-N in a header value, as IMF-fixdates; @self as `path`."""
    out = []
    rest = value.replace("@self", path)
    while "@now" in rest:
        before, rest = rest.split("@now", 1)
        out.append(before)
        offset = 0
        if rest[:1] in ("+", "-"):
            digits = ""
            for ch in rest[1:]:
                if not ch.isdigit():
                    break
                digits += ch
            if digits:
                offset = int(digits) * (1 if rest[0] == "+" else -1)
                rest = rest[1 + len(digits):]
        out.append(email.utils.formatdate(time.time() + offset, usegmt=True))
    out.append(rest)
    return "".join(out)


def header_pairs(values, path=""):
    pairs = []
    for item in values:
        name, _, value = item.partition(":")
        pairs.append((name.strip(), expand(value.strip(), path)))
    return pairs


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, headers, body=b""):
        # The Date given, or now: never two, as send_response would make it.
        self.send_response_only(status)
        if not any(name.lower() == "date" for name, _ in headers):
            self.send_header("Date", email.utils.formatdate(usegmt=True))
        for name, value in headers:
            self.send_header(name, value)
        if status != 304 and not any(name.lower() == "content-length" for name, _ in headers):
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD" and status not in (204, 304):
            self.wfile.write(body)
        self.wfile.flush()

    def do_HEAD(self):
        self.do_GET()

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        self.do_GET()

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
        parts = url.path.strip("/").split("/")
        if parts[0] == "script" and len(parts) == 2:
            self.script(parts[1], query)
        elif parts[0] == "count" and len(parts) == 2:
            with lock:
                count = counts.get(parts[1], 0)
            self.answer(200, [("Content-Type", "application/json")], json.dumps({"count": count}).encode())
        elif parts[0] == "unknown-encoding":
            self.answer(200, [("Content-Type", "text/plain"), ("Content-Encoding", "x-unknown")],
                        b"plain bytes under an unknown coding")
        elif parts[0] == "unknown-transfer-coding":
            self.send_response_only(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Transfer-Encoding", "x-unknown")
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(b"plain bytes under an unknown transfer coding")
            self.close_connection = True
        elif parts[0] == "redirect-with-body":
            self.answer(302, [("Location", "/script/target"), ("Content-Type", "text/plain")],
                        b"the 302's own body")
        else:
            self.answer(404, [], b"no such path")

    def script(self, name, query):
        with lock:
            counts[name] = counts.get(name, 0) + 1
            count = counts[name]
        get = lambda key, default=None: (query.get(key) or [default])[0]
        if count > 1 and get("delay"):
            time.sleep(float(get("delay")))
        then = get("then")
        if count > 1 and then == "close":
            self.close_connection = True
            self.connection.shutdown(2)
            return
        if count > 1 and then:
            self.answer(int(then), [("Content-Type", "text/plain")], b"failing")
            return
        if count == 1 and get("first"):
            self.answer(int(get("first")), [("Content-Type", "text/plain")], b"not yet")
            return
        headers = header_pairs(query.get("h", []) + query.get("h[]", []), self.path)
        found = {name.lower(): value for name, value in headers}
        if get("notmodified") != "0" and self.not_modified(found):
            given = query.get("h304", []) + query.get("h304[]", [])
            kept = ("etag", "cache-control", "expires", "date")
            self.answer(304, header_pairs(given) if given else [(n, v) for n, v in headers if n.lower() in kept])
            return
        body = get("body", "%s #%d" % (name, count)).encode()
        if get("chunks"):
            self.chunked(int(get("status", "200")), headers, body, int(get("chunks")), float(get("pace", "0")),
                         get("cut") == "1")
            return
        self.answer(int(get("status", "200")), headers, body)

    def chunked(self, status, headers, body, pieces, pace, cut):
        """The body in `pieces` chunks, `pace` seconds apart; with `cut`, the connection closes half-way."""
        self.send_response_only(status)
        if not any(name.lower() == "date" for name, _ in headers):
            self.send_header("Date", email.utils.formatdate(usegmt=True))
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        size = max(1, -(-len(body) // pieces))
        parts = [body[i:i + size] for i in range(0, len(body), size)]
        try:
            for index, part in enumerate(parts):
                if cut and index >= len(parts) // 2:
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                self.wfile.flush()
                if pace:
                    time.sleep(pace)
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def not_modified(self, found):
        none_match = self.headers.get("If-None-Match")
        if none_match is not None:
            etag = found.get("etag")
            return etag is not None and etag in [tag.strip() for tag in none_match.split(",")]
        since = self.headers.get("If-Modified-Since")
        modified = found.get("last-modified")
        if since and modified:
            try:
                return email.utils.parsedate_to_datetime(modified) <= email.utils.parsedate_to_datetime(since)
            except (TypeError, ValueError):
                return False
        return False


def main():
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
    server.daemon_threads = True
    print("ready", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
