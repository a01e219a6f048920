"""watch_cost: what watching a deployment costs the client (issue 34: a run with ``--watch``
of three parts costs no more than 5 % more client CPU per request than without).

Runs ``redline run`` against the bundled target (its own process, so its CPU is not the
client's) with and without ``--watch`` of three parts, side by side, alternating: the
target's process tree (``pid:``), its listening socket and accept queue (``port:``) and an
exporter's page (``prometheus:``, a page of 200 series served from this script's own
thread, as postgres_exporter or node_exporter would serve). Each run's client CPU is the
redline process's user + system time (``os.wait4``'s rusage, its threads and the monitors'
included); per request, it is that over the requests the run reports. The rows give each
repetition and the medians' ratio. Results go to bench/results/watch.md (bench/record.py).

    .venv/bin/python bench/watch_cost.py                  # 5 pairs of 5 s runs, 16 connections
    .venv/bin/python bench/watch_cost.py --reps 3 --seconds 3 --no-record
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import record  # noqa: E402

REDLINE = str(Path(sys.executable).parent / "redline")

#: SCRAPES: how many times the exporter's page was served.
SCRAPES = [0]


def page() -> bytes:
    """page: an exporter's page of 200 series: 100 gauges (10 of them in-use/limit pairs)
    and 100 counters that grow every scrape."""
    n = SCRAPES[0] = SCRAPES[0] + 1
    lines = []
    for i in range(5):
        lines += [f"# TYPE pool{i}_in_use gauge", f"pool{i}_in_use {i + 1}"]
        lines += [f"# TYPE pool{i}_limit gauge", f"pool{i}_limit 10"]
    for i in range(90):
        lines += [f"# TYPE g{i} gauge", f'g{i}{{k="{i}"}} {i * 1.5}']
    for i in range(100):
        lines += [f"# TYPE c{i}_total counter", f'c{i}_total{{k="{i}"}} {n * (i + 1)}']
    return ("\n".join(lines) + "\n").encode()


class Exporter(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        body = page()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def start_target() -> tuple[subprocess.Popen[bytes], str, Path]:
    log = Path(tempfile.mkstemp(prefix="redline-watch-target-")[1])
    proc = subprocess.Popen(
        [REDLINE, "target", "--threads", "1", "--port", "0"],
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        m = re.search(rb"(http://127\.0\.0\.1:[0-9]+)", log.read_bytes())
        if m:
            return proc, m.group(1).decode(), log
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    raise SystemExit("the target did not start: " + log.read_text())


def one(url: str, watch: list[str], args: argparse.Namespace) -> dict[str, float]:
    """one runs redline once and returns its client CPU (s), requests and CPU per request."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        argv = [REDLINE, "run", f"{url}/?latency=1ms", "-c", str(args.connections)]
        argv += ["-d", f"{args.seconds}s", "--quiet", "--json", out.name]
        for w in watch:
            argv += ["--watch", w]
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            raise SystemExit(f"redline exited {proc.returncode}: {proc.stderr.read().decode()}")  # type: ignore[union-attr]
        data = json.loads(Path(out.name).read_text())
    cpu = usage.ru_utime + usage.ru_stime
    parts = len((data.get("parts") or {}).get("specs") or {})
    return {
        "cpu_s": cpu,
        "requests": data["requests"],
        "us": 1e6 * cpu / data["requests"],
        "parts": parts,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5, help="pairs of runs (default 5)")
    ap.add_argument("--seconds", type=float, default=5.0, help="each run's length (default 5)")
    ap.add_argument("--connections", type=int, default=16, help="-c (default 16)")
    ap.add_argument("--no-record", action="store_true", help="print, do not append")
    args = ap.parse_args()
    ctx = record.Context.now()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Exporter)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    exporter = f"http://127.0.0.1:{server.server_address[1]}/metrics"
    proc, url, log = start_target()
    port = url.rsplit(":", 1)[1]
    watch = [f"api=pid:{proc.pid}", f"lb=port:{port}", f"db=prometheus:{exporter}"]
    rows: list[tuple[int, dict[str, float], dict[str, float]]] = []
    try:
        for i in range(1, args.reps + 1):
            # Alternate which goes first: a machine that drifts over a pair favours neither.
            order = [("without", []), ("with", watch)]
            if i % 2 == 0:
                order.reverse()
            got = {name: one(url, w, args) for name, w in order}
            rows.append((i, got["without"], got["with"]))
            print(
                f"pair {i}: without {got['without']['us']:.2f} us/request"
                f" ({got['without']['requests']:,} requests), with {got['with']['us']:.2f}"
                f" ({got['with']['requests']:,}; {got['with']['parts']} parts)",
                flush=True,
            )
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(10)
        log.unlink(missing_ok=True)
        server.shutdown()
    a = statistics.median(r[1]["us"] for r in rows)
    b = statistics.median(r[2]["us"] for r in rows)
    lines = [
        "| pair | without: requests | CPU/request | with --watch (3 parts): requests"
        " | CPU/request | with / without |",
        "| ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for i, x, y in rows:
        lines.append(
            f"| {i} | {x['requests']:,} | {x['us']:.2f} µs | {y['requests']:,} | {y['us']:.2f} µs |"
            f" {y['us'] / x['us']:.3f} |"
        )
    lines.append("")
    lines.append(
        f"Medians: {a:.2f} µs a request without, {b:.2f} µs with --watch of three parts:"
        f" {b / a - 1:+.1%} (the issue's bound: +5 %). Client CPU is the redline process's user"
        f" + system time, -c {args.connections}, {args.seconds:g} s runs against"
        " /?latency=1ms of the bundled target in its own process."
    )
    text = "\n".join(lines)
    print(text)
    if not args.no_record:
        record.append("watch", "--watch of three parts: client CPU per request", ctx, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
