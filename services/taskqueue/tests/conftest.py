"""Shared fixtures: a real taskqueue server in a subprocess on 127.0.0.1 port 0, and helpers.

The contract holds on every store, so the fixtures that start servers (`server`,
`server_factory`, `store`) are parametrised over the backends: each test that uses them runs
once on SQLite and once on PostgreSQL (one throwaway cluster per session, a fresh database
per store). A test about something only SQLite has, or that no store touches, says so with
`@pytest.mark.sqlite_only("why")` and runs once.

Without the PostgreSQL binaries the PostgreSQL runs skip, except under CI=true, where they
fail: CI installs Debian's package (.ci/run), so a green CI always ran them.
"""

from __future__ import annotations

import contextlib
import enum
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from taskqueue.fetch import Fetcher
from taskqueue.localpg import LocalPgError, LocalPostgres, find_bindir

FINAL = ("SUCCEEDED", "FAILED")
FAST_LEASES = ("--lease-grace-s", "1", "--lease-check-s", "0.3", "--factorial-timeout-s", "2")
"""FAST_LEASES: short leases, so that takeovers happen within a test's time. A fetch's lease
is its timeout_ms + 2 s of slack + the grace; a factorial's, --factorial-timeout-s + grace."""
_URL = re.compile(r"listening on (http://\S+)")


