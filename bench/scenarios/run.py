"""Client CPU per request of the seed-000 flow (issue 8, "Performance"), in one run:

    .venv/bin/python bench/scenarios/run.py [--seconds 10] [--locust PATH]
        [--server target|taskqueue|both] [--no-record]

against each server with the task API, pinned to core 0:
  target     `redline target --threads 1` (its task app: a lean server that answers each
             request in one TCP segment, like the Go server of the issue's reference figures)
  taskqueue  `taskqueue serve --port 0 --workers 1` (Python; answers in two segments, so every
             request also costs the client a pure ACK in its kernel)
and against each:
  wrk      plain GET of one finished task's status (the reference: wrk's cost of a request)
  redline  bench/scenarios/seed000_flow.py (submit, poll until done, result), 50 VUs, 1 thread
           (and the same run's engine CPU alone, from its report, without the start-up)
  locust   bench/scenarios/locustfile.py, the same flow with FastHttpUser, 50 users
Each generator runs pinned to core 1; its CPU is the kernel's rusage of its process (wait4:
user and sys, Python start-up and compile included for redline and locust), its requests are
what it counted (redline: answered + failed). Ratios are to wrk on the same server in the same
run, and Locust's to redline's. "segs/req" is the machine's TCP segments sent (Tcp OutSegs in
/proc/net/snmp, both directions of the loopback) per request during the generator's run: it
shows what the kernel does per request whatever the generator. Results are appended to
bench/results/scenarios.md.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import record  # noqa: E402

VENV_BIN = Path(sys.executable).parent
USERS = 50


def pinned(core: str, argv: list[str]) -> list[str]:
    return (["taskset", "-c", core] if shutil.which("taskset") else []) + argv


def out_segs() -> int:
    """out_segs reads the machine's TCP segments sent so far (Tcp OutSegs, /proc/net/snmp)."""
    lines = [ln.split() for ln in Path("/proc/net/snmp").read_text().splitlines()]
    names, values = [ln for ln in lines if ln[0] == "Tcp:"][:2]
    return int(values[names.index("OutSegs")])


@dataclass
class Run:
    """Run is what one generator's process cost: stdout, CPU (user, sys), peak RSS (KiB), the
    machine's TCP segments sent meanwhile and its exit status."""

    out: str
    user: float
    sys: float
    rss: int
    segs: int
    code: int = 0


def measure(argv: list[str], timeout: float) -> Run:
    """measure runs argv to its end (killed past `timeout` seconds)."""
    segs = out_segs()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + timeout
    out = []
    assert proc.stdout is not None
    for line in proc.stdout:
        out.append(line)
        if time.monotonic() > deadline:
            proc.kill()
    _, status, ru = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Run(
        "".join(out),
        ru.ru_utime,
        ru.ru_stime,
        ru.ru_maxrss,
        out_segs() - segs,
        proc.returncode,
    )


def start_target() -> tuple[subprocess.Popen[str], str]:
    argv = pinned("0", [str(VENV_BIN / "redline"), "target", "--threads", "1"])
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        m = re.search(r"(http://127\.0\.0\.1:\d+)", line)
        if m:
            return proc, m.group(1)
    raise RuntimeError("redline target did not start")


def start_taskqueue(
    data_dir: str, *flags: str, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[str], str]:
    """start_taskqueue starts `taskqueue serve` on core 0 with one factorial worker (`env`:
    its environment, else this process's) and returns it with its URL."""
    argv = pinned(
        "0",
        [
            str(VENV_BIN / "taskqueue"),
            "serve",
            "--port",
            "0",
            "--data-dir",
            data_dir,
            "--workers",
            "1",
            *flags,
        ],
    )
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        m = re.search(r"(http://127\.0\.0\.1:\d+)", line)
        if m:
            return proc, m.group(1)
    raise RuntimeError("taskqueue did not start")


def finished_task(url: str) -> str:
    req = urllib.request.Request(
        url + "/tasks/submissions",
        method="POST",
        data=b'{"type":"factorial","n":10}',
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=10) as r:
        tid = json.loads(r.read())["id"]
    for _ in range(100):
        with urllib.request.urlopen(f"{url}/tasks/submissions/{tid}", timeout=10) as r:
            if json.loads(r.read())["status"] in ("SUCCEEDED", "FAILED"):
                return tid
        time.sleep(0.05)
    raise RuntimeError("task did not finish")


