"""toxiproxy: Shopify's Toxiproxy between redline and a server, for the network-fault tests.

Toxiproxy is a TCP proxy with faults ("toxics") switched on and off through a small REST API:
added latency and jitter, a bandwidth cap, connections reset or closed part way, data that
stops flowing. The server is a Go module; :func:`server_binary` builds it once with
``go install`` into ``~/.cache/redline/`` (a few minutes on this machine, then cached) and
skips the test with one line where Go is absent. Everything listens on 127.0.0.1 only, on
ports the kernel picks, and every process started here is stopped by the fixture.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

#: VERSION: the Toxiproxy release built (the newest the Go module proxy serves here).
VERSION = "v2.5.0"

#: MODULE: its server's package (``cmd/server`` in this release).
MODULE = f"github.com/Shopify/toxiproxy/v2/cmd/server@{VERSION}"

#: CACHE: where the built server is kept between runs.
CACHE = Path.home() / ".cache" / "redline" / f"toxiproxy-{VERSION}"

#: BUILD_TIMEOUT_S bounds the one-off build (downloads and compiles about 20 modules).
BUILD_TIMEOUT_S = 900

#: START_TIMEOUT_S bounds the wait for the API to answer.
START_TIMEOUT_S = 20.0


def server_binary() -> Path:
    """server_binary: the built toxiproxy server, built on first use (under a lock: the
    suite's workers may ask at once); skips the test where Go is not installed."""
    binary = CACHE / "server"
    if binary.exists():
        return binary
    # Go's own installer puts it in /usr/local/go/bin, which a shell's PATH may lack.
    go = shutil.which("go") or shutil.which("go", path="/usr/local/go/bin")
    if go is None:
        pytest.skip(f"Go is not installed: the Toxiproxy tests build {MODULE} with it")
    CACHE.mkdir(parents=True, exist_ok=True)
    with (CACHE / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not binary.exists():
            env = dict(os.environ, GOBIN=str(CACHE), GOFLAGS="-buildvcs=false")
            p = subprocess.run(
                [go, "install", MODULE],
                env=env,
                capture_output=True,
                text=True,
                timeout=BUILD_TIMEOUT_S,
            )
            if p.returncode != 0:
                raise RuntimeError(f"go install {MODULE} failed: {p.stderr.strip()[-500:]}")
    return binary


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Toxiproxy:
    """Toxiproxy is a running toxiproxy server, driven through its REST API."""

    def __init__(self, api: str):
        self.api = api

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.api + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=10) as r:
            raw = r.read()
        return json.loads(raw) if raw else None

    def proxy(self, name: str, upstream: str) -> str:
        """proxy creates a proxy to ``upstream`` (host:port) on a loopback port the kernel
        picks and returns its host:port."""
        made = self._call(
            "POST",
            "/proxies",
            {"name": name, "listen": "127.0.0.1:0", "upstream": upstream, "enabled": True},
        )
        return str(made["listen"])

    def toxic(self, proxy: str, kind: str, stream: str = "downstream", **attributes: Any) -> str:
        """toxic adds a toxic of ``kind`` (latency, bandwidth, reset_peer, limit_data,
        timeout, ...) to one direction of a proxy; returns its name."""
        name = f"{kind}_{stream}"
        self._call(
            "POST",
            f"/proxies/{proxy}/toxics",
            {
                "name": name,
                "type": kind,
                "stream": stream,
                "toxicity": 1.0,
                "attributes": attributes,
            },
        )
        return name

    def remove(self, proxy: str, toxic: str) -> None:
        """remove takes a toxic off."""
        self._call("DELETE", f"/proxies/{proxy}/toxics/{toxic}")


@contextmanager
def running() -> Iterator[Toxiproxy]:
    """running starts a toxiproxy server on a free loopback port and stops it at the end."""
    binary = server_binary()
    port = _free_port()
    proc = subprocess.Popen(
        [str(binary), "-host", "127.0.0.1", "-port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        api = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                with urllib.request.urlopen(api + "/version", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("toxiproxy did not start") from None
                time.sleep(0.05)
        yield Toxiproxy(api)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
