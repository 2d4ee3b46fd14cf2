"""httpbin, plus two things its own echo cannot show exactly.

- Every response carries X-Raw-Request-URI: the request target exactly as it arrived. httpbin's echo
  decodes percent-escapes (%2F becomes /), so tests of path and query encoding read this header.
- POST /echo-raw answers with the request body, byte for byte, and its Content-Type as the response's
  Content-Type: tests of multipart encoding parse what was really sent.
"""
from httpbin import app as httpbin


def echo_raw(environ, start_response):
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(length) if length else environ["wsgi.input"].read()
    start_response("200 OK", [
        ("Content-Type", environ.get("CONTENT_TYPE", "application/octet-stream")),
        ("Content-Length", str(len(body))),
    ])
    return [body]


def app(environ, start_response):
    raw = environ.get("RAW_URI") or environ.get("REQUEST_URI") or ""

    def start(status, headers, exc_info=None):
        return start_response(status, list(headers) + [("X-Raw-Request-URI", raw)], exc_info)

    if environ.get("PATH_INFO") == "/echo-raw":
        return echo_raw(environ, start)
    return httpbin(environ, start)
