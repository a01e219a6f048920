"""Server: runs a TaskService behind uvicorn (uvloop + httptools, one send a response) on a
socket we bind ourselves.

Binding the socket here, not in uvicorn, is what lets `--port 0` report the real port in
the start line, which tests and the demo parse.
"""

from __future__ import annotations

import asyncio
import gc
import ipaddress
import logging
import re
import signal
import socket
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

import uvicorn

from taskqueue.api import create_app
from taskqueue.config import Config
from taskqueue.fastpath import FastPath
from taskqueue.service import TaskService
from taskqueue.transport import HttpProtocol

log = logging.getLogger("taskqueue")

GC_THRESHOLDS = (50_000, 20, 10)
"""GC_THRESHOLDS: the collector's thresholds while serving (Python's defaults: 700, 10, 10).

With the defaults the young generation is collected every 700 allocations, a few milliseconds
at thousands of requests a second. What a keep-alive connection allocates for one request (its
request cycle, Event, context and keep-alive timer) lives until its next request, a second
later for a polling user, so it outlives two young collections and reaches the oldest
generation; that generation then grows by a quarter every few seconds and each time sets off a
full collection of every object (about 180,000 at 4,500 users). The collector was a quarter of
the service's CPU in the seed-000 mix and found almost nothing to free: the service makes
little cyclic garbage. Collected 70 times less often, a request's objects have died before the
next collection and only what really lasts (cached tasks, connections) is promoted."""


ACCEPT_BATCH = 4096
"""ACCEPT_BATCH bounds the connections `_Acceptor` takes in one turn of the loop (the
listen backlog: asyncio's own bound)."""

ACCEPT_RETRY_S = 1.0
"""ACCEPT_RETRY_S: how long `_Acceptor` leaves accepting to uvloop after accept() failed
for want of a resource (file descriptors, memory), as asyncio waits before trying again."""


