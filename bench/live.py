"""live: what ``--web --prometheus`` cost the generator, per request (issue 17: within noise,
at most 2 %).

    .venv/bin/python bench/live.py [--pairs 5] [--rate 5000] [--seconds 8] [--no-record]

Two cases against the bundled target, each run with and without ``--web 0 --prometheus 0``,
alternating plain and live PAIRS times so a drift of the shared box falls on both alike:

- ``url``: ``redline run URL --rate R`` (the run-wide books: one name);
- ``scenario``: a two-request scenario at R/2 iterations/s (the per-name books: two names,
  each interval's histograms merged and their sums estimated).

A scrape of ``/metrics`` every second during the live runs stands for Prometheus. Printed and
recorded in ``bench/results/live.md`` (bench/record.py): the process's CPU per request (the
result's ``generator`` figure, which includes the Python thread that feeds the live books)
and the engine workers' CPU per request, each run's figure, the medians and their ratio, and
the plain runs' own spread (max/min - 1) for the noise it is judged against. The live
endpoints work once per interval on the Python thread, never per request, so the ratio should
sit within that spread.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import urllib.request
from pathlib import Path

import record
import redline

#: SCENARIO: two named requests an iteration (the per-name books' work).
SCENARIO = """\
from redline.scenario import Scenario
s = Scenario()
@s.flow
def f(u):
    u.get("/a", name="a")
    u.get("/b", name="b")
"""


def scrape_while(proc: subprocess.Popen[str]) -> None:
    """scrape_while reads the Prometheus URL from the run's stderr and scrapes it each second
    until the run ends."""
    assert proc.stderr is not None
    url = None
    for line in proc.stderr:
        m = re.search(r"Prometheus metrics at (\S+)", line)
        if m:
            url = m.group(1)
            break
    stop = threading.Event()

    def scrape() -> None:
        while url and not stop.wait(1.0):
            try:
                urllib.request.urlopen(url, timeout=5).read()
            except OSError:
                return  # the run ended

    t = threading.Thread(target=scrape, daemon=True)
    t.start()
    proc.stderr.read()
    stop.set()
    t.join(5)


def measure(argv: list[str], live: bool, out: Path) -> tuple[float, float]:
    """measure runs ``redline run ARGV`` once and returns (process CPU µs / request, worker
    CPU µs / request)."""
    extra = ["--web", "0", "--prometheus", "0"] if live else []
    cmd = [sys.executable, "-m", "redline", "run", *argv, "-q", "--json", str(out), *extra]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        scrape_while(proc)
        code = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    if code != 0:
        raise SystemExit(f"live bench: {' '.join(cmd)} exited {code}")
    result = json.loads(out.read_text())
    g = result["generator"]
    return float(g["cpu_us_per_request"]), 1e6 * float(g["worker_cpu_s"]) / result["requests"]


def spread(xs: list[float]) -> float:
    """spread is max/min - 1: how far apart the runs of one mode fell."""
    return max(xs) / min(xs) - 1 if min(xs) > 0 else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", type=int, default=5, help="plain/live pairs per case")
    ap.add_argument("--rate", type=float, default=5000, help="requests per second")
    ap.add_argument("--seconds", type=float, default=8, help="each run's duration")
    ap.add_argument("--results", type=Path, help="append here instead of bench/results/")
    ap.add_argument("--no-record", action="store_true", help="print the table only")
    args = ap.parse_args()
    ctx = record.Context.now()
    rows = []
    with redline.Target(threads=1) as target, tempfile.TemporaryDirectory() as tmp:
        scenario = Path(tmp) / "two.py"
        scenario.write_text(SCENARIO)
        common = ["-d", f"{args.seconds:g}s", "--interval", "0.25s"]
        cases = {
            "url": [target.url + "/", "--rate", f"{args.rate:g}", *common],
            "scenario": [str(scenario), "--host", target.url, "--rate", f"{args.rate / 2:g}"]
            + common,
        }
        for case, argv in cases.items():
            runs: dict[str, list[tuple[float, float]]] = {"plain": [], "live": []}
            for _ in range(args.pairs):
                for mode in ("plain", "live"):
                    runs[mode].append(measure(argv, mode == "live", Path(tmp) / "r.json"))
            for i, what in enumerate(("process", "workers")):
                plain = [r[i] for r in runs["plain"]]
                live = [r[i] for r in runs["live"]]
                rows.append(
                    (case, what, plain, live, statistics.median(live) / statistics.median(plain))
                )
    lines = [
        f"{args.pairs} pairs a case, {args.rate:g} req/s, {args.seconds:g} s each, "
        "interval 0.25 s; live = `--web 0 --prometheus 0` with /metrics scraped each second.",
        "",
        "| case | CPU µs/request | plain (each run) | live (each run) | live/plain (medians) "
        "| plain spread |",
        "|---|---|---|---|---:|---:|",
    ]
    for case, what, plain, live, ratio in rows:
        each = ", ".join(f"{x:.2f}" for x in plain)
        each_live = ", ".join(f"{x:.2f}" for x in live)
        noise = f"{100 * spread(plain):.1f} %"
        lines.append(f"| {case} | {what} | {each} | {each_live} | {ratio:.3f} | {noise} |")
    text = "\n".join(lines)
    print(text)
    if not args.no_record:
        where = record.append(
            "live", "client CPU per request with and without --web --prometheus", ctx, text,
            args.results,
        )  # fmt: skip
        print(f"\nrecorded in {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
