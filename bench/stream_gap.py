"""Streamed answers' timing against the test server's SSE probe, over HTTP/1.1 and HTTP/2.

Issue 38's probe (first event 200 ms after the request, then one every 20 ms, 50 events; 12
requests, 4 at a time: 4 HTTP/1.1 connections, or 2 HTTP/2 connections of 2 streams), as
tests/test_stream.py runs it, repeated --reps times with the protocols (and the builds)
interleaved, each run a client process of its own against a `redline target` (one thread) of
the build under test. Per server, client and protocol: the events counted against the
server's, the p50 and p99 of the first byte and of the gaps (medians over the runs), each run's
gap p99, and the p99 of all their gaps pooled (their histograms merged), against the probe's
truth: 200 ms and 20 ms.

    .venv/bin/python bench/stream_gap.py [--reps 5] [--baseline [NAME=]DIR] [--wire]
        [--server-fifo] [--no-record]

--baseline DIR adds the rows of another build (DIR: a copy of python/ holding its extension),
as in bench/http1.py: its client against its server, and each client against the other's
server, so that a change on either side shows as such. NAME=DIR names it. --wire adds the
gaps as the wire saw them (bench/wiregap.py: a loopback capture of what the server sent, needs
root): the gap a client reports above the wire's is the client's own lateness. --server-fifo
runs the servers as SCHED_FIFO processes (bench/grpc_gap.py's launcher), so that on a busy
machine they send on time and what is left to see is the client's. The table is appended to
bench/results/stream.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Callable, Hashable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

import record
import wiregap
from run import baseline_flags, read_baselines

#: PROBE and SHAPES: the issue's probe and each protocol's shape (tests/test_stream.py's).
PROBE = "/sse?first=200ms&every=20ms&events=50"
SHAPES = {
    "http/1.1": {"connections": 4},
    "h2": {"connections": 2, "streams": 2, "http2": True},
}

#: ONE_RUN: what each run does, in its own process (the client's build on its PYTHONPATH).
ONE_RUN = """
import json, sys, urllib.request, redline
url, shape = sys.argv[1], json.loads(sys.argv[2])
def events():
    with urllib.request.urlopen(url.split("/sse")[0] + "/__stats", timeout=10) as f:
        return json.load(f)["stream_events"]
