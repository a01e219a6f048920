"""server: a small HTTP server for the live endpoints, on its own daemon threads (stdlib
only: a page, a server-sent event stream, a stop button and a scrape need no framework).

An :class:`App` answers each request with a :class:`Reply`, or with a :class:`Watcher` whose
events are streamed until the hub ends it or the browser goes away.
"""

from __future__ import annotations

import queue
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from redline.errors import RedlineError
from redline.live.address import Address
from redline.live.hub import Watcher

#: KEEPALIVE_S: an idle stream gets a comment this often, so a closed browser is noticed.
KEEPALIVE_S = 10.0
#: MAX_BODY: the most of a request body that is read (a form is small).
MAX_BODY = 1 << 16


@dataclass
class Request:
    """Request is what an app needs of one request: method, path, query, headers and body
    (a POST's, at most :data:`MAX_BODY` bytes)."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes = b""


@dataclass
class Reply:
    """Reply is a whole response."""

    status: int = 200
    body: bytes = b""
    content_type: str = "text/plain; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)


#: App: answers a request with a reply, or a watcher to stream (and a callback for when the
#: stream ends).
App = Callable[[Request], "Reply | tuple[Watcher, Callable[[], None]]"]


class Server:
    """Server listens on one address and serves an app until :meth:`close`."""

    def __init__(self, address: Address, app: App, flag: str):
        self.address = address
        handler = _handler(app)
        family = socket.AF_INET6 if address.ipv6 else socket.AF_INET

        class _HTTPServer(ThreadingHTTPServer):
            address_family = family
            daemon_threads = True

        try:
            self._server = _HTTPServer((address.host, address.port), handler)
        except OSError as e:
            raise RedlineError(
                f"{flag} {address.host}:{address.port}: cannot listen: {e}"
            ) from None
        self.port = int(self._server.server_address[1])
        # Blocks in select until a request comes (close() wakes it): a server polling ten
        # times a second cost the run ~0.7 ms of CPU a second, a third of what the live
        # endpoints cost at 5,000 req/s (bench/live.py).
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": None}, daemon=True
        )
        self._thread.name = f"redline-live-{self.port}"
        self._thread.start()

    @property
    def url(self) -> str:
        """url is the server's base URL with the port it bound."""
        return self.address.url(self.port)

    def close(self) -> None:
        """close stops accepting, ends the loop and releases the port. The loop waits in
        select without a timeout, so it is woken by a connection of its own once the
        shutdown is asked for (again each 0.1 s until it ends, at most 5 s)."""
        stopper = threading.Thread(target=self._server.shutdown, daemon=True)
        stopper.start()
        for _ in range(50):
            self._wake()
            stopper.join(0.1)
            if not stopper.is_alive():
                break
        self._server.server_close()
        self._thread.join(timeout=5.0)

    def _wake(self) -> None:
        """_wake connects to the server (on loopback when it listens on every address)."""
        host = self.address.host
        if host in ("0.0.0.0", ""):
            host = "127.0.0.1"
        elif host == "::":
            host = "::1"
        try:
            socket.create_connection((host, self.port), timeout=1.0).close()
        except OSError:
            pass  # not listening any more: the loop has ended


def _handler(app: App) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "redline-live"

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            """Quiet: the run's own output is what the terminal shows."""

        def do_GET(self) -> None:  # noqa: N802
            self._serve("GET")

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(min(length, MAX_BODY)) if length > 0 else b""
            self._serve("POST", body)

        def _serve(self, method: str, body: bytes = b"") -> None:
            parts = urlsplit(self.path)
            query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
            headers = {k.lower(): v for k, v in self.headers.items()}
            answer = app(Request(method, parts.path, query, headers, body))
            if isinstance(answer, Reply):
                self.send_response(answer.status)
                self.send_header("Content-Type", answer.content_type)
                self.send_header("Content-Length", str(len(answer.body)))
                self.send_header("Cache-Control", "no-store")
                for k, v in answer.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(answer.body)
                return
            watcher, done = answer
            try:
                self._stream(watcher)
            finally:
                done()

        def _stream(self, watcher: Watcher) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            try:
                self.wfile.write(b"retry: 1000\n\n")
                self.wfile.flush()
                while True:
                    try:
                        event = watcher.events.get(timeout=KEEPALIVE_S)
                    except queue.Empty:
                        if watcher.dropped:
                            return  # fell behind: the browser reconnects and catches up
                        event = b": keepalive\n\n"
                    if event is None:
                        return
                    self.wfile.write(event)
                    self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                return

    return Handler
