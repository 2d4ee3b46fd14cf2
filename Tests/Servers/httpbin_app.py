"""httpbin, plus two things its own echo cannot show exactly.

- Every response carries X-Raw-Request-URI: the request target exactly as it arrived. httpbin's echo
  decodes percent-escapes (%2F becomes /), so tests of path and query encoding read this header.
- POST /echo-raw answers with the request body, byte for byte, and its Content-Type as the response's
  Content-Type: tests of multipart encoding parse what was really sent.
- GET /slow/<seconds> answers 200 with a small JSON body after that many seconds (at most 60): httpbin's
  /delay stops at 10, and a test that must act while a request is in flight needs a margin longer than a
  loaded CI machine's pauses.
"""
import json
import time

from httpbin import app as httpbin


def echo_raw(environ, start_response):
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(length) if length else environ["wsgi.input"].read()
    start_response("200 OK", [
        ("Content-Type", environ.get("CONTENT_TYPE", "application/octet-stream")),
        ("Content-Length", str(len(body))),
    ])
    return [body]


def slow(environ, start_response, seconds):
    time.sleep(min(seconds, 60))
    body = json.dumps({"slept": min(seconds, 60)}).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]


def app(environ, start_response):
    raw = environ.get("RAW_URI") or environ.get("REQUEST_URI") or ""

    def start(status, headers, exc_info=None):
        return start_response(status, list(headers) + [("X-Raw-Request-URI", raw)], exc_info)

    path = environ.get("PATH_INFO", "")
    if path == "/echo-raw":
        return echo_raw(environ, start)
    if path.startswith("/slow/"):
        try:
            seconds = float(path[len("/slow/"):])
        except ValueError:
            seconds = None
        if seconds is not None and seconds >= 0:
            return slow(environ, start, seconds)
    return httpbin(environ, start)
