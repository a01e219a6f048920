"""origin: a local origin HTTP server for http-fetch tests, with a record of what it saw.

It runs aiohttp.web on its own event loop in a background thread, so sync tests, async tests
on any loop, and a service under test in a subprocess can all use it. It listens on 127.0.0.1
port 0, and also (when the box allows) on 127.0.0.2 and [::1], each on its own port 0, so that
SSRF tests can show that a request to those addresses *would* have arrived had the guard let
it through.

Routes (counted per path in hits(), even when the handler never answers):
  /content?type=T&body=B        200 with Content-Type T and body B (utf-8)
  /blob/{name}                  bytes and Content-Type registered with set_blob()
  /slow?ms=N                    answers after N ms
  /hang                         never answers
  /reset                        aborts the connection with a TCP RST
  /big?bytes=N[&chunked=1]      N bytes ("x"), streamed; chunked=1 omits Content-Length
  /redirect?to=URL[&status=S]   redirect (default 302) to URL
  /chain?n=K[&ms=M]             K relative redirects (each hop waits M ms), then "chain end"
  /status/{code}                that status, small text body
  /hedge?key=K&first_ms=A&then_ms=B  the first request per key waits A ms, later ones B ms
"""

from __future__ import annotations

import asyncio
import collections
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from aiohttp import web

_CHUNK = 64 * 1024


