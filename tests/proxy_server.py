"""proxy_server: a forward HTTP proxy of known truth for the proxy tests (stdlib only).

It forwards absolute-form requests (``GET http://host:port/path``) over one kept-alive
upstream connection per client connection, and opens CONNECT tunnels, resolving host names
through its own table only (``names``): a target named ``redline-origin.invalid`` (a name no
resolver knows, RFC 6761) can only have been reached through it. It counts what it saw:
connections, forwarded requests and their targets, tunnels, the Proxy-Authorization values,
refusals; with ``credentials`` it answers 407 to any request without them, with
``refuse_tunnels`` it answers CONNECT with that status.
"""

from __future__ import annotations

import base64
import http.client
import selectors
import socket
import threading
import urllib.parse
from dataclasses import dataclass, field

#: ORIGIN: the name the tests give their target, which only the proxy resolves.
ORIGIN = "redline-origin.invalid"


@dataclass
class Seen:
    """Seen: what the proxy saw, counted under its lock."""

    connections: int = 0
    forwarded: int = 0
    tunnels: int = 0
    refused: int = 0
    targets: set[str] = field(default_factory=set)
    authorizations: set[str] = field(default_factory=set)


class CountingProxy:
    """CountingProxy: a forward proxy on 127.0.0.1 (port 0), its ``url`` and ``seen``
    counts; a context manager that stops it and every connection it holds."""

    def __init__(
        self,
        names: dict[str, str] | None = None,
        credentials: str | None = None,
        refuse_tunnels: int | None = None,
    ) -> None:
        self.names = {ORIGIN: "127.0.0.1", **(names or {})}
        self.expected = (
            None
            if credentials is None
            else "Basic " + base64.b64encode(credentials.encode()).decode()
        )
        self.refuse_tunnels = refuse_tunnels
        self.seen = Seen()
        self.lock = threading.Lock()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(256)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.open: list[socket.socket] = []
        self.threads: list[threading.Thread] = []
        self.stopped = threading.Event()
        self.acceptor = threading.Thread(target=self._accept, daemon=True)

    def __enter__(self) -> CountingProxy:
        self.acceptor.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stopped.set()
        self.sock.close()
        with self.lock:
            held = list(self.open)
        for s in held:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()
        self.acceptor.join(5)
        for t in self.threads:
            t.join(5)

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.seen.connections += 1
                self.open.append(conn)
            t = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            self.threads.append(t)
            t.start()

    def _hold(self, s: socket.socket) -> socket.socket:
        with self.lock:
            self.open.append(s)
        return s

    def _serve(self, conn: socket.socket) -> None:
        reader = conn.makefile("rb")
        upstream: http.client.HTTPConnection | None = None
        try:
            while True:
                line = reader.readline(65537)
                if not line.strip():
                    return
                method, target, _ = line.decode("latin-1").split(" ", 2)
                headers = []
                while (h := reader.readline(65537)) not in (b"\r\n", b"\n", b""):
                    name, _, value = h.decode("latin-1").partition(":")
                    headers.append((name.strip(), value.strip()))
                auth = next((v for k, v in headers if k.lower() == "proxy-authorization"), None)
                with self.lock:
                    if auth is not None:
                        self.seen.authorizations.add(auth)
                if self.expected is not None and auth != self.expected:
                    self._refuse(conn, 407, "Proxy Authentication Required")
                    continue
                if method == "CONNECT":
                    self._tunnel(conn, target)
                    return
                upstream = self._forward(conn, reader, method, target, headers, upstream)
        except (OSError, ValueError):
            return  # the client went, or the proxy stopped
        finally:
            if upstream is not None:
                upstream.close()
            conn.close()

    def _refuse(self, conn: socket.socket, status: int, reason: str) -> None:
        with self.lock:
            self.seen.refused += 1
        conn.sendall(
            f'HTTP/1.1 {status} {reason}\r\nProxy-Authenticate: Basic realm="t"\r\n'
            "Content-Length: 0\r\n\r\n".encode()
        )

    def _tunnel(self, conn: socket.socket, target: str) -> None:
        host, _, port = target.rpartition(":")
        with self.lock:
            self.seen.tunnels += 1
        if self.refuse_tunnels is not None:
            self._refuse(conn, self.refuse_tunnels, "Refused")
            return
        up = self._hold(socket.create_connection((self.names[host.strip("[]")], int(port))))
        conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        sel = selectors.DefaultSelector()
        sel.register(conn, selectors.EVENT_READ, up)
        sel.register(up, selectors.EVENT_READ, conn)
        try:
            while not self.stopped.is_set():
                for key, _ in sel.select(0.5):
                    data = key.fileobj.recv(65536)  # type: ignore[union-attr]
                    if not data:
                        return
                    key.data.sendall(data)
        finally:
            sel.close()
            up.close()

    def _forward(
        self,
        conn: socket.socket,
        reader: object,
        method: str,
        target: str,
        headers: list[tuple[str, str]],
        upstream: http.client.HTTPConnection | None,
    ) -> http.client.HTTPConnection:
        url = urllib.parse.urlsplit(target)
        with self.lock:
            self.seen.forwarded += 1
            self.seen.targets.add(target)
        length = int(next((v for k, v in headers if k.lower() == "content-length"), "0"))
        body = reader.read(length) if length else None  # type: ignore[attr-defined]
        if upstream is None:
            upstream = http.client.HTTPConnection(self.names[url.hostname or ""], url.port or 80)
        path = url.path + (f"?{url.query}" if url.query else "")
        kept = {
            k: v for k, v in headers if k.lower() not in ("proxy-authorization", "proxy-connection")
        }
        upstream.request(method, path or "/", body, kept)
        resp = upstream.getresponse()
        data = resp.read()
        head = [f"HTTP/1.1 {resp.status} {resp.reason}"]
        for k, v in resp.getheaders():
            if k.lower() not in ("transfer-encoding", "content-length", "connection"):
                head.append(f"{k}: {v}")
        head.append(f"Content-Length: {len(data)}")
        conn.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + data)
        return upstream
