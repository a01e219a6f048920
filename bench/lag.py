"""The generator's own lag kept out of the server's latency, and compare judging like with like.

    .venv/bin/python bench/lag.py [--runs 5] [--seconds 8] [--no-record]

A server answering in a fixed 4 ms (`redline target`, one thread, on core 1), redline at 400
req/s pinned to core 0, once quiet and once beside a busy loop on core 0 (the generator's
thread is then preempted for whole scheduler slices): the latency's p50 and p99 should agree
within 10 %, and the busy run's lag percentiles show the lag. Two more rows take core 0 with
a loop at SCHED_FIFO 10 that spins 3 ms of every 10 (as tests/test_lag.py does), where a
plain loop hardly delays the generator: its lag then shows at the p90 and p99.

Then the compare case: runs of the 4 ms server and of a 5 ms one (+25 %), 8 s each,
`redline compare base slow --fail-on 'p99:+10%'` must exit 1 every time, and two runs of the
same server 0, in the open model (400 req/s) and the closed one (`-c 2`), unpinned. The table
is appended to bench/results/lag.md (bench/record.py).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import record

#: REDLINE: this Python's redline (python -m, so that a PYTHONPATH build runs as well).
REDLINE = [sys.executable, "-m", "redline"]


@contextlib.contextmanager
def target(realtime: bool) -> Iterator[str]:
    """target runs `redline target` (one thread) on core 1 and yields its URL; `realtime`:
    at SCHED_FIFO priority 50, so that a loaded machine does not delay the server itself
    (what is measured is then the generator's view of a steady server)."""
    rt = ["chrt", "-f", "50"] if realtime else []
    server = subprocess.Popen(
        [*rt, "taskset", "-c", "1", *REDLINE, "target", "--threads", "1"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = server.stdout.readline() if server.stdout else ""
        yield line.strip().rsplit(" ", 1)[-1]
    finally:
        server.terminate()
        server.wait(timeout=10)


#: PERIODIC spins 3 ms of every 10. At SCHED_FIFO it takes the core from the generator each time
#: it spins: a third of the requests leave up to 3 ms late. (A plain loop at normal priority
#: barely delays a generator that sleeps between sends on a kernel that lets a waking thread
#: preempt it at once: lag p99 0.26 ms against 0.09 quiet, 2026-11-29.)
PERIODIC = """
import os, time
parent = os.getppid()
while os.getppid() == parent:  # never left spinning at real-time priority once its parent is gone
    t = time.perf_counter()
    while time.perf_counter() - t < 0.003:
        pass
    time.sleep(0.007)
"""


@contextlib.contextmanager
def busy_core(core: str | None, realtime: bool = False) -> Iterator[None]:
    """busy_core keeps `core` busy while inside (nothing when None): a spinning loop, or with
    `realtime` the PERIODIC loop at SCHED_FIFO 10 (chrt: root or CAP_SYS_NICE)."""
    if core is None:
        yield
        return
    rt = ["chrt", "-f", "10"] if realtime else []
    code = PERIODIC if realtime else "while True: pass"
    spin = subprocess.Popen([*rt, "taskset", "-c", core, sys.executable, "-c", code])
    try:
        yield
    finally:
        spin.terminate()
        spin.wait(timeout=10)


def run(url: str, out: Path, load: list[str], seconds: float, pin: str | None) -> dict:
    """run runs redline once (pinned to `pin` when given) and returns its JSON result."""
    argv = [*REDLINE, "run", url, *load, "-d", f"{seconds}s", "--json", str(out)]
    argv += ["-q", "--threads", "1"]
    if pin is not None:
        argv = ["taskset", "-c", pin, *argv]
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, timeout=seconds + 60)
    return dict(json.loads(out.read_text()))


def compare(a: Path, b: Path) -> int:
    """compare runs `redline compare a b --fail-on p99:+10%` and returns its exit status."""
    argv = [*REDLINE, "compare", str(a), str(b), "--fail-on", "p99:+10%"]
    return subprocess.run(argv, stdout=subprocess.DEVNULL, check=False, timeout=120).returncode


def ms(doc: dict, key: str, q: str) -> str:
    d = doc.get(key) or {}
    return f"{d[q]:.2f}" if q in d else "–"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--no-record", action="store_true")
    ap.add_argument(
        "--server-rt",
        action="store_true",
        help="run the server at SCHED_FIFO priority (a loaded machine: keep its time steady)",
    )
    args = ap.parse_args()
    ctx = record.Context.now()
    lines = [
        "server at SCHED_FIFO 50 on core 1 (--server-rt)" if args.server_rt else "server on core 1",
        "",
        "| run | latency p50 | latency p99 | service p99 | lag p50 | lag p99 | send stamps |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    codes: dict[str, list[int]] = {}
    with tempfile.TemporaryDirectory() as tmp, target(args.server_rt) as url:
        d = Path(tmp)
        intended = ["--latency-from", "intended"]
        taken = "pinned, core 0 taken 3 ms of 10 (SCHED_FIFO)"
        pinned = (
            ("pinned, quiet", None, False, []),
            ("pinned, busy core 0", "0", False, []),
            ("pinned, busy core 0, --latency-from intended", "0", False, intended),
            (taken, "0", True, []),
            (f"{taken}, --latency-from intended", "0", True, intended),
        )
        for label, busy, realtime, flags in pinned:
            with busy_core(busy, realtime):
                doc = run(f"{url}/?latency=4ms", d / "p.json", ["--rate", "400", *flags], 8.0, "0")
            gen = doc["generator"]
            lines.append(
                f"| {label} | {ms(doc, 'latency_ms', 'p50')} | {ms(doc, 'latency_ms', 'p99')} "
                f"| {ms(doc, 'uncorrected_latency_ms', 'p99')} | {ms(doc, 'lag_ms', 'p50')} "
                f"| {ms(doc, 'lag_ms', 'p99')} | {gen.get('send_stamps', '–')} |"
            )
            print(lines[-1], flush=True)
        for model, load in (("open 400/s", ["--rate", "400"]), ("closed -c 2", ["-c", "2"])):
            for _ in range(args.runs):
                base = d / "base.json"
                run(f"{url}/?latency=4ms", base, load, args.seconds, None)
                run(f"{url}/?latency=5ms", d / "slow.json", load, args.seconds, None)
                run(f"{url}/?latency=4ms", d / "same.json", load, args.seconds, None)
                codes.setdefault(f"{model}: 4 ms vs 5 ms", []).append(
                    compare(base, d / "slow.json")
                )
                codes.setdefault(f"{model}: 4 ms vs 4 ms", []).append(
                    compare(base, d / "same.json")
                )
                print(codes, flush=True)
    lines += ["", "| compare --fail-on 'p99:+10%' | exit statuses |", "|---|---|"]
    lines += [f"| {k} | {', '.join(map(str, v))} |" for k, v in codes.items()]
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_record:
        record.append(
            "lag", "the generator's lag apart; compare on a 25 % slower server", ctx, text
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
