"""Peak memory of 10,000 concurrent VUs of examples/taskqueue.py in one redline process
(issue 8: <= 200 MB RSS; issue 35: <= 150 MB), in one run:

    .venv/bin/python bench/scenarios/vus.py [--vus 10000] [--ramp 20] [--hold 20] [--runs 1]
                                            [--taskqueue-src DIR] [--no-watch] [--keep DIR]
                                            [--no-record]

One taskqueue (fresh data dir, fetches allowed to 127.0.0.0/8) and one origin for its
http-fetch tasks (`redline target`), all on 127.0.0.1; redline ramps to --vus over --ramp
seconds and holds them --hold seconds. Its peak RSS is the kernel's (wait4 ru_maxrss); the
request counts, errors and VUs reached come from its JSON report. The server cannot serve ten
thousand users at their pace on this box: the VUs then wait on it, which is the point (a VU is
cheap while it waits), and the errors it answers with are reported, not hidden. The p50 and
p99 are the run's latency over all requests (issue 35: the mix's p99 < 50 ms at 4,500 users,
5 runs of 5: `--vus 4500 --runs 5`), with the machine's load average at each run's end.

Whether such a p99 is the service's or the machine's shows in taskqueue's side of the run,
which redline watches (`--watch taskqueue=port:PORT`, docs/find.md): the requests it served
a second, the CPU it used (in % of one core; it serves from one event loop pinned to core 0,
so 100 % is all it can have), that CPU per request, how long its threads waited for a CPU
while they could run (other work on core 0) and its accept queue, each over the run. One
whole core would serve 1 / (CPU per request) a second at that run's cost a request, which
falls as the load grows (fixed costs and batched commits spread wider). `--taskqueue-src DIR`
runs another taskqueue source tree with the same redline (an earlier commit's:
`git archive COMMIT services/taskqueue/src | tar -x -C DIR`, then DIR/services/taskqueue/src).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(HERE))
import record  # noqa: E402
from run import VENV_BIN, measure, start_taskqueue  # noqa: E402


def one_run(args: argparse.Namespace) -> tuple[dict, float, int]:
    """one_run loads a fresh taskqueue (and its origin) with --vus users: redline's report,
    its CPU seconds and its peak RSS (KiB)."""
    env = os.environ.copy()
    if args.taskqueue_src:
        env["PYTHONPATH"] = str(Path(args.taskqueue_src).resolve())
    with tempfile.TemporaryDirectory() as tmp:
        server, url = start_taskqueue(tmp, "--allow-fetch-cidr", "127.0.0.0/8", env=env)
        said: list[str] = []  # drained, so that its log never fills the pipe and stalls it
        assert server.stdout is not None
        threading.Thread(target=said.extend, args=(server.stdout,), daemon=True).start()
        origin = subprocess.Popen(
            [str(VENV_BIN / "redline"), "target", "--threads", "1"],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert origin.stdout is not None
            origin_url = origin.stdout.readline().split()[-1]
            js = Path(tmp) / "r.json"
            argv = [
                str(VENV_BIN / "redline"),
                "run",
                str(ROOT / "examples/taskqueue.py"),
                "--host",
                url,
                "--var",
                f"ORIGIN={origin_url}/",
                "--stages",
                f"{args.ramp}s:{args.vus},{args.hold}s:{args.vus}",
                "-q",
                "--json",
                str(js),
                "--timeout",
                "30s",
            ]
            if not (args.no_watch or args.library):
                argv += ["--watch", f"taskqueue=port:{url.rsplit(':', 1)[1]}"]
            if args.library:
                argv = [sys.executable, str(HERE / "vus_library.py"), *argv[2:]]
            r = measure(argv, args.ramp + args.hold + 120)
            if not js.exists():
                raise SystemExit("redline wrote no report:\n" + r.out[-3000:])
            if args.keep:
                kept = Path(args.keep) / f"vus-{args.vus}-{time.strftime('%H%M%S')}.json"
                kept.parent.mkdir(parents=True, exist_ok=True)
                kept.write_text(js.read_text())
                print("kept", kept)
            return json.loads(js.read_text()), r.user + r.sys, r.rss
        finally:
            server.terminate()
            origin.terminate()
            server.wait(timeout=10)
            origin.wait(timeout=10)
            if said:
                last = [line.rstrip() for line in said[-5:]]
                print(f"taskqueue logged {len(said)} lines, the last:", *last, sep="\n  ")


def row(doc: dict, cpu: float, rss_kb: int) -> str:
    """row is one run's line of the table."""
    it = doc["scenario"]["iterations"]
    names = doc["per_name"]
    iters = f"{it['started']:,}/{it['completed']:,}/{it['failed']:,}"
    per = " / ".join(f"{names[n]['requests']:,}" for n in ("submit", "status", "result"))
    lat = doc["latency_ms"]
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    return (
        f"| {doc['connections']:,} | {rss_kb / 1024:.0f} | {cpu:.1f} | {doc['requests']:,} "
        f"| {doc['errors_total']:,} | {doc.get('unfinished', 0):,} | {iters} | {per} "
        f"| {lat['p50']:.1f} | {lat['p99']:.1f} | {service(doc)} | {load} |"
    )