before = events()
r = redline.run(url, requests=12, stream=True, **shape)
h = r.data["histograms"]
print(json.dumps({
    "events": r.stream["events"], "served": events() - before,
    "first_byte": [r.first_byte.p50, r.first_byte.p99],
    "gap": [r.chunk_gap.p50, r.chunk_gap.p99], "gap_histogram": h["chunk_gap"],
}))
"""


def env_of(build: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    if build is not None:
        env["PYTHONPATH"] = str(build)
    return env


@contextlib.contextmanager
def server(
    build: Path | None, wrap: Callable[[list[str]], list[str]] | None = None
) -> Iterator[str]:
    """server runs `redline target --threads 1` of ``build`` (None: this tree's), its command
    line passed through ``wrap`` when given (bench/grpc_gap.py's SCHED_FIFO); yields its URL."""
    argv = [sys.executable, "-m", "redline", "target", "--threads", "1", "--port", "0"]
    if wrap is not None:
        argv = wrap(argv)
    proc = subprocess.Popen(argv, env=env_of(build), stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        url = line.strip().rsplit(" ", 1)[-1]
        if "://" not in url:
            raise RuntimeError(f"the target did not start: {line!r}")
        yield url.rstrip("/")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def one_run(build: Path | None, url: str, protocol: str, wire: bool = False) -> dict:
    """one_run runs the probe once over ``protocol`` against ``url`` with the client of
    ``build`` (None: this tree's); with ``wire``, its gaps as the wire saw them too."""
    argv = [sys.executable, "-c", ONE_RUN, url + PROBE, json.dumps(SHAPES[protocol])]
    with contextlib.ExitStack() as stack:
        port = int(url.rsplit(":", 1)[-1])
        cap = stack.enter_context(wiregap.Capture(port)) if wire else None
        out = subprocess.run(
            argv, env=env_of(build), capture_output=True, text=True, timeout=120, check=True
        )
    got = json.loads(out.stdout.strip().splitlines()[-1])
    if cap is not None:
        w = cap.gaps()
        got["wire"] = [w.p50_ms, w.p99_ms, w.events]
    return got


#: Arrangement: what one run of an interleaved bench is (a server and a client, a protocol).
Arrangement = TypeVar("Arrangement", bound=Hashable)


def interleaved(
    reps: int,
    arrangements: Sequence[Arrangement],
    one: Callable[[Arrangement], dict],
    said: Callable[[Arrangement, dict], str],
) -> dict[Arrangement, list[dict]]:
    """interleaved runs ``one`` of each arrangement in turn, ``reps`` rounds (so the box's
    load falls on all alike), and returns each arrangement's runs; each run is a line: what
    ``said`` says of it, and the load average."""
    runs: dict[Arrangement, list[dict]] = {}
    for rep in range(reps):
        for arrangement in arrangements:
            got = one(arrangement)
            runs.setdefault(arrangement, []).append(got)
            print(
                f"rep {rep + 1} {said(arrangement, got)}, load {os.getloadavg()[0]:.1f}",
                flush=True,
            )
    return runs


def medians(runs: list[dict], key: str, at: Sequence[int]) -> list[float]:
    """medians: over the runs, the median of each figure ``run[key][i]``, ``i`` in ``at``."""
    return [statistics.median(r[key][i] for r in runs) for i in at]


def gap_cells(runs: list[dict], p99: int) -> str:
    """gap_cells: the last cells of an arrangement's row: each run's gap p99 (``gap[p99]``),
    the p99 of all their gaps pooled, and how far that is from the probe's 20 ms."""
    pooled = pooled_p99([r["gap_histogram"] for r in runs])
    each = ", ".join(f"{r['gap'][p99]:.2f}" for r in runs)
    return f" {each} | {pooled:.2f} | {100 * (pooled - 20) / 20:+.1f} % |"


def pooled_p99(histograms: list[str]) -> float:
    """pooled_p99: the p99 of the merged histograms (µs), in ms."""
    from redline import _engine

    merged = _engine.merge_histograms(histograms)
    _, (p99,) = _engine.histogram_quantiles(merged, [0.99])
    return p99 / 1000.0


def wire_cells(rs: list[dict]) -> str:
    """wire_cells: the wire's gap p50 / p99 (medians over the runs) and each run's p99."""
    p50, p99 = medians(rs, "wire", (0, 1))
    each = ", ".join(f"{r['wire'][1]:.2f}" for r in rs)
    return f" {p50:.2f} / {p99:.2f} | {each} |"


def wire_said(got: dict) -> str:
    """wire_said: a run's wire gaps in its progress line ("" when not captured)."""
    if "wire" not in got:
        return ""
    p50, p99, events = got["wire"]
    return f", wire {p50:.2f}/{p99:.2f} ms ({events})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument(
        "--wire", action="store_true", help="the gaps as the wire saw them too (needs root)"
    )
    ap.add_argument(
        "--server-fifo", action="store_true", help="the servers as SCHED_FIFO processes"
    )
    baseline_flags(ap)
    args = ap.parse_args()
    builds: list[tuple[str, Path | None]] = [("this tree", None), *read_baselines(args)]
    ctx = record.Context.now()
    with contextlib.ExitStack() as stack:
        from grpc_gap import fifo  # it imports this module: here, not at the top

        wrap = fifo if args.server_fifo else None
        urls = {name: stack.enter_context(server(build, wrap)) for name, build in builds}
        client = dict(builds)
        runs = interleaved(
            args.reps,
            [(s, c, p) for s in urls for c, _ in builds for p in SHAPES],
            lambda a: one_run(client[a[1]], urls[a[0]], a[2], args.wire),
            lambda a, got: (
                f"server {a[0]}, client {a[1]}, {a[2]}: gap p50/p99"
                f" {got['gap'][0]:.2f}/{got['gap'][1]:.2f} ms{wire_said(got)}, first byte p99"
                f" {got['first_byte'][1]:.2f} ms, events {got['events']}/{got['served']}"
            ),
        )
    wired = " wire gap p50 / p99 (ms) | wire gap p99, each run (ms) |" if args.wire else ""
    lines = [
        "| server | client | protocol | events = server's | first byte p50 / p99 (ms)"
        f" | gap p50 / p99 (ms) | gap p99, each run (ms) | gap p99 pooled (ms) | vs 20 ms |{wired}",
        "|---|---|---|---|---|---|---|---|---|" + "---|---|" * bool(args.wire),
    ]
    for (srv, cli, protocol), rs in runs.items():
        exact = all(r["events"] == r["served"] == 600 for r in rs)
        fb, gap = medians(rs, "first_byte", (0, 1)), medians(rs, "gap", (0, 1))
        lines.append(
            f"| {srv} | {cli} | {protocol} | {'yes' if exact else 'NO'} |"
            f" {fb[0]:.2f} / {fb[1]:.2f} | {gap[0]:.2f} / {gap[1]:.2f} |{gap_cells(rs, 1)}"
            + (wire_cells(rs) if args.wire else "")
        )
    text = "\n".join(lines) + (
        f"\n\nMedians of {args.reps} interleaved runs (the p50 and p99 columns)"
        + (", the servers SCHED_FIFO" if args.server_fifo else "")
        + "; builds: "
        + ", ".join(f"{n} ({b or 'python/'})" for n, b in builds)
        + ".\n"
    )
    record.publish("stream", "--stream against the SSE probe", ctx, text, not args.no_record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
