"""httpbin, plus one response header: X-Raw-Request-URI, the request target exactly as it arrived.

httpbin's own echo decodes percent-escapes (%2F becomes /), so tests that check what was really put on
the wire (path-segment encoding, query escaping) read this header instead.
"""
from httpbin import app as httpbin


def app(environ, start_response):
    raw = environ.get("RAW_URI") or environ.get("REQUEST_URI") or ""

    def start(status, headers, exc_info=None):
        return start_response(status, list(headers) + [("X-Raw-Request-URI", raw)], exc_info)

    return httpbin(environ, start)
