"""cluster_cpu: what going through Ray costs the client, per request (issue 16: within 5 %).

    .venv/bin/python bench/cluster_cpu.py [RATE] [SECONDS] [PAIRS]

Runs the open model at RATE req/s (default 2000) for SECONDS (default 5) against the bundled
target (its own process, so its CPU is not the client's), once in this process and once with
``cluster="local:2"`` on a Ray started beforehand (its start is not counted), alternating,
PAIRS times (default 3). Both sides run the same engine threads at the same rate each: the
local run two threads, each injector one (an engine thread's CPU per request depends on the
rate it carries: its timer wakes and its syscalls are shared by the requests of one tick),
so the difference between the two is what Ray adds. Client CPU is everything on the client's
side during the run, divided by the requests answered: the CPU this process and its lasting
descendants (Ray's raylet, GCS and idle workers; not the target) used across the run, from
/proc via psutil, plus the injector actors' own process CPU over their runs (their reports'
``cpu_s``: they are gone when the run returns). Prints each run's figure, the medians and
their ratio, and the engine's own ``cpu_us_per_request`` for comparison.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import psutil  # noqa: E402
import ray  # noqa: E402
import record  # noqa: E402
import redline  # noqa: E402
from redline.cluster.connection import shutdown_ray  # noqa: E402

#: INJECTORS: the cluster's injectors (``local:2``), one engine thread each.
INJECTORS = 2


def tree_cpu(skip: int) -> dict[int, float]:
    """tree_cpu: CPU seconds of this process and each descendant but ``skip`` (the target)."""
    me = psutil.Process()
    out = {me.pid: sum(me.cpu_times()[:2])}
    for p in me.children(recursive=True):
        if p.pid == skip:
            continue
        try:
            out[p.pid] = sum(p.cpu_times()[:2])
        except psutil.Error:
            continue
    return out


def measure(
    url: str, skip: int, rate: float, secs: float, cluster: str | None
) -> tuple[float, float]:
    """measure: (client CPU µs per request, the engine's cpu_us_per_request) of one run."""
    before = tree_cpu(skip)
    threads = 1 if cluster else INJECTORS  # the same engine threads either way
    r = redline.run(url, rate=rate, duration=secs, threads=threads, cluster=cluster)
    after = tree_cpu(skip)
    used = sum(after[p] - before[p] for p in after if p in before)
    rows = (r.data.get("cluster") or {}).get("injectors") or []
    used += sum(float(row["cpu_s"]) for row in rows)
    return 1e6 * used / r.requests, float(r.data["generator"]["cpu_us_per_request"])


def main(rate: float, secs: float, pairs: int) -> None:
    ctx = record.Context.now()
    target = subprocess.Popen(
        [sys.executable, "-m", "redline", "target", "--port", "0", "--threads", "1"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert target.stdout is not None
        url = target.stdout.readline().split()[-1]
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        runs: dict[str, list[tuple[float, float]]] = {"local": [], f"local:{INJECTORS}": []}
        for _ in range(pairs):
            for mode in runs:
                cluster = None if mode == "local" else mode
                runs[mode].append(measure(url, target.pid, rate, secs, cluster))
    finally:
        shutdown_ray(ray)
        target.terminate()
        target.wait(timeout=30)
    lines = []
    for mode, got in runs.items():
        each = ", ".join(f"{c:.1f}" for c, _ in got)
        lines.append(
            f"{mode}: client CPU {statistics.median(c for c, _ in got):.1f} µs/request "
            f"(runs: {each}); engine's own {statistics.median(e for _, e in got):.1f}"
        )
    ratio = statistics.median(c for c, _ in runs[f"local:{INJECTORS}"]) / statistics.median(
        c for c, _ in runs["local"]
    )
    lines.append(f"ratio local:{INJECTORS} / local: {ratio:.3f} (goal: within 1.05)")
    text = (
        f"rate {rate:g} req/s for {secs:g} s, {pairs} pairs; {INJECTORS} engine threads on"
        f" each side (local: threads={INJECTORS}; local:{INJECTORS}: one per injector)\n\n"
    )
    text += "".join(f"- {x}\n" for x in lines)
    print(text, end="")
    record.append("cluster", "client CPU per request, local vs --cluster local:2", ctx, text)


if __name__ == "__main__":
    a = [*sys.argv[1:4], *["2000", "5", "3"][len(sys.argv[1:4]) :]]
    main(float(a[0]), float(a[1]), int(a[2]))
