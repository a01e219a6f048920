"""cluster: the driver's merge at seed 003's scale (issue 16: under 50 ms per interval).

    .venv/bin/python bench/cluster.py [INJECTORS] [INTERVALS]

Makes real interval snapshots (short runs against the bundled target at rising
concurrency, 250 ms intervals of some thousands of responses each, so each carries a real,
well-filled HdrHistogram), deals them out as INJECTORS injectors' snapshots
(default 250), and times what the driver does each interval: merge the INJECTORS snapshots
of one interval (``merge_snapshots``: histograms bucket for bucket, counters summed). It
runs INTERVALS intervals (default 60) and prints the median and worst merge time, the
snapshot size, and the driver's memory: the peak Python allocation (tracemalloc) while
holding the merged time series, as the ClusterHandle keeps it (one merged snapshot per
interval, not every injector's).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import record  # noqa: E402
import redline  # noqa: E402
from redline.cluster.merge import merge_snapshots  # noqa: E402


def snapshots(n: int) -> list[dict[str, object]]:
    """snapshots: at least ``n`` real interval snapshots, from runs of rising concurrency
    against a fast target and a queue (4 slots x 2 ms: queueing spreads the latencies over
    two decades, so the histograms are as full as a real service's)."""
    out: list[dict[str, object]] = []
    with (
        redline.Target(threads=1) as fast,
        redline.Target(threads=1, capacity=4, service_time="2ms") as queue,
    ):
        c = 1
        while len(out) < n:
            for t in (fast, queue):
                r = redline.run(t.url, connections=4 * c, duration=2.0, threads=1, interval=0.25)
                out += [s for s in r.data["timeseries"] if s["requests"] > 0]
            c += 1
    return out


def main(injectors: int, intervals: int) -> None:
    ctx = record.Context.now()
    pool = snapshots(64)
    size = statistics.median(len(json.dumps(s)) for s in pool)
    answered = statistics.median(int(s["requests"]) for s in pool)  # type: ignore[call-overload]
    times = []
    tracemalloc.start()
    series = []
    for k in range(intervals):
        batch = [pool[(k + i) % len(pool)] for i in range(injectors)]
        t0 = time.perf_counter()
        series.append(merge_snapshots(batch, injectors))
        times.append(time.perf_counter() - t0)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    ms = sorted(1000 * t for t in times)
    lines = [
        f"injectors {injectors}, intervals {intervals}, snapshot ~{size / 1024:.1f} KiB (JSON), "
        f"~{answered:.0f} responses each",
        f"merge per interval: median {statistics.median(ms):.1f} ms, "
        f"p90 {ms[int(0.9 * (len(ms) - 1))]:.1f} ms, worst {ms[-1]:.1f} ms (goal < 50 ms)",
        f"driver memory: peak {peak / 2**20:.1f} MiB of Python allocations (tracemalloc) while "
        f"merging and holding {intervals} merged intervals "
        f"({peak / intervals / 1024:.0f} KiB per interval)",
    ]
    text = "\n".join(f"- {line}" for line in lines) + "\n"
    print(text, end="")
    record.append("cluster", f"the driver's merge of {injectors} injectors", ctx, text)


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:3]]
    main(*(args + [250, 60][len(args) :]))