class Server:
    """Server runs `python -m taskqueue serve --port 0 ...`; its URL is from the start line."""

    def __init__(self, data_dir: Path, *args: str, env: dict[str, str] | None = None) -> None:
        self.data_dir = data_dir
        self.args = list(args)
        self.env = {**os.environ, **(env or {})}
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""
        self.lines: list[str] = []
        self._ready = threading.Event()

    def start(self, timeout: float = 30.0) -> Server:
        self.lines, self._ready = [], threading.Event()
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "taskqueue",
                "serve",
                "--port",
                "0",
                "--data-dir",
                str(self.data_dir),
                *self.args,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=self.env,
        )
        threading.Thread(target=self._drain, args=(self.proc,), daemon=True).start()
        if not self._ready.wait(timeout) or not self.url:
            self.kill()
            raise RuntimeError("server did not start:\n" + "".join(self.lines))
        return self

    def _drain(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self.lines.append(line)
            m = _URL.search(line)
            if m and not self._ready.is_set():
                self.url = m.group(1)
                self._ready.set()
        self._ready.set()

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def stop(self, timeout: float = 20.0) -> int:
        """stop sends SIGTERM and waits; returns the exit code."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        return self.proc.returncode

    def kill(self) -> None:
        """kill sends SIGKILL (a crash) and reaps the process."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def client(self, **kw: object) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=10.0, **kw)  # type: ignore[arg-type]


def wait_final(client: httpx.Client, task_id: str, timeout: float = 30.0) -> dict:
    """wait_final polls a task's status until it is SUCCEEDED or FAILED (bounded by timeout)."""
    deadline = time.monotonic() + timeout
    while True:
        doc = client.get(f"/tasks/submissions/{task_id}").json()
        if doc["status"] in FINAL:
            return doc
        if time.monotonic() > deadline:
            raise AssertionError(f"task {task_id} not finished after {timeout} s: {doc}")
        time.sleep(0.02)


def metric(text: str, name: str) -> float:
    """metric is the value of one series (name and labels, as exposed) in /metrics text; 0 if
    absent, as a Prometheus counter not yet incremented may be."""
    m = re.search(rf"^{re.escape(name)} (\S+)$", text, re.MULTILINE)
    return float(m.group(1)) if m else 0.0


def submit(client: httpx.Client, body: dict, **headers: str) -> httpx.Response:
    """submit POSTs a task and returns the response."""
    return client.post("/tasks/submissions", json=body, headers=headers)


class Backend(enum.Enum):
    """Backend is the kind of store a test's servers keep their tasks in."""

    SQLITE = "sqlite"
    POSTGRESQL = "postgresql"

    @property
    def shared(self) -> bool:
        """shared: several servers run on one store at once and take over each other's leases
        when they expire (SQLite's data dir is locked to one server, which a restart recovers)."""
        return self is Backend.POSTGRESQL


@dataclass(frozen=True)
class Store:
    """Store is where a test's servers keep their tasks: a data dir, or a fresh database."""

    backend: Backend
    data_dir: Path
    dsn: str | None = None

    def args(self) -> tuple[str, ...]:
        """args are the `serve` flags that put a server on this store."""
        return () if self.dsn is None else ("--database", self.dsn)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """pytest_generate_tests runs each test that uses a store once per backend (SQLite only
    when it is marked sqlite_only), grouped by backend so module-wide servers start once."""
    if "backend" not in metafunc.fixturenames:
        return
    only = metafunc.definition.get_closest_marker("sqlite_only")
    backends = [Backend.SQLITE] if only is not None else list(Backend)
    metafunc.parametrize(
        "backend", backends, indirect=True, ids=[b.value for b in backends], scope="module"
    )


@pytest.fixture(scope="module")
def backend(request: pytest.FixtureRequest) -> Backend:
    """backend is the store kind this run of the test uses (see pytest_generate_tests)."""
    return Backend(request.param)


@pytest.fixture(scope="session")
def pg() -> Iterator[LocalPostgres]:
    """pg is the session's one private PostgreSQL (initdb/pg_ctl in a temporary directory)."""
    if find_bindir() is None:
        reason = "PostgreSQL binaries (initdb, pg_ctl) not found: apt-get install postgresql"
        if os.environ.get("CI") == "true":
            pytest.fail(reason + " (CI=true: these tests must run)")
        pytest.skip(reason)
    try:
        server = LocalPostgres().start()
    except LocalPgError as exc:
        pytest.fail(str(exc))
    yield server
    server.close()


def fresh_database(pg: LocalPostgres) -> str:
    """fresh_database creates an empty database on the session's PostgreSQL; returns its URL."""
    return pg.create_database("t" + uuid.uuid4().hex[:12])


@pytest.fixture
def dsn(pg: LocalPostgres) -> str:
    """dsn is a fresh, empty database on the session's PostgreSQL."""
    return fresh_database(pg)


def _new_store(request: pytest.FixtureRequest, backend: Backend, root: Path) -> Store:
    if backend is Backend.SQLITE:
        return Store(backend, root / "data")
    # Asked for only here, so that a SQLite-only run never starts PostgreSQL.
    return Store(backend, root / "data", fresh_database(request.getfixturevalue("pg")))


@pytest.fixture
def store(request: pytest.FixtureRequest, backend: Backend, tmp_path: Path) -> Store:
    """store is the test's own empty store, on this run's backend."""
    return _new_store(request, backend, tmp_path)


@pytest.fixture
def server_factory(store: Store) -> Iterator:
    """server_factory starts servers on the test's store and always stops them at the end.

    Every server of one test shares the store: on SQLite one at a time (a restart finds what
    the last one left), on PostgreSQL any number at once.
    """
    started: list[Server] = []

    def make(*args: str, env: dict[str, str] | None = None) -> Server:
        srv = Server(store.data_dir, *store.args(), *args, env=env).start()
        started.append(srv)
        return srv

    yield make
    for srv in started:
        srv.stop()


@pytest.fixture(scope="module")
def origin() -> Iterator:
    """origin is the colleague's local origin server (127.0.0.1, port 0)."""
    from origin import origin_server

    with origin_server() as o:
        yield o


@pytest.fixture(scope="module")
def server(
    request: pytest.FixtureRequest, backend: Backend, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    """server is one shared service for contract tests; fetches to 127.0.0.0/8 are allowed."""
    store = _new_store(request, backend, tmp_path_factory.mktemp("tq"))
    srv = Server(
        store.data_dir,
        *store.args(),
        "--allow-fetch-cidr",
        "127.0.0.0/8",
        "--max-factorial-n",
        "20000",
    ).start()
    yield srv
    srv.stop()


@pytest.fixture
def client(server: Server) -> Iterator[httpx.Client]:
    with server.client() as c:
        yield c


@contextlib.asynccontextmanager
async def make_fetcher(**kwargs: object) -> AsyncIterator[Fetcher]:
    """make_fetcher yields a Fetcher built with ``kwargs`` and always closes it (no fd leak)."""
    fetcher = Fetcher(**kwargs)  # type: ignore[arg-type]
    try:
        yield fetcher
    finally:
        await fetcher.close()


# --- several servers on one PostgreSQL database -----------------------------------------


@pytest.fixture
def cluster(dsn: str, tmp_path: Path) -> Iterator:
    """cluster starts taskqueue servers on the test's database, stopping them all at the end."""
    started: list[Server] = []

    def make(*args: str, n: int = 1) -> list[Server]:
        servers = [
            Server(
                tmp_path / f"unused{len(started) + i}",
                *("--database", dsn, "--workers", "1", "--allow-fetch-cidr", "127.0.0.0/8"),
                *args,
            )
            for i in range(n)
        ]
        errors: list[BaseException] = []

        def start(s: Server) -> None:
            try:
                s.start()
            except BaseException as exc:  # reported below, in the test's thread
                errors.append(exc)

        threads = [threading.Thread(target=start, args=(s,)) for s in servers]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        started.extend(servers)
        if errors:
            raise errors[0]
        return servers

    yield make
    for i, s in enumerate(started):
        s.stop()
        # pytest shows this only for a failed test: what each server logged, to tell why.
        print(f"--- server {i} ({s.url}) logged:\n" + "".join(s.lines[-200:]))


def holder_of(servers: list[Server]) -> tuple[Server, Server]:
    """holder_of: of two servers, the one running the one task (it shows it RUNNING in its own
    gauge) and the other; within 10 s."""
    deadline = time.monotonic() + 10
    while True:
        for s in servers:
            with s.client() as c:
                if metric(c.get("/metrics").text, 'taskqueue_tasks{status="RUNNING"}') == 1:
                    return s, servers[1] if s is servers[0] else servers[0]
        assert time.monotonic() < deadline, "no server started the task"


def fetch_on_two(
    cluster: Any, origin: Any, path: str, timeout_ms: int
) -> tuple[str, Server, Server, int]:
    """fetch_on_two: two servers on one store with short leases, one http-fetch task of the
    origin's `path` submitted to the first; its id, the server running it (its fetch has
    reached the origin), the other, and the origin's hits of the path before it."""
    servers = cluster(*FAST_LEASES, n=2)
    route = path.split("?")[0]
    before = origin.hits(route)
    with servers[0].client() as c:
        body = {"type": "http-fetch", "url": origin.url(path), "timeout_ms": timeout_ms}
        task_id = submit(c, body).json()["id"]
    holder, other = holder_of(servers)
    # RUNNING is durable before the fetch goes out: wait until it reached the origin, so a
    # kill, a freeze or a cancel lands on an attempt that made its one fetch (not before it).
    deadline = time.monotonic() + 10
    while origin.hits(route) == before:
        assert time.monotonic() < deadline, "the holder's fetch never reached the origin"
        time.sleep(0.01)
    return task_id, holder, other, before
