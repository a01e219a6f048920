"""The `make demo` walk-through: redline measuring the bundled servers on this machine.

1. the Rust target server, closed model (wrk's question: how fast can it go?);
2. the same server stalling 1 s in every 5 s under a fixed open-model rate: the corrected
   percentiles show the stall that a closed-loop tool would hide (coordinated omission);
3. taskqueue, the task-queue service of seed 000: status reads of a real task.

Everything listens on 127.0.0.1 on ports picked at run time and stops by itself.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

import redline
from redline.summary import render


def banner(text: str) -> None:
    print(f"\n=== {text} ===", flush=True)


def target_demo() -> None:
    with redline.Target() as target:
        banner(f"closed model: 50 connections for 5s against {target.url}/")
        result = redline.run(target.url + "/", connections=50, duration="5s")
        print(render(result))
        seen = target.stats()["requests"]
        print(f"(the server counted {seen} requests; redline completed {result.requests})")

        url = target.url + "/?stall=1s/5s"
        banner(f"open model: 1000 req/s for 10s against {url}")
        result = redline.run(url, rate=1000, duration="10s", max_connections=2000)
        print(render(result))


def start_taskqueue(data_dir: str) -> tuple[subprocess.Popen, str]:
    exe = os.path.join(os.path.dirname(sys.executable), "taskqueue")
    proc = subprocess.Popen(
        [exe, "serve", "--port", "0", "--data-dir", data_dir],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + 30
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        m = re.search(r"(http://127\.0\.0\.1:\d+)", line)
        if m:
            return proc, m.group(1)
    proc.kill()
    raise RuntimeError("taskqueue did not start within 30 s")


def taskqueue_demo() -> None:
    with tempfile.TemporaryDirectory() as data_dir:
        proc, base = start_taskqueue(data_dir)
        try:
            req = urllib.request.Request(
                base + "/tasks/submissions",
                data=json.dumps({"type": "factorial", "n": 1000}).encode(),
                headers={"Content-Type": "application/json"},
                method="POST",
            )
            with urllib.request.urlopen(req, timeout=10) as resp:
                task = json.loads(resp.read())
            url = f"{base}/tasks/submissions/{task['id']}"
            banner(f"taskqueue: status reads, 20 connections for 5s against {url}")
            print(render(redline.run(url, connections=20, duration="5s")))
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


def main() -> int:
    target_demo()
    taskqueue_demo()
    return 0


if __name__ == "__main__":
    sys.exit(main())
