"""Helpers shared by the live tests (test_live*.py): the bound on every wait, the histogram's
bucket tops, an /events reader, the stop button's POST and token, and a CLI read line by line."""

from __future__ import annotations

import http.client
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from typing import Any

from conftest import CLI_TIMEOUT_S
from redline.live.metrics import BOUNDS_S, counts_at

#: Every wait in the live tests is bounded by this many seconds.
WAIT_S = 15.0


def top_of_bucket(us: int) -> int:
    """top_of_bucket is the highest value an HdrHistogram of 3 significant digits (2,048
    sub-buckets, from 1 µs) keeps in the bucket of ``us``: values under 2,048 µs exactly,
    then in buckets of 2, 4, 8 ... µs."""
    if us < 2048:
        return us
    res = 1 << (us.bit_length() - 11)
    return us - us % res + res - 1


def assert_exact_within_the_histogram(exact: list[int], histogram: str) -> None:
    """assert_exact_within_the_histogram: the engine's exact counts at :data:`BOUNDS_S` lie
    between what ``histogram`` holds wholly at or under each bound (its bucket that straddles
    the bound left out) and what it holds up to the top of that bucket: an HdrHistogram
    cannot tell the answers in the straddling bucket apart, and may differ by no more."""
    bounds = [round(b * 1e6) for b in BOUNDS_S]
    under = counts_at(histogram, bounds)[1]
    over = counts_at(histogram, [top_of_bucket(b) for b in bounds])[1]
    assert all(lo <= x <= hi for lo, x, hi in zip(under, exact, over, strict=True)), (
        under,
        exact,
        over,
    )


class SseClient:
    """SseClient reads one /events stream on its own thread until ``done`` or the deadline."""

    def __init__(self, base: str, query: str = ""):
        host, port = re.match(r"http://([^:/]+):(\d+)/", base).groups()  # type: ignore[union-attr]
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.connected = threading.Event()
        self.finished = threading.Event()
        self._conn = http.client.HTTPConnection(host, int(port), timeout=WAIT_S)
        self._conn.request("GET", "/events" + query)
        self._resp = self._conn.getresponse()
        assert self._resp.status == 200
        assert self._resp.getheader("Content-Type") == "text/event-stream"
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        kind = None
        deadline = time.monotonic() + WAIT_S
        try:
            while time.monotonic() < deadline:
                line = self._resp.readline().decode()
                if not line:
                    return
                if line.startswith("event: "):
                    kind = line[7:].strip()
                elif line.startswith("data: ") and kind:
                    self.events.append((kind, json.loads(line[6:])))
                    if kind == "state":
                        self.connected.set()
                    if kind == "done":
                        return
        finally:
            self.connected.set()
            self.finished.set()

    def kinds(self, kind: str) -> list[dict[str, Any]]:
        return [d for k, d in self.events if k == kind]

    def close(self) -> None:
        self.finished.wait(WAIT_S)
        self._conn.close()


def post_stop(base: str, token: str | None) -> int:
    req = urllib.request.Request(base + "stop", method="POST", data=b"")
    if token is not None:
        req.add_header("X-Redline-Stop", token)
    try:
        return int(urllib.request.urlopen(req, timeout=WAIT_S).status)
    except urllib.error.HTTPError as e:
        return int(e.code)


def stop_token(base: str) -> str:
    page = urllib.request.urlopen(base, timeout=WAIT_S).read().decode()
    m = re.search(r'data-stop="([^"]+)"', page)
    assert m
    return m.group(1)


class Cli:
    """Cli runs ``python -m redline ARGS`` and reads its stderr as lines arrive."""

    def __init__(self, *args: str):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "redline", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(os.environ, PYTHONUNBUFFERED="1"),
        )
        self.lines: list[str] = []

    def wait_line(self, pattern: str) -> re.Match[str]:
        """wait_line reads stderr until a line matches (bounded: the process's end)."""
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)
            m = re.search(pattern, line)
            if m:
                return m
        raise AssertionError(f"no line matched {pattern!r}: {self.lines}")

    def finish(self) -> tuple[int, str, str]:
        out, err = self.proc.communicate(timeout=CLI_TIMEOUT_S)
        return self.proc.returncode, out, "".join(self.lines) + err

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate(timeout=CLI_TIMEOUT_S)
