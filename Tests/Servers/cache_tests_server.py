"""The origin server of the http-tests/cache-tests suite (https://github.com/http-tests/cache-tests), ported to
Python from the semantics of its Node.js server (test-engine/server), for the cache-suite test
(Tests/SwiftyServiceTests/Cache/CacheTestsSuite.swift), which plays the suite's tests through a realm's
HTTPCache.

Run: python3 cache_tests_server.py PORT   (prints "ready" once it listens)

  PUT /config/<uuid>     the test's requests, as JSON (201; 409 if the uuid has one already)
  *   /test/<uuid>[/...] answers request N of the test (the `Req-Num` header, else the count so far) as its
                         configuration says: status, headers (dates relative to now, locations relative to the
                         URL), body (the uuid unless the configuration gives one), a pause first, interim
                         responses, or a dropped connection; a request the configuration expects to be
                         conditional is answered 304 only if its validator matches the previous response's,
                         else 999
  GET /state/<uuid>      what the server saw of each request, as JSON (404 before the first)

Like Node's HTTP server, it adds `Date` when the configuration sets none, keeps connections alive for 5 s,
sends no body (and no Content-Length) for HEAD, 204 and 304, joins repeated request fields with ", ", and
writes a body after a configured `Transfer-Encoding` that is not chunked as it is, closing the connection to
end it.
"""
import email.utils
import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

NO_BODY_STATUS = {204, 304}
DATE_HEADERS = {"date", "expires", "last-modified", "if-modified-since", "if-unmodified-since"}
LOCATION_HEADERS = {"location", "content-location"}
# Node keeps the first of these when a request repeats them; other fields are joined with ", ".
FIRST_WINS = {
    "age", "authorization", "content-length", "content-type", "etag", "expires", "from", "host",
    "if-modified-since", "if-unmodified-since", "last-modified", "location", "max-forwards",
    "proxy-authorization", "referer", "retry-after", "server", "user-agent",
}
RFC850_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

configs = {}
stash = {}
lock = threading.Lock()


def http_date(now_ms, delta_seconds, format=None):
    """The suite's httpDate: `now` (milliseconds) plus `delta` seconds, IMF-fixdate or RFC 850."""
    instant = (now_ms + delta_seconds * 1000) / 1000
    if format == "rfc850":
        t = time.gmtime(instant)
        return "%s, %02d-%s-%s %02d:%02d:%02d GMT" % (
            RFC850_DAYS[t.tm_wday], t.tm_mday, MONTHS[t.tm_mon - 1], str(t.tm_year)[2:], t.tm_hour, t.tm_min,
            t.tm_sec)
    return email.utils.formatdate(instant, usegmt=True)


def fixup_header(header, response_headers, config):
    """The suite's fixupHeader: an integer date is seconds from the server's now; a magic location is made
    relative to the URL the server was asked for. Changes `header` in place, as the suite does (the stored
    configuration then holds the value that was sent)."""
    name = header[0].lower()
    server_now = response_headers.get("server-now")
    if name in DATE_HEADERS and isinstance(header[1], int) and not isinstance(header[1], bool):
        format = "rfc850" if name in config.get("rfc850date", []) else None
        header[1] = http_date(int(server_now), header[1], format)
    base_url = response_headers.get("server-base-url")
    if name in LOCATION_HEADERS and config.get("magic_locations"):
        header[1] = "%s/%s" % (base_url, header[1]) if header[1] else "%s" % base_url
    return header