class _Acceptor:
    """_Acceptor accepts every connection waiting on a listening socket whenever it is
    readable, beside uvloop's own server on the same socket.

    libuv accepts one connection a turn of the loop (libuv/libuv#3696, in uvloop since it
    bundles libuv 1.45): behind a loop busy with thousands of connections, each turn a few
    milliseconds, new connections then queue in the kernel faster than they are taken. In
    the seed-000 mix at 4,500 users ramped at 225 a second, the first request of a new
    connection waited up to 1.8 s to be accepted while the second one on it took 10 ms.
    asyncio's own loop accepts up to the backlog each time; so does this, on a duplicate
    of the listening descriptor (uvloop keeps its watcher on the original), handing each
    connection to the loop as uvloop's server would (`connect_accepted_socket`, uvicorn's
    protocol, TCP_NODELAY). uvloop's server still listens, owns the socket and closes it.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        sock: socket.socket,
        protocol: Callable[[], asyncio.Protocol],
    ) -> None:
        self._loop = loop
        self._sock = sock.dup()
        self._sock.setblocking(False)
        self._protocol = protocol
        self._handing: set[asyncio.Task[Any]] = set()
        self._open = True
        loop.add_reader(self._sock.fileno(), self._accept)

    def _accept(self) -> None:
        for _ in range(ACCEPT_BATCH):
            try:
                conn, _ = self._sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except ConnectionAbortedError:  # gone before it was taken: on to the next
                continue
            except OSError as exc:  # out of descriptors or memory: uvloop's server copes
                log.warning("taskqueue: accept failed (%s); retrying in %g s", exc, ACCEPT_RETRY_S)
                self._loop.remove_reader(self._sock.fileno())
                self._loop.call_later(ACCEPT_RETRY_S, self._resume)
                return
            conn.setblocking(False)
            job = self._loop.create_task(self._loop.connect_accepted_socket(self._protocol, conn))
            self._handing.add(job)
            job.add_done_callback(self._handed)

    def _handed(self, job: asyncio.Task[Any]) -> None:
        self._handing.discard(job)
        if not job.cancelled() and job.exception() is not None:
            log.warning("taskqueue: an accepted connection failed to start: %s", job.exception())

    def _resume(self) -> None:
        if self._open:
            self._loop.add_reader(self._sock.fileno(), self._accept)

    def close(self) -> None:
        """close stops accepting (uvicorn's shutdown then stops uvloop's server)."""
        if self._open:
            self._open = False
            self._loop.remove_reader(self._sock.fileno())
            self._sock.close()


class _Server(uvicorn.Server):
    """_Server treats SIGINT/SIGTERM as a request for a clean stop (exit 0, stop line logged)
    instead of re-raising the signal after shutdown as uvicorn does, and accepts every
    waiting connection each turn of the loop (`_Acceptor`)."""

    _acceptors: tuple[_Acceptor, ...] = ()

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self.should_exit and sig == signal.SIGINT:
            self.force_exit = True
        self.should_exit = True

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        loop = asyncio.get_running_loop()
        self._acceptors = tuple(_Acceptor(loop, sock, self._protocol) for sock in sockets or ())

    def _protocol(self) -> asyncio.Protocol:
        """_protocol is a new connection's protocol, as uvicorn's startup makes it."""
        config = self.config
        return config.http_protocol_class(  # type: ignore[call-arg]
            config=config, server_state=self.server_state, app_state=self.lifespan.state
        )

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for acceptor in self._acceptors:
            acceptor.close()
        await super().shutdown(sockets)


class ServeError(RuntimeError):
    """ServeError is a start-up failure for the operator (port taken, data dir locked)."""


def bind(host: str, port: int) -> socket.socket:
    """bind opens the listening socket (IPv4 or IPv6 by the host's spelling)."""
    try:
        family = socket.AF_INET6 if ipaddress.ip_address(host).version == 6 else socket.AF_INET
    except ValueError:
        family = socket.AF_INET  # a host name: resolved by bind() over IPv4
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(4096)
    except OSError as exc:
        sock.close()
        raise ServeError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.setblocking(False)
    return sock


def url_of(sock: socket.socket) -> str:
    """url_of is the base URL a client uses to reach the bound socket."""
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


async def serve_async(config: Config, on_ready: Callable[[str], None] | None = None) -> None:
    """serve_async runs until SIGINT/SIGTERM; on_ready gets the base URL once serving."""
    sock = bind(config.host, config.port)
    service = TaskService(config)
    try:
        await service.start()
    except Exception as exc:
        sock.close()
        raise ServeError(str(exc)) from None
    url = url_of(sock)
    # Start-up objects (modules, app, recovered tasks) live for the whole run: move them out
    # of the collector's sight so full collections, and their pauses, stay small.
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    app = create_app(service, manage_lifecycle=False)
    server = _Server(uvicorn_config(FastPath(app, service) if config.fast_path else app))
    try:
        ready = asyncio.get_running_loop().create_task(_announce(server, url, on_ready))
        await server.serve(sockets=[sock])
        ready.cancel()
    finally:
        await service.stop()
        sock.close()


def uvicorn_config(app: Any) -> uvicorn.Config:
    """uvicorn_config is how uvicorn serves `app` here (loaded: its protocol can be built)."""
    config = uvicorn.Config(
        app,
        interface="asgi3",
        loop="none",
        # httptools, writing each response in one send and answering reads from memory as
        # it parses them (transport.py).
        http=HttpProtocol,
        lifespan="off",
        access_log=False,
        log_level="warning",
        timeout_graceful_shutdown=5,
        backlog=4096,
        server_header=False,
        # Nothing reads the client address, so skip the X-Forwarded-For layer (which would
        # also hide FastPath.at_once from the protocol).
        proxy_headers=False,
    )
    config.load()
    return config


async def _announce(
    server: uvicorn.Server, url: str, on_ready: Callable[[str], None] | None
) -> None:
    while not server.started:
        await asyncio.sleep(0.01)
    if on_ready is not None:
        on_ready(url)


def _store_of(config: Config) -> str:
    """_store_of names the store for the start line (a database URL without its password)."""
    if config.database is None:
        return f"data-dir {config.data_dir}"
    return "database " + re.sub(r"://([^:@/]*):[^@/]*@", r"://\1:***@", config.database)


def serve(config: Config) -> None:
    """serve runs the service in this thread with uvloop, logging one line at start and at stop."""
    import uvloop

    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)
    state: dict[str, str] = {}

    def ready(url: str) -> None:
        state["url"] = url
        log.info(
            "taskqueue: listening on %s (%s, workers %d, max-queue %d)",
            url,
            _store_of(config),
            config.workers,
            config.max_queue,
        )
        sys.stdout.flush()

    uvloop.run(serve_async(config, ready))
    log.info("taskqueue: stopped %s", state.get("url", ""))