class Origin:
    """Origin is the test origin server; start() it (or use it as a context manager)."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="origin", daemon=True)
        self._lock = threading.Lock()
        self._hits: collections.Counter[str] = collections.Counter()
        self._cancelled: collections.Counter[str] = collections.Counter()
        self._hedge_seen: collections.Counter[str] = collections.Counter()
        self._blobs: dict[str, tuple[bytes, str]] = {}
        self._in_flight = 0
        self._peak_in_flight = 0
        self._runner: web.AppRunner | None = None
        self.ports: dict[str, int] = {}

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> Origin:
        """start launches the server thread and binds the listening sockets."""
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=10)
        return self

    def stop(self) -> None:
        """stop closes every connection and the server thread."""
        if self._runner is not None:
            fut = asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop)
            fut.result(timeout=10)
            self._runner = None
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    def __enter__(self) -> Origin:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def _start(self) -> None:
        app = web.Application(middlewares=[self._count])
        app.router.add_get("/content", self._content)
        app.router.add_get("/blob/{name}", self._blob)
        app.router.add_get("/slow", self._slow)
        app.router.add_get("/hang", self._hang)
        app.router.add_get("/reset", self._reset)
        app.router.add_get("/big", self._big)
        app.router.add_get("/redirect", self._redirect)
        app.router.add_get("/chain", self._chain)
        app.router.add_get("/status/{code}", self._status)
        app.router.add_get("/hedge", self._hedge)
        # handler_cancellation: a handler is cancelled when its client goes away, which is
        # how tests observe that a fetcher closed a connection (hedge loser, timeout).
        self._runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=0.5)
        await self._runner.setup()
        for host in ("127.0.0.1", "127.0.0.2", "::1"):
            site = web.TCPSite(self._runner, host, 0)
            try:
                await site.start()
            except OSError:
                if host == "127.0.0.1":
                    raise
                continue
            self.ports[host] = self._runner.addresses[-1][1]

    # --- what tests read -------------------------------------------------------------------

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        """url returns an absolute URL for path on the given listening address."""
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{self.ports[host]}{path}"

    @property
    def port(self) -> int:
        """port is the 127.0.0.1 listening port."""
        return self.ports["127.0.0.1"]

    def hits(self, path: str | None = None) -> int:
        """hits counts requests that reached a handler, for one path or all of them."""
        with self._lock:
            return self._hits[path] if path else sum(self._hits.values())

    def cancelled(self, path: str | None = None) -> int:
        """cancelled counts handlers cut short because the client closed the connection."""
        with self._lock:
            return self._cancelled[path] if path else sum(self._cancelled.values())

    def peak_in_flight(self) -> int:
        """peak_in_flight is the most requests the server was handling at one time."""
        with self._lock:
            return self._peak_in_flight

    def open_connections(self) -> int:
        """open_connections counts client connections the server holds open right now."""

        async def count() -> int:
            server = self._runner.server if self._runner else None
            return len(server.connections) if server else 0

        return asyncio.run_coroutine_threadsafe(count(), self._loop).result(timeout=5)

    def set_blob(self, name: str, body: bytes, content_type: str) -> str:
        """set_blob registers bytes served at /blob/{name} and returns that path."""
        with self._lock:
            self._blobs[name] = (body, content_type)
        return f"/blob/{name}"

    # --- handlers --------------------------------------------------------------------------

    @web.middleware
    async def _count(self, request: web.Request, handler: Callable) -> web.StreamResponse:
        with self._lock:
            self._hits[request.path] += 1
            self._in_flight += 1
            self._peak_in_flight = max(self._peak_in_flight, self._in_flight)
        try:
            return await handler(request)
        except asyncio.CancelledError:
            with self._lock:
                self._cancelled[request.path] += 1
            raise
        finally:
            with self._lock:
                self._in_flight -= 1

    async def _content(self, request: web.Request) -> web.Response:
        body = request.query.get("body", "").encode()
        ctype = request.query.get("type", "text/plain")
        return web.Response(body=body, headers={"Content-Type": ctype})

    async def _blob(self, request: web.Request) -> web.Response:
        with self._lock:
            found = self._blobs.get(request.match_info["name"])
        if found is None:
            raise web.HTTPNotFound()
        return web.Response(body=found[0], headers={"Content-Type": found[1]})

    async def _slow(self, request: web.Request) -> web.Response:
        await asyncio.sleep(int(request.query.get("ms", "1000")) / 1000)
        return web.Response(text="slow ok")

    async def _hang(self, request: web.Request) -> web.Response:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async def _reset(self, request: web.Request) -> web.Response:
        transport = request.transport
        assert transport is not None
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        transport.abort()
        await asyncio.Event().wait()  # cancelled by the lost connection
        raise AssertionError("unreachable")

    async def _big(self, request: web.Request) -> web.StreamResponse:
        size = int(request.query.get("bytes", "0"))
        resp = web.StreamResponse(headers={"Content-Type": "application/octet-stream"})
        if request.query.get("chunked") == "1":
            resp.enable_chunked_encoding()
        else:
            resp.content_length = size
        await resp.prepare(request)
        sent = 0
        try:
            while sent < size:
                n = min(_CHUNK, size - sent)
                await resp.write(b"x" * n)
                sent += n
            await resp.write_eof()
        except ConnectionResetError:  # the client gave up (size cap): expected, not an error
            with self._lock:
                self._cancelled[request.path] += 1
        return resp

    async def _redirect(self, request: web.Request) -> web.Response:
        status = int(request.query.get("status", "302"))
        return web.Response(status=status, headers={"Location": request.query["to"]})

    async def _chain(self, request: web.Request) -> web.Response:
        n = int(request.query.get("n", "0"))
        ms = int(request.query.get("ms", "0"))
        await asyncio.sleep(ms / 1000)
        if n <= 0:
            return web.Response(text="chain end")
        return web.Response(status=302, headers={"Location": f"/chain?n={n - 1}&ms={ms}"})

    async def _status(self, request: web.Request) -> web.Response:
        code = int(request.match_info["code"])
        return web.Response(status=code, text=f"status {code}")

    async def _hedge(self, request: web.Request) -> web.Response:
        key = request.query.get("key", "")
        with self._lock:
            self._hedge_seen[key] += 1
            nth = self._hedge_seen[key]
        delay_ms = int(request.query.get("first_ms" if nth == 1 else "then_ms", "0"))
        await asyncio.sleep(delay_ms / 1000)
        return web.Response(text=f"hedge {key} #{nth}")


def wait_for(predicate: Callable[[], bool], timeout: float = 5.0, every: float = 0.01) -> bool:
    """wait_for polls predicate until it holds or timeout passes; returns its last answer."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(every)
    return predicate()


@contextmanager
def origin_server() -> Iterator[Origin]:
    """origin_server yields a started Origin and stops it afterwards (a pytest fixture body)."""
    origin = Origin().start()
    try:
        yield origin
    finally:
        origin.stop()


async def async_wait_for(predicate: Callable[[], bool], timeout: float = 5.0,
                         every: float = 0.01) -> bool:
    """async_wait_for is wait_for for async tests: it yields to the loop between polls."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        await asyncio.sleep(every)
    return predicate()