#: Row: tool, what, server, requests, run.
Row = tuple[str, str, str, int, Run]


def against(server: str, url: str, secs: int, locust: str, tmp: str) -> list[Row]:
    """against runs wrk, redline and Locust in turn against one server at `url`."""
    rows: list[Row] = []
    tid = finished_task(url)
    r = measure(
        pinned("1", ["wrk", "-t1", f"-c{USERS}", f"-d{secs}s", f"{url}/tasks/submissions/{tid}"]),
        secs + 30,
    )
    n = int(re.search(r"(\d+) requests in", r.out).group(1))
    rows.append(("wrk", "GET status", server, n, r))

    js = Path(tmp) / f"redline-{server}.json"
    argv = [str(VENV_BIN / "redline"), "run", str(HERE / "seed000_flow.py"), "--host", url]
    argv += ["-u", str(USERS), "-d", f"{secs}s", "-t", "1", "-q", "--json", str(js)]
    r = measure(pinned("1", argv), secs + 60)
    doc = json.loads(js.read_text())
    n = doc["requests"] + doc["errors_total"] - doc["errors"]["status"] - doc["errors"]["check"]
    rows.append(("redline", "seed-000 flow", server, n, r))
    # The same run's engine alone (the report's process CPU during the load), without the
    # command's start-up: Python, its imports and the compile (shown as user time).
    engine = Run("", doc["generator"]["cpu_s"], 0.0, r.rss, r.segs)
    rows.append(("redline (engine only)", "seed-000 flow", server, n, engine))

    if locust:
        prefix = Path(tmp) / f"locust-{server}"
        argv = [locust, "-f", str(HERE / "locustfile.py"), "--headless", "-u", str(USERS)]
        argv += ["-r", str(USERS), "-t", f"{secs}s", "-H", url, "--csv", str(prefix)]
        r = measure(pinned("1", [*argv, "--only-summary"]), secs + 60)
        with open(f"{prefix}_stats.csv") as f:
            agg = [row for row in csv.DictReader(f) if row["Name"] == "Aggregated"][0]
        n = int(agg["Request Count"])
        rows.append(("locust", "seed-000 flow (FastHttpUser)", server, n, r))
    return rows


def table(rows: list[Row]) -> str:
    """table renders the rows, each ratio taken on its own server."""
    lines = [
        "| server | tool | what | requests | CPU s (user + sys) | CPU µs/req | to wrk | "
        "Locust ÷ it | segs/req | peak RSS MB |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]

    def us(row: Row) -> float:
        n, r = row[3], row[4]
        return (r.user + r.sys) / n * 1e6 if n else float("nan")

    for tool, what, server, n, r in rows:
        mine = [row for row in rows if row[2] == server]
        wrk = next(us(row) for row in mine if row[0] == "wrk")
        loc = next((us(row) for row in mine if row[0] == "locust"), float("nan"))
        cost = us((tool, what, server, n, r))
        vs_locust = f"{loc / cost:.1f}×" if tool != "locust" and loc == loc else ""
        cpu = f"{r.user + r.sys:.2f} ({r.user:.2f} + {r.sys:.2f})" if r.sys else f"{r.user:.2f}"
        lines.append(
            f"| {server} | {tool} | {what} | {n:,} | {cpu} | {cost:.1f} | {cost / wrk:.2f}× | "
            f"{vs_locust} | {r.segs / n:.2f} | {r.rss / 1024:.0f} |"
        )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument(
        "--locust",
        default=shutil.which("locust") or "",
        help="the locust executable (skipped when missing)",
    )
    ap.add_argument("--server", choices=["target", "taskqueue", "both"], default="both")
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args()
    start = record.Context.now()
    rows: list[Row] = []
    servers = ["target", "taskqueue"] if args.server == "both" else [args.server]
    with tempfile.TemporaryDirectory() as tmp:
        for name in servers:
            server, url = start_target() if name == "target" else start_taskqueue(tmp)
            try:
                rows += against(name, url, args.seconds, args.locust, tmp)
            finally:
                server.terminate()
                server.wait(timeout=10)
    text = table(rows)
    print(text)
    if not args.no_record:
        record.append("scenarios", "seed-000 flow: client CPU per request", start, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
