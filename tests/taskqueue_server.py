"""The bundled task queue (services/taskqueue, uvicorn) as a subprocess for the tests: started on
a free port in a fresh data directory, stopped at the end, and asked what it stored."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator


def start_taskqueue(data_dir: str) -> tuple[subprocess.Popen[str], str]:
    """start_taskqueue starts ``taskqueue serve`` on port 0 with its data in ``data_dir`` and
    returns the process and its base URL, read from its start line (30 s at most)."""
    exe = os.path.join(os.path.dirname(sys.executable), "taskqueue")
    proc = subprocess.Popen(
        [
            exe,
            "serve",
            "--port",
            "0",
            "--data-dir",
            data_dir,
            "--workers",
            "1",
            "--allow-fetch-cidr",
            "127.0.0.0/8",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        m = re.search(r"(http://127\.0\.0\.1:\d+)", line)
        if m:
            return proc, m.group(1)
    proc.kill()
    raise RuntimeError("taskqueue did not start")


@contextlib.contextmanager
def running_taskqueue() -> Iterator[str]:
    """running_taskqueue yields the base URL of a task queue that lives for the block."""
    with tempfile.TemporaryDirectory() as d:
        proc, url = start_taskqueue(d)
        try:
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


def tasks(url: str) -> list[dict]:
    """tasks lists the tasks the queue at ``url`` stored (up to 1,000)."""
    with urllib.request.urlopen(url + "/tasks?limit=1000", timeout=10) as r:
        return json.loads(r.read())["tasks"]
