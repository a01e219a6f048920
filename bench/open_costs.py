"""Where the open model's CPU a request goes, against wrk2's, as counts the busy box does not blur.

bench/http1.py's line charges each generator's whole process to the requests nginx answered, so
redline's start (the Python interpreter, the CLI's imports, the report: ~0.2 s of CPU, against
wrk2's millisecond) sits in every row, and its timings move with the load of the shared 2-core
box. This bench runs the same pairs at fixed rates, interleaved, each under ``perf stat`` (the
whole process, every thread), and splits the figure:

- process CPU µs/req: perf's task-clock over the requests nginx counted (http1.py's meter);
- engine CPU µs/req: what redline's own report says its workers spent a request
  (``generator.cpu_us_per_request``: no Python in it);
- start ms: redline ``-n 1`` against the same nginx, in the same interleave (wrk2: none);
- syscalls a request (sends, receives, ``epoll_wait``, naps) and context switches a request:
  counts, which the load leaves alone where it moves times. redline's rows are counted less its
  start (the ``-n 1`` run's counts: the interpreter's file reads and writes), and an 8-byte
  ``write`` is counted apart as a wake-up, not a send: it is tokio's eventfd (mio's ``Waker``,
  written when a timer is registered earlier than the one the runtime last parked for), while
  wrk2's and redline's requests are longer;
- the send lag as the wire saw it (bench/sendlag.py: p50 / p99 ms behind an even schedule), so
  that the rows are read at a known send precision (the issue's line is at equal precision).

    .venv/bin/python bench/open_costs.py [--rates 2000,6000] [--reps 3] [--seconds 5]
                                         [--send-ahead 1ms] [--no-send-lag] [--no-record]

nginx, its pinning and the counting are bench/http1.py's; ``perf`` must be installed (its
software events and syscall tracepoints: no hardware counters needed). The table is appended to
bench/results/seam.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import record
import sendlag
from http1 import NGINX, StubStatus, nginx
from run import CLIENT_CORE, CONNS, peers, precompile, redline_argv

#: SYSCALLS: the tracepoints counted, by what they do for a request, each with the perf filter
#: it is counted under (None: every call). An 8-byte write is an eventfd's wake-up (see above).
SYSCALLS: dict[str, tuple[tuple[str, str | None], ...]] = {
    "send": (("sendto", None), ("sendmsg", None), ("write", "count != 8")),
    "wake": (("write", "count == 8"),),
    "recv": (("recvfrom", None), ("recvmsg", None), ("recvmmsg", None), ("read", None)),
    "epoll": (("epoll_wait", None), ("epoll_pwait", None)),
    "nap": (("clock_nanosleep", None), ("nanosleep", None)),
}


@dataclass
class Count:
    """Count: one run's figures, each a request's share (nginx's count)."""

    requests: int
    cpu_us: float
    engine_us: float | None
    per_req: dict[str, float]
    lag: sendlag.SendLag | None


def perf_stat(argv: list[str], url: str, served: StubStatus) -> tuple[dict[str, float], int]:
    """Runs argv pinned to the client core under ``perf stat``; returns its counters and the
    requests nginx answered meanwhile."""
    # Keys in the order perf prints the counters (a filtered event keeps its plain name).
    keys = ["task-clock", "context-switches"]
    flags = ["-e", "task-clock,context-switches"]
    for kind, calls in SYSCALLS.items():
        for name, only in calls:
            keys.append(f"{kind}:{name}")
            flags += ["-e", f"syscalls:sys_enter_{name}"] + (["--filter", only] if only else [])
    with tempfile.NamedTemporaryFile(suffix=".perf") as out:
        before = served(url)
        subprocess.run(
            ["taskset", "-c", CLIENT_CORE, "perf", "stat", "-x", ",", "-o", out.name]
            + [*flags, "--", *argv],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=120,
            check=False,
        )
        answered = served(url) - before
        rows = (line.split(",") for line in Path(out.name).read_text().splitlines())
        cells = [c for c in rows if len(c) > 2 and c[2]]
        counters = {
            key: float(c[0]) if c[0].replace(".", "", 1).isdigit() else 0.0
            for key, c in zip(keys, cells, strict=False)
        }
    return counters, answered


def count(
    argv: list[str], url: str, served: StubStatus, report: Path | None, rate: float | None = None
) -> Count:
    """count runs one generator and divides its counters by the requests nginx answered; with
    ``rate``, its requests' send lag behind an even schedule at that rate is captured too."""
    port = int(url.rsplit(":", 1)[1]) if rate else None
    with sendlag.maybe(port) as cap:
        c, n = perf_stat(argv, url, served)
    n = max(n, 1)
    per = {
        kind: sum(c.get(f"{kind}:{name}", 0.0) for name, _ in calls) / n
        for kind, calls in SYSCALLS.items()
    }
    per["switches"] = c.get("context-switches", 0.0) / n
    engine = None
    if report is not None and report.exists():
        engine = json.loads(report.read_text())["generator"]["cpu_us_per_request"]
    # task-clock is in milliseconds.
    lag = cap.lag(rate) if cap and rate else None
    return Count(n, c.get("task-clock", 0.0) * 1000 / n, engine, per, lag)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rates", default="2000,6000", help="open rates in req/s")
    ap.add_argument("--reps", type=int, default=3, help="interleaved repetitions (median kept)")
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--send-ahead", default="1ms", help="the send-ahead of the second redline row")
    ap.add_argument("--no-record", action="store_true", help="print the table only")
    ap.add_argument(
        "--no-send-lag", action="store_true", help="leave out the send lag (its capture needs root)"
    )
    args = ap.parse_args()
    ctx = record.Context.now()
    p = peers()
    if not p.get("WRK2") or not Path(NGINX).exists():
        print("bench: needs nginx and wrk2 (../shared/tools/install-peers.sh)", file=sys.stderr)
        return 2
    precompile()
    rates = [int(r) for r in args.rates.split(",")]
    lagged = not args.no_send_lag
    runs, starts = sweep(p["WRK2"], rates, args.reps, args.seconds, args.send_ahead, lagged)
    text = table(runs, starts, args.reps)
    print()
    print(text)
    if not args.no_record:
        title = "the open model's CPU a request, split and counted"
        where = record.append("seam", title, ctx, text)
        print(f"\nrecorded in {where}")
    return 0


def sweep(
    wrk2: str, rates: list[int], reps: int, seconds: int, send_ahead: str, lagged: bool
) -> tuple[dict[tuple[str, int], list[Count]], list[Count]]:
    """sweep runs redline's start, then wrk2, redline and redline with ``send_ahead`` at each
    rate, ``reps`` times interleaved against one nginx; returns the counts by (tool, rate) and
    the starts' counts. With ``lagged`` each run's send lag is captured."""
    served = StubStatus()
    runs: dict[tuple[str, int], list[Count]] = {}
    starts: list[Count] = []
    with nginx() as url, tempfile.TemporaryDirectory() as d:
        report = Path(d, "run.json")
        for rep in range(reps):
            start = count(redline_argv(url, "-n", "1"), url, served, None)
            starts.append(start)
            for rate in rates:
                secs = f"{seconds}s"
                flags = ["--rate", str(rate), "--max-connections", str(CONNS), "-d", secs]
                flags += ["--json", str(report)]
                rows = {
                    "wrk2": (
                        [wrk2, "-t1", f"-c{CONNS}", f"-d{secs}", f"-R{rate}", url + "/"],
                        None,
                    ),
                    "redline": (redline_argv(url, *flags), report),
                    f"redline --send-ahead {send_ahead}": (
                        redline_argv(url, *flags, "--send-ahead", send_ahead),
                        report,
                    ),
                }
                for tool, (argv, written) in rows.items():
                    report.unlink(missing_ok=True)
                    c = count(argv, url, served, written, rate if lagged else None)
                    runs.setdefault((tool, rate), []).append(c)
                    print(
                        f"  [{rep + 1}/{reps}] {tool} {rate:,}/s: {c.cpu_us:.1f} µs/req", flush=True
                    )
    return runs, starts


def table(runs: dict[tuple[str, int], list[Count]], starts: list[Count], reps: int) -> str:
    """The markdown table: medians of the repetitions; ratios to wrk2's process CPU. "less the
    start" takes redline's median start (the ``starts``' CPU) off its process CPU; its syscall
    counts are redline's less the start's too."""
    start_ms = statistics.median(s.cpu_us * s.requests / 1000 for s in starts)
    # The start's own calls (its `-n 1` run counted whole: per_req times its requests).
    start_calls = {
        k: statistics.median(s.per_req[k] * s.requests for s in starts) for k in starts[0].per_req
    }
    lines = [
        f"redline's start (`-n 1`, process CPU, median of {reps}): {start_ms:.0f} ms\n",
        "| tool | rate | process CPU µs/req | ratio to wrk2 | less the start | ratio to wrk2 "
        "| engine CPU µs/req | ratio to wrk2 "
        "| sends/req | wake-up writes/req | receives/req | epoll_wait/req | naps/req "
        "| context switches/req "
        "| send lag p50 / p99 ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for (tool, rate), cs in runs.items():
        peer = statistics.median(c.cpu_us for c in runs[("wrk2", rate)])
        cpu = statistics.median(c.cpu_us for c in cs)
        # The start's CPU spread over this row's requests (wrk2's start is negligible).
        less = (
            cpu
            if tool == "wrk2"
            else cpu - start_ms * 1000 / statistics.median(c.requests for c in cs)
        )
        engines = [c.engine_us for c in cs if c.engine_us is not None]
        engine = f"{statistics.median(engines):.1f}" if engines else "-"
        ratio = f"{statistics.median(engines) / peer:.2f}×" if engines else "-"

        def med(key: str, cs: list[Count] = cs, ours: bool = tool != "wrk2") -> str:
            less = start_calls.get(key, 0.0) if ours else 0.0
            return f"{statistics.median(c.per_req[key] - less / c.requests for c in cs):.3f}"

        lines.append(
            f"| {tool} | {rate:,}/s | {cpu:.1f} | {cpu / peer:.2f}× | {less:.1f} | "
            f"{less / peer:.2f}× | {engine} | {ratio} | "
            f"{med('send')} | {med('wake')} | {med('recv')} | {med('epoll')} | {med('nap')} | "
            f"{med('switches')} | "
            f"{lag_of(cs)} |"
        )
    return "\n".join(lines)


def lag_of(cs: list[Count]) -> str:
    """lag_of is the median of the runs' send-lag p50s and p99s ("-" when not captured)."""
    lags = [c.lag for c in cs if c.lag is not None]
    if not lags:
        return "-"
    p50 = statistics.median(g.p50_ms for g in lags)
    return f"{p50:.3f} / {statistics.median(g.p99_ms for g in lags):.3f}"


if __name__ == "__main__":
    sys.exit(main())
