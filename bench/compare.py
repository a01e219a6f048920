"""compare: how long `redline compare` takes, and how much memory, on two 10-minute results.

The compare issue's goal: comparing two results of 10-minute runs takes under 2 s and
200 MB. This records two real 10-minute runs of a two-name scenario (the "slow" name 10 ms,
then 15 ms) against the bundled target server, both at once in the open model (each its own
target on its own port, 100 iterations/s: 200 requests a second, a few percent of a CPU),
with 1 s intervals: 600 intervals of histograms per name. Then it times
`redline compare BASE NEW --markdown --report` as a fresh process, five times, and records
the wall time (median and worst) and the peak RSS (ru_maxrss of the child), with the two
files' sizes, in bench/results/compare.md.

    .venv/bin/python bench/compare.py                      # 10 minutes of runs, then the timing
    .venv/bin/python bench/compare.py --keep /tmp/cmp      # keep base.json and new.json there
    .venv/bin/python bench/compare.py --reuse /tmp/cmp     # time the compare of kept results
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import record  # noqa: E402
from test_compare_runs import TWO_NAMES  # noqa: E402

#: SCENARIO: two request names; "slow" answers after --var SLOW (the base 10 ms, the new 15),
#: the scenario of the compare tests.
SCENARIO = TWO_NAMES

GOAL_S, GOAL_MB = 2.0, 200.0


def redline(*args: str) -> list[str]:
    return [sys.executable, "-m", "redline", *args]


def record_runs(out: Path, duration: str, rate: int) -> None:
    """record_runs makes base.json and new.json in ``out``: both runs at once, each against
    a target server of its own (stopped after)."""
    scenario = out / "two.py"
    scenario.write_text(SCENARIO)
    targets, runs = [], []
    try:
        for label, slow in (("base", "10ms"), ("new", "15ms")):
            log = (out / f"target-{label}.log").open("wb")
            t = subprocess.Popen(
                redline("target", "--port", "0", "--threads", "1"), stdout=log, stderr=log
            )
            targets.append(t)
            deadline = time.monotonic() + 30
            while not (
                m := re.search(
                    rb"http://127\.0\.0\.1:\d+", (out / f"target-{label}.log").read_bytes()
                )
            ):
                if time.monotonic() > deadline or t.poll() is not None:
                    raise SystemExit(f"the {label} target did not start")
                time.sleep(0.05)
            argv = ["run", str(scenario), "--host", m.group(0).decode(), "--var", f"SLOW={slow}"]
            argv += ["--rate", str(rate), "-d", duration, "--interval", "1s", "-q"]
            argv += ["--json", str(out / f"{label}.json")]
            runs.append(subprocess.Popen(redline(*argv), stdout=log, stderr=log))
        for r in runs:
            if r.wait() != 0:
                raise SystemExit(f"a run exited {r.returncode}")
    finally:
        for p in runs + targets:
            if p.poll() is None:
                p.terminate()
                p.wait(10)


def time_compare(base: Path, new: Path, work: Path) -> tuple[float, float]:
    """time_compare runs one compare as a fresh process: wall seconds and its peak RSS in MB
    (the children's ru_maxrss is the largest of any waited-for child so far, so each timing
    runs in a process of its own that reports its one child)."""
    probe = (
        "import resource, subprocess, sys, time, json\n"
        "t0 = time.perf_counter()\n"
        "p = subprocess.run(sys.argv[1:], capture_output=True)\n"
        "took = time.perf_counter() - t0\n"
        "if p.returncode not in (0, 1): sys.exit(p.stderr.decode()[-2000:])\n"
        "rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024\n"
        "print(json.dumps([took, rss]))\n"
    )
    argv = redline("compare", str(base), str(new), "--markdown", str(work / "c.md"))
    argv += ["--report", str(work / "c.html")]
    p = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"compare failed: {p.stderr[-2000:]}")
    took, rss = json.loads(p.stdout)
    return float(took), float(rss)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", default="10m", help="each run's length (default 10m)")
    ap.add_argument("--rate", type=int, default=100, help="iterations a second (default 100)")
    ap.add_argument("--repeat", type=int, default=5, help="timed compares (default 5)")
    ap.add_argument("--keep", type=Path, help="keep the two results in this directory")
    ap.add_argument("--reuse", type=Path, help="time the results kept in this directory")
    ap.add_argument("--no-record", action="store_true", help="print, do not append")
    args = ap.parse_args()
    ctx = record.Context.now()
    with tempfile.TemporaryDirectory(prefix="redline-bench-compare-") as tmp:
        where = args.reuse or args.keep or Path(tmp)
        where.mkdir(parents=True, exist_ok=True)
        if args.reuse is None:
            record_runs(where, args.duration, args.rate)
        base, new = where / "base.json", where / "new.json"
        doc = json.loads(base.read_text())
        intervals = len(doc.get("timeseries") or [])
        names = len(doc.get("per_name") or {})
        timings = [time_compare(base, new, Path(tmp)) for _ in range(args.repeat)]
        verdict = subprocess.run(
            redline("compare", str(base), str(new)), capture_output=True, text=True
        ).stdout
        size = (base.stat().st_size + new.stat().st_size) / 2**20
    walls = [t for t, _ in timings]
    rss = max(r for _, r in timings)
    ok = max(walls) < GOAL_S and rss < GOAL_MB
    lines = [
        f"Two results of {doc.get('duration_s', 0):.0f} s runs"
        f" ({args.duration}, {intervals} intervals, {names} request names, {size:.1f} MiB of JSON"
        f" together), compared {args.repeat} times as a fresh `redline compare` process each"
        " (with --markdown and --report):",
        "",
        "| wall time, median | wall time, worst | peak RSS | goal | met |",
        "| ---: | ---: | ---: | --- | --- |",
        f"| {statistics.median(walls):.2f} s | {max(walls):.2f} s | {rss:.0f} MB |"
        f" < {GOAL_S:g} s and < {GOAL_MB:g} MB | {'yes' if ok else 'NO'} |",
        "",
        "What it said (slow 10 ms against 15 ms):",
        "",
        "```text",
        verdict.strip(),
        "```",
    ]
    text = "\n".join(lines)
    print(text)
    if not args.no_record:
        record.append("compare", "redline compare on two 10-minute results", ctx, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
