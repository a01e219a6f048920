"""bottleneck: the test deployments of known cause, searched five times each in both models
(issue 34: "the right part and resource named in five searches out of five, in both models;
nothing named where nothing ran out").

Each deployment is one or two local processes (the servers: tests/deployments.py) whose limit
is set by construction:

- ``cpu``: a server that spends 2 ms of CPU on each request, pinned to one core (500 req/s
  at most): ``api``'s cpu;
- ``accept-queue``: two workers taking connections off a listening socket, 20 ms each (100
  req/s), CPU low, the rest waiting in the accept queue: ``api``'s accept-queue;
- ``pool``: a threaded server whose requests each hold one of 4 slots for 20 ms (200 req/s),
  its pool exported as ``db_pool_in_use`` / ``db_pool_limit``: ``api``'s pool;
- ``generator``: the bundled target on its own cores, redline on one worker thread: the
  generator;
- ``lock``: a threaded server whose requests take one lock for 5 ms (200 req/s), which it
  exports nowhere, CPU low: nothing named.

Each search is ``redline.find`` in a process of its own (``--one``), watching the deployment
(``pid:``, ``port:`` or ``prometheus:``); the row is what ``answers.limit.bottleneck`` named.
``--parallel`` runs the deployments side by side, each on cores of its own (the server's
and redline's apart), one model after the other: on a machine of 12 cores or more, the
searches then do not share a core.

    .venv/bin/python bench/bottleneck.py                   # 5 searches each, both models
    .venv/bin/python bench/bottleneck.py --reps 1 --only lock --no-record
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import record  # noqa: E402
from deployments import http_server, worker_pool  # noqa: E402  (tests/deployments.py)

#: DEPLOYMENTS: name -> (the truth: part and resource, or None; the open model's first rate;
#: cores the deployment takes in --parallel).
DEPLOYMENTS: dict[str, tuple[tuple[str, str] | None, float, int]] = {
    "cpu": (("api", "cpu"), 100.0, 1),
    "accept-queue": (("api", "accept-queue"), 25.0, 1),
    "pool": (("api", "pool"), 50.0, 1),
    "generator": (("generator", "generator"), 2000.0, 2),
    "lock": (None, 50.0, 1),
}


#: SLO and MAX_TIME_S: each search's limit and length (every deployment but the generator
#: breaks p99 < 50 ms within four doublings of its first load).
SLO = "p99<50ms"
MAX_TIME_S = 28.0


def start(name: str, cores: str) -> tuple[subprocess.Popen[Any], int, list[str]]:
    """start launches the deployment: its process, port and --watch specs."""
    if name == "generator":
        redline = str(Path(sys.executable).parent / "redline")
        argv = [redline, "target", "--threads", "2", "--port", "0"]
        pre = (
            (lambda: os.sched_setaffinity(0, {int(c) for c in cores.split(",")})) if cores else None
        )
        log = tempfile.TemporaryFile()  # read back for the port; it logs on after that
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, preexec_fn=pre)  # noqa: PLW1509
        for _ in range(300):
            log.seek(0)
            m = re.search(rb"http://127\.0\.0\.1:([0-9]+)", log.read())
            if m:
                return proc, int(m.group(1)), [f"api=pid:{proc.pid}"]
            time.sleep(0.1)
        proc.kill()
        raise SystemExit("the target did not start")
    if name == "accept-queue":
        proc, port = worker_pool(cores, lifetime_s=3600.0)
        return proc, port, [f"api=port:{port}"]
    proc, port = http_server(name, cores)
    if name == "pool":
        return (
            proc,
            port,
            [f"api=pid:{proc.pid}", f"api=prometheus:http://127.0.0.1:{port}/metrics"],
        )
    return proc, port, [f"api=pid:{proc.pid}"]


def one(name: str, model: str, cores: str, mine: str) -> dict[str, Any]:
    """one searches the deployment once (in this process, on cores ``mine``)."""
    from redline.find.finder import find

    if mine:
        os.sched_setaffinity(0, {int(c) for c in mine.split(",")})
    truth, first_rate, _ = DEPLOYMENTS[name]
    proc, port, watch = start(name, cores)
    began = time.monotonic()
    try:
        result = find(
            f"http://127.0.0.1:{port}/",
            model=model,
            start=2 if model == "closed" else first_rate,
            max_time=MAX_TIME_S,
            max_step=4.0,
            confirm=2.0,
            slos=[SLO],
            watch=watch,
            threads=1,
        )
    finally:
        proc.kill()
        proc.wait(10)
    b = ((result.get("answers") or {}).get("limit") or {}).get("bottleneck") or {}
    named = (b.get("part"), b.get("resource")) if b.get("part") else None
    return {
        "deployment": name,
        "model": model,
        "truth": list(truth) if truth else None,
        "named": list(named) if named else None,
        "right": named == truth and bool(b),
        "evidence": b.get("evidence", "(no bottleneck: no limit found)"),
        "stop": (result.get("stop") or {}).get("condition"),
        "limit_load": ((result.get("answers") or {}).get("limit") or {}).get("load"),
        "steps": len(result.get("steps") or []),
        "took_s": round(time.monotonic() - began, 1),
    }


def series(name: str, model: str, reps: int, cores: str, mine: str) -> subprocess.Popen[str]:
    """series starts ``reps`` searches of one deployment, one after another, in a child."""
    argv = [sys.executable, __file__, "--series", name, "--model", model, "--reps", str(reps)]
    argv += ["--cores", cores, "--mine", mine]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5, help="searches of each (default 5)")
    ap.add_argument("--only", action="append", help="a deployment (repeatable; default all)")
    ap.add_argument("--models", default="closed,open", help="default closed,open")
    ap.add_argument("--parallel", action="store_true", help="deployments side by side")
    ap.add_argument("--no-record", action="store_true", help="print, do not append")
    ap.add_argument("--rows", help="also write each search's row (JSON lines) to this file")
    ap.add_argument("--series", help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    ap.add_argument("--cores", default="", help=argparse.SUPPRESS)
    ap.add_argument("--mine", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.series:
        for _ in range(args.reps):
            print(json.dumps(one(args.series, args.model, args.cores, args.mine)), flush=True)
        return 0
    resource.setrlimit(resource.RLIMIT_NOFILE, (resource.getrlimit(resource.RLIMIT_NOFILE)[1],) * 2)
    ctx = record.Context.now()
    names = args.only or list(DEPLOYMENTS)
    rows: list[dict[str, Any]] = []
    for model in args.models.split(","):
        wave: list[subprocess.Popen[str]] = []
        at = 1  # core 0 left to the machine
        for name in names:
            cores = mine = ""
            if args.parallel:
                n = DEPLOYMENTS[name][2]
                cores = ",".join(str(c) for c in range(at, at + n))
                mine = str(at + n)
                at += n + 1
            elif name == "cpu":
                cores = "0"  # pinned to one core, as the deployment is defined
            proc = series(name, model, args.reps, cores, mine)
            if not args.parallel:
                rows += _read(proc)
            else:
                wave.append(proc)
        for proc in wave:
            rows += _read(proc)
    text = table(rows)
    print(text)
    if args.rows:
        Path(args.rows).write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    if not args.no_record:
        record.append("bottleneck", "the test deployments, named five times each", ctx, text)
    return 0 if all(r["right"] for r in rows) else 1


def _read(proc: subprocess.Popen[str]) -> list[dict[str, Any]]:
    assert proc.stdout is not None
    out = [json.loads(line) for line in proc.stdout if line.startswith("{")]
    proc.wait()
    for r in out:
        print(f"{r['deployment']} {r['model']}: {r['named']} ({r['took_s']} s)", flush=True)
    return out


def table(rows: list[dict[str, Any]]) -> str:
    """table: one row per deployment and model, each search's named part and resource."""
    lines = [
        "| deployment | model | truth | named, search by search (limit load, steps) | right |",
        "| --- | --- | --- | --- | ---: |",
    ]
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["deployment"], r["model"]), []).append(r)
    for (name, model), rs in groups.items():
        truth = "/".join(rs[0]["truth"]) if rs[0]["truth"] else "nothing"
        named = ", ".join(
            ("/".join(r["named"]) if r["named"] else "nothing")
            + f" ({r.get('limit_load')}, {r.get('steps')})"
            for r in rs
        )
        lines.append(
            f"| {name} | {model} | {truth} | {named} | {sum(r['right'] for r in rs)} of {len(rs)} |"
        )
    wrong = [r for r in rows if not r["right"]]
    if wrong:
        lines += ["", "Where the name was not the truth:", ""]
        lines += [
            f"- {r['deployment']}, {r['model']} (stopped on {r['stop']}): {r['evidence']}"
            for r in wrong
        ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
