"""Client CPU per request of the seed-000 flow (issue 8, "Performance"), in one run:

    .venv/bin/python bench/scenarios/run.py [--seconds 10] [--locust PATH] [--no-record]

against one taskqueue (`taskqueue serve --port 0`, fresh data dir, pinned to core 0):
  wrk      plain GET of one finished task's status (the reference: wrk's cost of a request)
  redline  bench/scenarios/seed000_flow.py (submit, poll until done, result), 50 VUs, 1 thread
           (and the same run's engine CPU alone, from its report, without the start-up)
  locust   bench/scenarios/locustfile.py, the same flow with FastHttpUser, 50 users
Each generator runs pinned to core 1; its CPU is the kernel's rusage of its process (wait4:
user + sys, Python start-up and compile included for redline and locust), its requests are
what it counted (redline: answered + failed; the server is the same for all three). Ratios
are to wrk in the same run. Results are appended to bench/results/scenarios.md.
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
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import record  # noqa: E402

VENV_BIN = Path(sys.executable).parent
USERS = 50


def pinned(core: str, argv: list[str]) -> list[str]:
    return (["taskset", "-c", core] if shutil.which("taskset") else []) + argv


def measure(argv: list[str], timeout: float) -> tuple[str, float, int]:
    """measure runs argv; returns its stdout, CPU seconds (user + sys) and peak RSS (KiB)."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + timeout
    out = []
    assert proc.stdout is not None
    for line in proc.stdout:
        out.append(line)
        if time.monotonic() > deadline:
            proc.kill()
    _, _, ru = os.wait4(proc.pid, 0)
    return "".join(out), ru.ru_utime + ru.ru_stime, ru.ru_maxrss


def start_taskqueue(data_dir: str, *flags: str) -> tuple[subprocess.Popen[str], str]:
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
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument(
        "--locust",
        default=shutil.which("locust") or "",
        help="the locust executable (skipped when missing)",
    )
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args()
    start = record.Context.now()
    secs = args.seconds
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        server, url = start_taskqueue(tmp)
        try:
            tid = finished_task(url)
            out, cpu, rss = measure(
                pinned(
                    "1",
                    ["wrk", "-t1", f"-c{USERS}", f"-d{secs}s", f"{url}/tasks/submissions/{tid}"],
                ),
                secs + 30,
            )
            n = int(re.search(r"(\d+) requests in", out).group(1))
            rows.append(("wrk", "GET status", n, cpu, rss))

            js = Path(tmp) / "redline.json"
            out, cpu, rss = measure(
                pinned(
                    "1",
                    [
                        str(VENV_BIN / "redline"),
                        "run",
                        str(HERE / "seed000_flow.py"),
                        "--host",
                        url,
                        "-u",
                        str(USERS),
                        "-d",
                        f"{secs}s",
                        "-t",
                        "1",
                        "-q",
                        "--json",
                        str(js),
                    ],
                ),
                secs + 60,
            )
            doc = json.loads(js.read_text())
            n = (
                doc["requests"]
                + doc["errors_total"]
                - doc["errors"]["status"]
                - doc["errors"]["check"]
            )
            rows.append(("redline", "seed-000 flow", n, cpu, rss))
            # The same run's engine alone (the report's process CPU during the load), without
            # the command's start-up: Python, its imports and the compile.
            rows.append(
                ("redline (engine only)", "seed-000 flow", n, doc["generator"]["cpu_s"], rss)
            )

            if args.locust:
                prefix = Path(tmp) / "locust"
                out, cpu, rss = measure(
                    pinned(
                        "1",
                        [
                            args.locust,
                            "-f",
                            str(HERE / "locustfile.py"),
                            "--headless",
                            "-u",
                            str(USERS),
                            "-r",
                            str(USERS),
                            "-t",
                            f"{secs}s",
                            "-H",
                            url,
                            "--csv",
                            str(prefix),
                            "--only-summary",
                        ],
                    ),
                    secs + 60,
                )
                with open(f"{prefix}_stats.csv") as f:
                    agg = [r for r in csv.DictReader(f) if r["Name"] == "Aggregated"][0]
                rows.append(
                    ("locust", "seed-000 flow (FastHttpUser)", int(agg["Request Count"]), cpu, rss)
                )
        finally:
            server.terminate()
            server.wait(timeout=10)
    wrk_us = rows[0][3] / rows[0][2] * 1e6
    lines = [
        "| tool | what | requests | client CPU s | CPU µs/req | ratio to wrk | peak RSS MB |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for tool, what, n, cpu, rss in rows:
        us = cpu / n * 1e6 if n else float("nan")
        lines.append(
            f"| {tool} | {what} | {n:,} | {cpu:.2f} | {us:.1f} | {us / wrk_us:.2f}× | "
            f"{rss / 1024:.0f} |"
        )
    table = "\n".join(lines)
    print(table)
    if not args.no_record:
        record.append("scenarios", "seed-000 flow: client CPU per request", start, table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
