"""TLS listeners for the certificate tests, one loopback port each, every one answering any request with a
small 200 ("ok").

Run: python3 tls_server.py DIR   (DIR as made by scripts/tls-fixtures)

It prints one line `NAME PORT` per listener, then "ready":

  valid                   the CA-signed leaf for 127.0.0.1/localhost; unknown issuer to anyone who does
                          not trust the test CA
  expired                 a CA-signed leaf that expired in 2020
  wrong-host              a CA-signed leaf for wrong-host.invalid only
  self-signed             a leaf signed by itself
  client-cert-required    the valid leaf, and a client certificate signed by the CA is required
  tls12-only              the valid leaf, TLS 1.2 at most
"""
import os
import socket
import socketserver
import ssl
import sys
import threading

ANSWER = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"


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


def handler_for(ctx):
    class Handler(socketserver.BaseRequestHandler):
        def handle(self):
            # The handshake happens here, on the connection's own thread: a client that never finishes it
            # cannot hold up the other connections.
            self.request.settimeout(10)
            try:
                with ctx.wrap_socket(self.request, server_side=True) as tls:
                    data = b""
                    while b"\r\n\r\n" not in data:
                        chunk = tls.recv(65536)
                        if not chunk:
                            return
                        data += chunk
                    tls.sendall(ANSWER)
            except (ssl.SSLError, OSError):
                pass  # the failed handshakes are the point

    return Handler


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


def main():
    directory = sys.argv[1]
    listeners = [
        ("valid", context(directory, "valid")),
        ("expired", context(directory, "expired")),
        ("wrong-host", context(directory, "wrong-host")),
        ("self-signed", context(directory, "self-signed")),
        ("client-cert-required", context(directory, "valid", require_client=True)),
        ("tls12-only", context(directory, "valid", tls12_only=True)),
    ]
    servers = []
    for name, ctx in listeners:
        server = Server(("127.0.0.1", 0), handler_for(ctx))
        servers.append(server)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        print(name, server.server_address[1], flush=True)
    print("ready", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
