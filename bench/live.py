"""live: what ``--web --prometheus`` cost the generator, per request (issue 17: within noise,
at most 2 %).

    .venv/bin/python bench/live.py [--pairs 5] [--rate 5000] [--seconds 8] [--no-record]

Two cases against the bundled target, each run in three modes, taken in turn PAIRS times so
a drift of the shared box falls on all alike:

- ``plain``: ``-q``, no listener: the engine hands Python no interval snapshot at all;
- ``view``: the terminal view (stderr): every interval's snapshot reaches Python, which is what
  any listener costs (the terminal view is on by default);
- ``live``: ``-q --web 0 --prometheus 0``, with ``/metrics`` scraped each second (a harsh
  Prometheus: the usual scrape is every 15 s or more).

The cases: ``url``, ``redline run URL --rate R`` (the run-wide books, one name), and
``scenario``, two named requests an iteration at R/2 iterations/s (the per-name books).

On a machine of two cores or more the generator is pinned to CPU 0 and the target (in this
process) to CPU 1, as the team's benchmarks compare: the server's work then never lands on
the generator's core.

Printed and recorded in ``bench/results/live.md`` (bench/record.py): CPU per request, each
run's and the medians, of the process (the result's ``generator`` figure), of the engine's
workers, and the rest (process - workers: the Python thread, the live servers, the engine's
snapshots), the ratios live/plain and live/view, and the plain runs' own spread (max/min - 1),
the noise they are judged against, and the ratios within each round (live ÷ plain and
live ÷ view of the runs taken one after the other: a drift of the box between rounds cancels)
with their median and range. The live endpoints work once per interval on the Python thread
and once per scrape, never per request.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
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
            except (OSError, http.client.HTTPException):
                return  # the run ended (a scrape may be cut short as the process exits)

    t = threading.Thread(target=scrape, daemon=True)
    t.start()
    proc.stderr.read()
    stop.set()
    t.join(5)


#: MODES: each mode's extra flags.
MODES = {"plain": ["-q"], "view": [], "live": ["-q", "--web", "0", "--prometheus", "0"]}


def measure(argv: list[str], mode: str, out: Path) -> tuple[float, float, float]:
    """measure runs ``redline run ARGV`` once in ``mode`` and returns the CPU µs per request
    of the process, of the engine's workers and of the rest."""
    cmd = [sys.executable, "-m", "redline", "run", *argv, "--json", str(out), *MODES[mode]]
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=(lambda: os.sched_setaffinity(0, {GENERATOR_CPU})) if PINNED else None,
    )
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
    process = float(g["cpu_us_per_request"])
    workers = 1e6 * float(g["worker_cpu_s"]) / result["requests"]
    return process, workers, process - workers


#: PINNED: the generator on GENERATOR_CPU, the target (this process) on TARGET_CPU.
PINNED = len(os.sched_getaffinity(0)) >= 2
GENERATOR_CPU, TARGET_CPU = 0, 1


def spread(xs: list[float]) -> float:
    """spread is max/min - 1: how far apart the runs of one mode fell."""
    return max(xs) / min(xs) - 1 if min(xs) > 0 else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", type=int, default=5, help="rounds (plain, view, live) a case")
    ap.add_argument("--rate", type=float, default=5000, help="requests per second")
    ap.add_argument("--seconds", type=float, default=8, help="each run's duration")
    ap.add_argument("--results", type=Path, help="append here instead of bench/results/")
    ap.add_argument("--no-record", action="store_true", help="print the table only")
    args = ap.parse_args()
    ctx = record.Context.now()
    if PINNED:
        os.sched_setaffinity(0, {TARGET_CPU})
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
            runs: dict[str, list[tuple[float, float, float]]] = {m: [] for m in MODES}
            for _ in range(args.pairs):
                for mode in MODES:
                    runs[mode].append(measure(argv, mode, Path(tmp) / "r.json"))
            for i, what in enumerate(("process", "workers", "rest")):
                each = {m: [r[i] for r in runs[m]] for m in MODES}
                rows.append((case, what, each))
    lines = [
        f"{args.pairs} rounds a case, {args.rate:g} req/s, {args.seconds:g} s each, "
        "interval 0.25 s; plain = `-q`, view = the terminal view, live = `-q --web 0 "
        "--prometheus 0` with /metrics scraped each second. CPU µs per request; medians, "
        "each run in brackets.",
        "",
        f"Generator pinned to CPU {GENERATOR_CPU}, target to CPU {TARGET_CPU}: {PINNED}.",
        "",
        "| case | CPU | plain | view | live | live/plain | live/view | plain spread "
        "| live/plain in a round | live/view in a round |",
        "|---|---|---|---|---|---:|---:|---:|---|---|",
    ]
    for case, what, each in rows:
        med = {m: statistics.median(v) for m, v in each.items()}
        cells = [f"{med[m]:.2f} ({', '.join(f'{x:.2f}' for x in each[m])})" for m in MODES]
        paired = [
            _paired([a / b for a, b in zip(each["live"], each[base], strict=True)])
            for base in ("plain", "view")
        ]
        lines.append(
            f"| {case} | {what} | {' | '.join(cells)} | {med['live'] / med['plain']:.3f} "
            f"| {med['live'] / med['view']:.3f} | {100 * spread(each['plain']):.1f} % "
            f"| {paired[0]} | {paired[1]} |"
        )
    text = "\n".join(lines)
    print(text)
    if not args.no_record:
        where = record.append(
            "live", "client CPU per request with and without --web --prometheus", ctx, text,
            args.results,
        )  # fmt: skip
        print(f"\nrecorded in {where}")
    return 0


def _paired(ratios: list[float]) -> str:
    """_paired: the median of the rounds' ratios and their range."""
    return f"{statistics.median(ratios):.3f} [{min(ratios):.3f}, {max(ratios):.3f}]"


if __name__ == "__main__":
    sys.exit(main())
