"""SIGTERM ends a command as Ctrl-C does (redline/cli/termination.py): GNU ``timeout``, a
cancelled CI job and ``docker stop`` send SIGTERM, and the summary, the ``--json`` file and
the services a command started must survive it. Each test signals the command 3 s into its
load (at its third progress line, an event rather than a sleep) and checks the exit status
143, what was printed and written, what the server saw, and that nothing it started lives on."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
import redline
from conftest import CLI_TIMEOUT_S

ROOT = Path(__file__).resolve().parent.parent


def start(*argv: str) -> subprocess.Popen[str]:
    """start runs ``python -m redline ARGV`` with its output piped."""
    return subprocess.Popen(
        [sys.executable, "-m", "redline", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
        cwd=ROOT,
    )


def terminate_after(proc: subprocess.Popen[str], lines: int, starts: str) -> tuple[str, str]:
    """terminate_after sends SIGTERM once stderr has shown ``lines`` lines starting with
    ``starts`` (the progress lines: one an interval) and returns what the command printed."""
    assert proc.stderr is not None
    seen: list[str] = []
    deadline = time.monotonic() + CLI_TIMEOUT_S
    while sum(s.startswith(starts) for s in seen) < lines and time.monotonic() < deadline:
        line = proc.stderr.readline()  # bounded: the command's own duration, well under
        if not line:
            break
        seen.append(line)
    assert sum(s.startswith(starts) for s in seen) >= lines, "".join(seen)
    children = psutil.Process(proc.pid).children(recursive=True)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=30)
    gone, alive = psutil.wait_procs(children, timeout=10)
    assert not [p for p in alive if p.status() != psutil.STATUS_ZOMBIE], "every child stopped"
    return stdout, "".join(seen) + stderr


def settled(target: redline.Target) -> int:
    """settled: the target's request count once it stops growing (the load has stopped)."""
    last = target.stats()["requests"]
    for _ in range(20):
        time.sleep(0.2)
        now = target.stats()["requests"]
        if now == last:
            return now
        last = now
    raise AssertionError("the load went on after the command ended")


def test_sigterm_ends_a_url_run_with_its_summary_and_json(tmp_path):
    out = tmp_path / "run.json"
    with redline.Target(threads=1) as target:
        proc = start("run", target.url + "/", "-c", "4", "-d", "60s", "--json", str(out))
        stdout, stderr = terminate_after(proc, 3, "t=")
        served = settled(target)
    assert proc.returncode == 143, stderr
    assert "Requests/sec:" in stdout and "Interrupted" in stdout, stdout
    assert "Traceback" not in stderr
    doc = json.loads(out.read_text())
    assert doc["interrupted"] is True and 2.0 <= doc["duration_s"] < 30
    # What the server saw: every answer redline counted, plus at most those in flight (-c 4).
    assert doc["requests"] <= served <= doc["requests"] + doc["errors"]["read"] + 4 + 4


def test_sigterm_ends_a_scenario_run_with_its_summary_and_json(tmp_path):
    out = tmp_path / "scenario.json"
    with redline.Target(threads=1) as target:
        proc = start(
            "run", "examples/survey.py", "--host", target.url, "-u", "2", "-d", "60s",
            "--json", str(out),
        )  # fmt: skip
        stdout, stderr = terminate_after(proc, 3, "t=")
        served = settled(target)
    assert proc.returncode == 143, stderr
    assert "Interrupted" in stdout and "Traceback" not in stderr, stdout + stderr
    doc = json.loads(out.read_text())
    answered = sum(n["requests"] for n in doc["per_name"].values())
    assert doc["interrupted"] is True and answered > 0
    assert answered <= served <= answered + 2 * 4, (answered, served)


def _alive(pids: list[int]) -> list[int]:
    out = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                out.append(pid)
        except psutil.NoSuchProcess:
            continue
    return out


def test_sigterm_ends_a_find_with_its_answers_json_and_service_stopped(tmp_path, free_port):
    out = tmp_path / "find.json"
    service = f"{sys.executable} -m redline target --port {free_port} --threads 1"
    proc = start(
        "find", f"http://127.0.0.1:{free_port}/?latency=2ms", "--monitor-cmd", service,
        "--max-time", "60s", "--min-step", "1s", "--max-step", "2s", "--json", str(out),
    )  # fmt: skip
    stdout, stderr = terminate_after(proc, 1, "step ")
    assert proc.returncode == 143, stderr
    assert "Traceback" not in stderr
    doc: dict[str, Any] = json.loads(out.read_text())
    assert doc["interrupted"] is True and doc["steps"], doc.keys()
    assert stdout.strip(), "the answers are printed"
    # The service the find started was stopped with it: nothing listens on its port.
    with pytest.raises(OSError):
        import socket

        socket.create_connection(("127.0.0.1", free_port), timeout=1).close()