def service(doc: dict) -> str:
    """service is taskqueue's side of a run, from redline's watch of it (means over the run):
    served req/s, CPU % of a core, CPU µs per request, CPU wait % and accept queue."""
    tq = doc.get("parts", {}).get("over_run", {}).get("taskqueue", {})
    served = doc["requests"] / max(doc["duration_s"], 1e-9)
    cpu, wait, queue = tq.get("cpu_percent"), tq.get("cpu_wait"), tq.get("accept_queue")
    per_req = "?" if cpu is None else f"{cpu / 100 / max(served, 1e-9) * 1e6:.0f}"
    return " | ".join(
        [
            f"{served:,.0f}",
            "?" if cpu is None else f"{cpu:.0f}",
            per_req,
            "?" if wait is None else f"{100 * wait:.0f}",
            "?" if queue is None else f"{queue:.1f}",
        ]
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vus", type=int, default=10_000)
    ap.add_argument("--ramp", type=int, default=20)
    ap.add_argument("--hold", type=int, default=20)
    ap.add_argument("--runs", type=int, default=1, help="runs, each on a fresh taskqueue")
    ap.add_argument("--no-record", action="store_true")
    ap.add_argument("--keep", metavar="DIR", help="keep each run's redline JSON in DIR")
    ap.add_argument(
        "--no-watch",
        action="store_true",
        help="leave taskqueue unwatched (the watch is redline's Python reading /proc each "
        "second: its memory and CPU count in redline's figures; --library never watches)",
    )
    ap.add_argument(
        "--taskqueue-src",
        metavar="DIR",
        help="run the taskqueue package found in DIR (first on its PYTHONPATH) instead of "
        "the installed one",
    )
    ap.add_argument(
        "--library",
        action="store_true",
        help="run through the Python API (redline.run with the compiled plan) "
        "instead of the redline command, whose start-up imports numpy and scipy "
        "for `redline find` (about 85 MB)",
    )
    args = ap.parse_args()
    start = record.Context.now()
    head = (
        "| VUs | peak RSS MB | CPU s | requests | errors | unfinished "
        "| iterations started/completed/failed | submit / status / result "
        "| p50 ms | p99 ms | served req/s | taskqueue CPU % | its µs/req | its CPU wait % "
        "| its accept queue | load avg at the end |"
    )
    rows = [head, "|---:|---:|---:|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for _ in range(args.runs):
        doc, cpu, rss_kb = one_run(args)
        rows.append(row(doc, cpu, rss_kb))
        print(rows[-1], flush=True)
        print("errors:", json.dumps(doc["errors"]))
        p99s = ", ".join(f"{n} {e['latency_ms']['p99']:.1f}" for n, e in doc["per_name"].items())
        lag = doc.get("lag_ms") or {}
        print(
            f"p99 ms by name: {p99s}; generator lag p99 {lag.get('p99', float('nan')):.2f} ms; "
            f"connects {doc.get('connects', 0):,}"
        )
        for name, e in doc["per_name"].items():
            if e.get("failure_reasons"):
                print(name, json.dumps(e["failure_reasons"]))
    table = "\n".join(rows)
    print(table)
    if not args.no_record:
        title = f"{args.vus:,} VUs of examples/taskqueue.py: peak RSS and latency"
        if args.taskqueue_src:
            title += f" (taskqueue from {args.taskqueue_src})"
        record.append("scenarios", title, start, table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
