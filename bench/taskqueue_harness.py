"""taskqueue_harness: the processes of the taskqueue benchmark (bench/taskqueue.py) and what
they used: the pinned service and its store (SQLite, or a private PostgreSQL cluster), the
http-fetch origin, the generators, the service's answers (tasks stored, drained), and CPU
seconds, the wait for a CPU and disk writes, read from /proc through psutil.

Imported by bench/taskqueue.py once it has put this folder last on sys.path (its own name
would shadow the service's package, taskqueue.localpg, which :func:`store` imports)."""

from __future__ import annotations

import json
import os
import re
import resource
import shlex
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil

VENV_BIN = Path(sys.executable).parent
PEERS_ENV = Path.home() / ".cache/redline-peers/peers.env"
CORES = {"service": "0", "generator": "1"}
"""CORES: where each side runs (`--no-pin` empties it: the scheduler places everything)."""
START_TIMEOUT_S = 30.0
URL_RE = re.compile(rb"(http://[0-9.]+:[0-9]+)")


def peers() -> dict[str, str]:
    """peers reads the generator paths written by install-peers.sh (PATH as a fallback)."""
    found = {"WRK": shutil.which("wrk") or "", "K6": shutil.which("k6") or ""}
    if PEERS_ENV.exists():
        for line in PEERS_ENV.read_text().splitlines():
            key, sep, value = line.partition("=")
            if sep and not key.startswith("#") and value:
                found[key.strip()] = value.strip()
    return found


def load_avg() -> str:
    """load_avg is the 1/5/15-minute load average (the box is shared: context for the figures)."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


@contextmanager
def started(argv: list[str], log: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """started runs a server that prints its URL in its start line; yields (url, process)."""
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            match = URL_RE.search(log.read_bytes())
            if match:
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{argv[0]} did not start: {log.read_text()[-500:]}")
            time.sleep(0.05)
        yield match.group(1).decode(), proc
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def pin(role: str) -> list[str]:
    """pin is the taskset prefix that keeps `role` on its core (none without pinning)."""
    return ["taskset", "-c", CORES[role]] if role in CORES else []


def service_argv(
    cmd: str, data_dir: Path, max_queue: int | None, database: str | None = None
) -> list[str]:
    """service_argv is the pinned taskqueue command line (cmd: how to run `taskqueue`), on
    ``database`` (a PostgreSQL URL) when given, else on SQLite in ``data_dir``."""
    argv = [*pin("service"), *shlex.split(cmd), "serve", "--port", "0"]
    argv += ["--data-dir", str(data_dir), "--allow-fetch-cidr", "127.0.0.0/8"]
    argv += ["--database", database] if database else []
    return argv + (["--max-queue", str(max_queue)] if max_queue else [])


@contextmanager
def store(kind: str, work: Path) -> Iterator[tuple[str | None, Callable[[], float]]]:
    """store yields the ``--database`` URL of ``kind`` (None for SQLite, which lives in the
    service's data dir) and a function giving the CPU seconds the store's own processes have
    used so far (0 for SQLite: its writer is a thread of the service). PostgreSQL is a fresh
    private cluster pinned to the service's core, stopped and removed on the way out."""
    if kind == "sqlite":
        yield None, lambda: 0.0
        return
    from taskqueue.localpg import LocalPostgres

    del work  # its own temporary directory: under root, the cluster's user must reach it
    with LocalPostgres() as pg:
        url = pg.create_database("taskqueue")
        head = int((pg.datadir / "postmaster.pid").read_text().split()[0])
        postmaster = psutil.Process(head)
        if "service" in CORES:  # backends fork from the postmaster and inherit its affinity
            for p in [postmaster, *postmaster.children(recursive=True)]:
                try:
                    p.cpu_affinity([int(CORES["service"])])
                except psutil.NoSuchProcess:
                    pass  # a backend that ended between the listing and the pinning

        def used() -> float:
            total = 0.0
            for p in [postmaster, *postmaster.children(recursive=True)]:
                try:
                    t = p.cpu_times()
                    total += t.user + t.system + t.children_user + t.children_system
                except psutil.Error:
                    pass  # a backend that ended between the listing and the read
            return total

        yield url, used


def origin_argv() -> list[str]:
    """origin_argv is the pinned http-fetch origin (redline's target server, one thread)."""
    return [
        *pin("generator"),
        str(VENV_BIN / "redline"),
        "target",
        "--threads",
        "1",
        "--port",
        "0",
    ]


def http_json(method: str, url: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    """http_json makes one JSON request (setup and cross-checks only, never the measurement)."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(
        url, data=data, method=method, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        return dict(json.loads(resp.read()))


def server_tasks(url: str) -> dict[str, int]:
    """server_tasks is the service's own count of tasks by status (/healthz)."""
    return {str(k): int(v) for k, v in dict(http_json("GET", f"{url}/healthz")["tasks"]).items()}


def wait_drained(url: str, timeout_s: float) -> dict[str, int]:
    """wait_drained waits (bounded) until no task is QUEUED or RUNNING; returns the counts."""
    deadline = time.monotonic() + timeout_s
    while True:
        tasks = server_tasks(url)
        if tasks.get("QUEUED", 0) + tasks.get("RUNNING", 0) == 0 or time.monotonic() > deadline:
            return tasks
        time.sleep(0.2)


def cpu_seconds(proc: subprocess.Popen[bytes]) -> float:
    """cpu_seconds is user+system CPU of a process and its descendants so far."""
    total = 0.0
    try:
        root = psutil.Process(proc.pid)
        for p in [root, *root.children(recursive=True)]:
            t = p.cpu_times()
            total += t.user + t.system
    except psutil.Error:
        pass
    return total


def sched_wait_s(proc: subprocess.Popen[bytes]) -> float:
    """sched_wait_s is how long the process tree's threads sat runnable waiting for a CPU.

    From /proc/<pid>/task/<tid>/schedstat (second field, ns). On a shared box this is the
    direct measure of contention: latency a pinned service could not avoid.
    """
    total = 0
    try:
        root = psutil.Process(proc.pid)
        pids = [root.pid, *(c.pid for c in root.children(recursive=True))]
    except psutil.Error:
        return 0.0
    for pid in pids:
        for stat in Path(f"/proc/{pid}/task").glob("*/schedstat"):
            try:
                total += int(stat.read_text().split()[1])
            except (OSError, IndexError, ValueError):
                continue
    return total / 1e9


def written_bytes(proc: subprocess.Popen[bytes]) -> int:
    """written_bytes is what the service process has written to storage so far (WAL, db)."""
    try:
        return int(psutil.Process(proc.pid).io_counters().write_bytes)
    except (psutil.Error, AttributeError):
        return 0


def run_generator(argv: list[str], timeout_s: float, cwd: Path) -> tuple[str, float]:
    """run_generator runs a pinned generator, bounded by timeout_s; returns (output, wall_s)."""
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=cwd)
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        raise RuntimeError(f"{argv[3]} ran past {timeout_s:.0f} s") from None
    return out.decode(errors="replace"), time.monotonic() - t0


def child_cpu() -> float:
    """child_cpu is the CPU of all reaped children so far: the generator's, read as a delta."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime
