"""Shared fixtures: a real taskqueue server in a subprocess on 127.0.0.1 port 0, and helpers."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from taskqueue.fetch import Fetcher

FINAL = ("SUCCEEDED", "FAILED")
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


def submit(client: httpx.Client, body: dict, **headers: str) -> httpx.Response:
    """submit POSTs a task and returns the response."""
    return client.post("/tasks/submissions", json=body, headers=headers)


@pytest.fixture
def server_factory(tmp_path: Path) -> Iterator:
    """server_factory starts servers on demand and always stops them at the end of the test."""
    started: list[Server] = []

    def make(*args: str, data_dir: Path | None = None, env: dict[str, str] | None = None) -> Server:
        srv = Server(data_dir or tmp_path / "data", *args, env=env).start()
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
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """server is one shared service for contract tests; fetches to 127.0.0.0/8 are allowed."""
    srv = Server(
        tmp_path_factory.mktemp("tq") / "data",
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
