"""TLS listeners for the certificate tests, one loopback port each, every one answering any request with a
small 200 ("ok") on a connection kept open for the next request.

Run: python3 tls_server.py DIR [LOG]   (DIR as made by scripts/tls-fixtures)

With LOG, every event is appended to that file as one line, so that tests can tell what reached the server
(a request refused during the handshake must not appear) and over which connection (reuse):

  NAME CONNECTION accepted          a TCP connection, before its handshake
  NAME CONNECTION handshake         the handshake succeeded
  NAME CONNECTION request PATH      an HTTP request head arrived (PATH as sent)
  NAME CONNECTION refused           the handshake failed (the server sent its alert)

CONNECTION numbers the listener's connections from 1.

It prints one line `NAME PORT` per listener, then "ready":

  valid                   the CA-signed leaf for 127.0.0.1/localhost; unknown issuer to anyone who does
                          not trust the test CA
  expired                 a CA-signed leaf that expired in 2020
  wrong-host              a CA-signed leaf for wrong-host.invalid only
  self-signed             a leaf signed by itself
  client-cert-required    the valid leaf, and a client certificate signed by the CA is required
  tls12-only              the valid leaf, TLS 1.2 at most
  client-cert-abrupt      as client-cert-required, but a refused connection is closed at once after the
                          alert, unread bytes and all (a reset may overtake the alert), as many servers do;
                          used by one serialized suite alone, which counts its handshakes in the log
  client-cert-abrupt-tls12
                          the same, TLS 1.2 at most
"""
import os
import socket
import socketserver
import ssl
import sys
import threading

ANSWER = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok"
LOG = None
LOG_LOCK = threading.Lock()
COUNTERS = {}


def log(name, connection, event):
    if LOG is None:
        return
    with LOG_LOCK:
        LOG.write(f"{name} {connection} {event}\n")
        LOG.flush()


def next_connection(name):
    with LOG_LOCK:
        COUNTERS[name] = COUNTERS.get(name, 0) + 1
        return COUNTERS[name]


def context(directory, leaf, require_client=False, tls12_only=False):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(os.path.join(directory, leaf + ".pem"), os.path.join(directory, leaf + ".key"))
    if require_client:
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_verify_locations(os.path.join(directory, "ca.pem"))
    if tls12_only:
        ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    # HTTP/1.1 only, so libcurl never tries HTTP/2 here.
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx


def handler_for(name, ctx, abrupt=False):
    class Handler(socketserver.BaseRequestHandler):
        def handle(self):
            connection = next_connection(name)
            log(name, connection, "accepted")
            # The handshake happens here, on the connection's own thread: a client that never finishes it
            # cannot hold up the other connections.
            self.request.settimeout(10)
            try:
                with ctx.wrap_socket(self.request, server_side=True, do_handshake_on_connect=False) as tls:
                    try:
                        tls.do_handshake()
                    except ssl.SSLError:
                        log(name, connection, "refused")
                        if abrupt:
                            return
                        # Under TLS 1.3 the client sends its request before the server's verdict on its
                        # certificate arrives: closing on unread bytes would send a reset, which can reach the
                        # client before the alert and read as a lost connection. Half-close after the alert
                        # and drain instead, as nginx's lingering close does.
                        tls.shutdown(socket.SHUT_WR)
                        while tls.recv(65536):
                            pass
                        return
                    log(name, connection, "handshake")
                    # Idle keep-alive connections stay 75 s, as httpbin's do: under ThreadSanitizer on 2 busy cores a
                    # test's second request came more than 10 s after its first, found its connection closed and
                    # made a new one, failing a test that checks reuse.
                    tls.settimeout(75)
                    data = b""
                    while True:
                        while b"\r\n\r\n" not in data:
                            chunk = tls.recv(65536)
                            if not chunk:
                                return
                            data += chunk
                        head, _, data = data.partition(b"\r\n\r\n")
                        request_line = head.split(b"\r\n", 1)[0].decode("latin-1")
                        parts = request_line.split(" ")
                        log(name, connection, "request " + (parts[1] if len(parts) > 1 else "?"))
                        tls.sendall(ANSWER)
            except (ssl.SSLError, OSError):
                pass  # the failed handshakes are the point

    return Handler


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


def main():
    global LOG
    directory = sys.argv[1]
    if len(sys.argv) > 2:
        LOG = open(sys.argv[2], "a", encoding="utf-8")
    abrupt = {"client-cert-abrupt", "client-cert-abrupt-tls12"}
    listeners = [
        ("valid", context(directory, "valid")),
        ("expired", context(directory, "expired")),
        ("wrong-host", context(directory, "wrong-host")),
        ("self-signed", context(directory, "self-signed")),
        ("client-cert-required", context(directory, "valid", require_client=True)),
        ("tls12-only", context(directory, "valid", tls12_only=True)),
        ("client-cert-abrupt", context(directory, "valid", require_client=True)),
        ("client-cert-abrupt-tls12", context(directory, "valid", require_client=True, tls12_only=True)),
    ]
    servers = []
    for name, ctx in listeners:
        server = Server(("127.0.0.1", 0), handler_for(name, ctx, abrupt=name in abrupt))
        servers.append(server)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        print(name, server.server_address[1], flush=True)
    print("ready", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
