"""Shared fixtures: a real target server on 127.0.0.1 (port 0), a CLI runner and a live session."""

from __future__ import annotations

import http.server
import io
import json
import os
import socket
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import redline
from redline.live import LiveSession, parse_address

#: leftovers fails the session if a process the suite started outlives it; slowfirst starts
#: the long tests first (make test runs the suite on pytest-xdist workers).
pytest_plugins = ["leftovers", "slowfirst"]

#: Every subprocess in the suite is bounded by this many seconds.
CLI_TIMEOUT_S = 60

#: RESULT_SCHEMA: the result document's JSON Schema, which every document a test reads holds to.
RESULT_SCHEMA = json.loads(
    (Path(__file__).parent.parent / "docs/schema/result.schema.json").read_text()
)


@pytest.fixture(scope="module")
def target() -> Iterator[redline.Target]:
    """A target server shared by a test module; tests diff its /__stats counters."""
    with redline.Target(threads=1) as t:
        yield t


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(ca.pem, cert.pem, key.pem): a certificate for 127.0.0.1 from a throwaway CA
    (trustme's), shared by a test module."""
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    d = tmp_path_factory.mktemp("tls")
    files = (d / "ca.pem", d / "cert.pem", d / "key.pem")
    ca.cert_pem.write_to_path(str(files[0]))
    cert.cert_chain_pems[0].write_to_path(str(files[1]))
    cert.private_key_pem.write_to_path(str(files[2]))
    return files


@pytest.fixture(scope="module")
def tls_target(tls_files: tuple[Path, Path, Path]) -> Iterator[tuple[redline.Target, Path]]:
    """The test server over TLS (HTTP/1.1 by ALPN) and the CA's PEM file."""
    ca_pem, cert_pem, key_pem = tls_files
    with redline.Target(threads=1, tls_cert=cert_pem, tls_key=key_pem) as t:
        yield t, ca_pem


@pytest.fixture()
def session() -> Iterator[LiveSession]:
    """A live session (the page on a free loopback port, and Prometheus) for the live tests."""
    live = LiveSession(
        web=parse_address("0", "--web"),
        prometheus=parse_address("127.0.0.1:0", "--prometheus"),
        title="test run",
        name="GET /",
        out=io.StringIO(),
    )
    with live:
        yield live


@pytest.fixture()
def free_port() -> int:
    """A loopback port that nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture()
def serve_http() -> Iterator[Callable[[type[http.server.BaseHTTPRequestHandler]], str]]:
    """serve_http(HANDLER) serves a request handler class on a loopback port, in a thread,
    and returns its ``/metrics`` URL (an exporter of known truth); every server it started
    is shut down after the test."""
    servers: list[tuple[http.server.ThreadingHTTPServer, threading.Thread]] = []

    def serve(handler: type[http.server.BaseHTTPRequestHandler]) -> str:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        servers.append((server, thread))
        return f"http://127.0.0.1:{server.server_address[1]}/metrics"

    try:
        yield serve
    finally:
        for server, thread in servers:
            server.shutdown()
            server.server_close()
            thread.join(5)


class Exposition(http.server.BaseHTTPRequestHandler):
    """Exposition is an exporter of known truth for :func:`serve_http`: each GET is a scrape,
    counted in its class's ``scrapes`` (this one included) and answered 200 with
    :meth:`text` of that count, in Prometheus' text format. A test's exporter says only what
    it serves."""

    scrapes = 0

    def text(self, n: int) -> str:
        """text: the exposition served at the ``n``-th scrape."""
        raise NotImplementedError

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        n = type(self).scrapes = type(self).scrapes + 1
        body = self.text(n).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@dataclass
class Http1Server:
    """Http1Server: Python's own HTTP/1.1 server (keep-alive, no HTTP/2) answering every GET
    200 ``ok``, and what it saw: its ``url`` (``http://127.0.0.1:PORT/``), the
    ``connections`` it took, the ``gets`` it answered and their User-Agent headers
    (``agents``, several joined by `` | ``, none as ``(none)``)."""

    url: str
    connections: int = 0
    gets: int = 0
    agents: Counter[str] = field(default_factory=Counter)


@pytest.fixture()
def http1_server() -> Iterator[Http1Server]:
    """http1_server: an :class:`Http1Server` on a loopback port, shut down after the test."""
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            with lock:
                seen.connections += 1
            super().setup()

        def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
            with lock:
                seen.gets += 1
                seen.agents[" | ".join(self.headers.get_all("User-Agent") or ["(none)"])] += 1
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *_: object) -> None:
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    seen = Http1Server(f"http://127.0.0.1:{srv.server_address[1]}/")
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield seen
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(timeout=10)


def run_cli(*args: str, timeout: float = CLI_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    """run_cli runs ``python -m redline ARGS`` and captures its output."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.run(
        [sys.executable, "-m", "redline", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def run_flow(
    target: redline.Target,
    flow: Callable[[Any], None],
    users: int = 3,
    iterations: int = 2,
    *,
    fields: tuple[str, ...],
    host: str | None = None,
    **options: Any,
) -> tuple[dict[str, Any], dict[str, int]]:
    """run_flow runs ``flow`` as a scenario's one flow, ``users`` x ``iterations`` on
    ``target`` (or on ``host``, the flow's URLs naming ``target``; ``options``:
    :func:`redline.run`'s keywords), and gives its result document, validated against the
    schema, and what ``target`` counted meanwhile: the change of each of its ``/__stats``
    counters ``fields`` (the probe's own truth the test holds redline to)."""
    s = redline.Scenario(host=host or target.url, users=users, iterations=iterations)
    s.flow(flow)
    before = target.stats()
    out = redline.run(s, preflight=False, **options)
    doc = out.result.data
    jsonschema.validate(doc, RESULT_SCHEMA)
    now = target.stats()
    return doc, {k: now[k] - before[k] for k in fields}