def get_header(headers, name):
    result = None
    for header in headers or []:
        if header[0].lower() == name.lower():
            result = header[1]
    return result


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Node's keep-alive timeout.
    timeout = 5

    def log_message(self, *args):
        pass

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def __getattr__(self, name):
        # Every method, M-SEARCH included, goes to one place.
        if name.startswith("do_"):
            return self.dispatch
        raise AttributeError(name)

    def request_fields(self):
        fields = {}
        for name, value in self.headers.items():
            name = name.lower()
            if name not in fields:
                fields[name] = value
            elif name == "cookie":
                fields[name] += "; " + value
            elif name not in FIRST_WINS:
                fields[name] += ", " + value
        return fields

    def read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def plain(self, status, message):
        body = (message + "\n").encode()
        self.send_response_only(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Date", email.utils.formatdate(usegmt=True))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def dispatch(self):
        body = self.read_body()
        path = self.path.split("?", 1)[0]
        segments = path.split("/")[1:]
        kind = segments[0] if segments else ""
        uuid = segments[1] if len(segments) > 1 else ""
        try:
            if kind == "config":
                self.handle_config(uuid, body)
            elif kind == "test":
                self.handle_test(uuid)
            elif kind == "state":
                self.handle_state(uuid)
            else:
                self.plain(404, "%s Not Found" % path)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def handle_config(self, uuid, body):
        if self.command != "PUT":
            return self.plain(405, "%s request to config for %s" % (self.command, uuid))
        with lock:
            if uuid in configs:
                return self.plain(409, "Config already exists for %s" % uuid)
            configs[uuid] = json.loads(body)
        self.send_response_only(201, "Created")
        self.send_header("Date", email.utils.formatdate(usegmt=True))
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"OK")

    def handle_state(self, uuid):
        with lock:
            state = stash.get(uuid)
            text = None if state is None else json.dumps(state)
        if text is None:
            return self.plain(404, "State not found for %s" % uuid)
        body = text.encode()
        self.send_response_only(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Date", email.utils.formatdate(usegmt=True))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def handle_test(self, uuid):
        with lock:
            requests = configs.get(uuid)
            state_count = len(stash.get(uuid, []))
        if not uuid:
            return self.plain(404, "Config Not Found for %s" % uuid)
        if requests is None:
            return self.plain(409, "Requests not found for %s" % uuid)
        try:
            client_number = int(self.headers.get("Req-Num"))
        except (TypeError, ValueError):
            client_number = None
        number = client_number or state_count + 1
        if number - 1 >= len(requests) or number < 1:
            return self.plain(
                409, "%s config not found for request %d (anticipating %d)"
                % (requests[0].get("id"), state_count + 1, len(requests)))
        config = requests[number - 1]
        if "response_pause" in config:
            time.sleep(config["response_pause"])
        self.answer(uuid, requests, config, client_number)

    def answer(self, uuid, requests, config, client_number):
        with lock:
            state = stash.get(uuid, [])
            server_number = len(state) + 1
        number = client_number or server_number
        previous = requests[number - 2] if number >= 2 else {}
        now = int(time.time() * 1000)
        fields = self.request_fields()

        for status, *rest in config.get("interim_responses", []):
            headers = rest[0] if rest else []
            if status == 102:
                self.wfile.write(b"HTTP/1.1 102 Processing\r\n\r\n")
            elif status == 103:
                lines = "".join("%s: %s\r\n" % (name, value) for name, value in headers)
                self.wfile.write(("HTTP/1.1 103 Early Hints\r\n%s\r\n" % lines).encode("latin-1"))

        status = config.get("response_status", [200, "OK"])
        if config.get("expected_type", "").endswith("validated"):
            previous_lm = get_header(previous.get("response_headers"), "Last-Modified")
            if previous_lm and fields.get("if-modified-since") == previous_lm:
                status = [304, "Not Modified"]
            previous_etag = get_header(previous.get("response_headers"), "ETag")
            if previous_etag and fields.get("if-none-match") == previous_etag:
                status = [304, "Not Modified"]
            if status[0] != 304:
                status = [999, "304 Not Generated"]

        # Names in the order first set, values a string or (repeated) a list, as Node's setHeader keeps them.
        headers = {}
        names = {}

        def set_header(name, value):
            names[name.lower()] = names.get(name.lower(), name)
            headers[name.lower()] = value

        set_header("Server-Base-Url", self.path)
        set_header("Server-Request-Count", str(server_number))
        set_header("Client-Request-Count", str(client_number) if client_number is not None else "NaN")
        set_header("Server-Now", str(now))
        saved = {}
        for header in config.get("response_headers", []):
            header = fixup_header(header, headers, config)
            name, value = header[0], header[1]
            value = value if isinstance(value, list) else str(value)
            current = headers.get(name.lower())
            if current is None:
                set_header(name, value)
            elif isinstance(current, list):
                headers[name.lower()] = current + (value if isinstance(value, list) else [value])
            else:
                headers[name.lower()] = [current] + (value if isinstance(value, list) else [value])
            if len(header) < 3 or header[2] is True:
                saved[name] = headers[name.lower()]
        if "content-type" not in headers:
            set_header("Content-Type", "text/plain")

        with lock:
            state = stash.setdefault(uuid, [])
            state.append({
                "request_num": client_number,
                "request_method": self.command,
                "request_headers": fields,
                "response_headers": [[name, value] for name, value in saved.items()],
            })
            set_header("Request-Numbers", " ".join(
                "NaN" if item["request_num"] is None else str(item["request_num"]) for item in state))

        if config.get("disconnect"):
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return

        has_body = status[0] not in NO_BODY_STATUS and self.command != "HEAD"
        content = config.get("response_body") or uuid
        body = content.encode() if has_body else b""
        self.send_response_only(status[0], status[1])
        for key, value in headers.items():
            for item in value if isinstance(value, list) else [value]:
                self.send_header(names[key], item)
        if "date" not in headers:
            self.send_header("Date", email.utils.formatdate(usegmt=True))
        # A configured Transfer-Encoding is never chunked here: the body then runs to the end of the connection.
        ends_with_connection = "transfer-encoding" in headers
        if "connection" not in headers:
            self.send_header("Connection", "close" if ends_with_connection else "keep-alive")
            if not ends_with_connection and "keep-alive" not in headers:
                self.send_header("Keep-Alive", "timeout=5")
        if ends_with_connection:
            self.close_connection = True
        elif "content-length" not in headers and has_body:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body:
            self.wfile.write(body)


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 512


def main():
    server = Server(("127.0.0.1", int(sys.argv[1])), Handler)
    print("ready", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
