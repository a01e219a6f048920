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
searches then do not share a core. ``--tenant`` pins each search to one core (the last, or
its own with ``--parallel``) and spins another process there for the whole search: the
generator starved by another tenant on its core. Every row keeps the generator's shares at
the limit (its workers runnable, waiting for a CPU, and what they ran: the difference), the
figures the one generator rule (redline.analysis.generator) judges.

    .venv/bin/python bench/bottleneck.py                   # 5 searches each, both models
    .venv/bin/python bench/bottleneck.py --reps 1 --only lock --no-record
    .venv/bin/python bench/bottleneck.py --reps 3 --only generator --only pool --tenant
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
    # From 10,000 req/s: from 2,000 the open searches found no limit in 28 s on a quiet box
    # (2 of 2, 2026-11-28 23:17); on the busy box the one named was at 20,000 (20:08).
    "generator": (("generator", "generator"), 10000.0, 2),
    "lock": (None, 50.0, 1),
}


#: SLO and MAX_TIME_S: each search's limit and length (every deployment but the generator
#: breaks p99 < 50 ms within four doublings of its first load).
SLO = "p99<50ms"
MAX_TIME_S = 28.0


def start(name: str, cores: str) -> tuple[subprocess.Popen[Any], int, list[str]]:
    """start launches the deployment: its process, port and --watch specs."""
    if name == "generator":
        # By this interpreter, not a console script beside it: a system python3 running this
        # file (the device machine's) has no redline script in its bin directory.
        argv = [sys.executable, "-m", "redline", "target", "--threads", "2", "--port", "0"]
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


#: ALL_CORES: the cores this process may use before it pins itself to redline's.
ALL_CORES = os.sched_getaffinity(0)

#: SPIN: the tenant, a process that spins on the core it is given (argv[1]).
SPIN = "import os, sys; os.sched_setaffinity(0, {int(sys.argv[1])})\nwhile True: pass"


def one(name: str, model: str, cores: str, mine: str, tenant: bool) -> dict[str, Any]:
    """one searches the deployment once (in this process, on cores ``mine``; with
    ``tenant``, beside a process spinning on the first of them)."""
    from redline.find.finder import find

    truth, first_rate, _ = DEPLOYMENTS[name]
    # What the deployment does not pin itself must not inherit redline's core (the tenant's,
    # with --tenant), nor a former search's in this process.
    os.sched_setaffinity(0, ALL_CORES)
    proc, port, watch = start(name, cores)
    if mine:
        os.sched_setaffinity(0, {int(c) for c in mine.split(",")})
    spin = None
    if tenant:
        core = min(os.sched_getaffinity(0))
        spin = subprocess.Popen([sys.executable, "-c", SPIN, str(core)])
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
        for p in (proc, spin):
            if p is not None:
                p.kill()
                p.wait(10)
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
        "tenant": tenant,
        "shares": shares(result),
    }


def shares(result: dict[str, Any]) -> dict[str, Any]:
    """shares: the generator's workers at the limit step (runnable, waiting, ran: shares of
    their time) and the most they ran at any searched step."""
    steps = [s for s in result.get("steps") or [] if s.get("generator_busy") is not None]
    ran = [s["generator_busy"] - (s.get("generator_wait") or 0.0) for s in steps]
    limit = ((result.get("answers") or {}).get("limit") or {}).get("load")
    at = next((s for s in steps if s.get("load") == limit and s.get("fired")), None)
    out: dict[str, Any] = {"most_ran": round(max(ran), 3) if ran else None}
    if at is not None:
        out["runnable"] = round(at["generator_busy"], 3)
        out["wait"] = round(at.get("generator_wait") or 0.0, 3)
        out["ran"] = round(out["runnable"] - out["wait"], 3)
    return out


def series(
    name: str, model: str, reps: int, cores: str, mine: str, tenant: bool
) -> subprocess.Popen[str]:
    """series starts ``reps`` searches of one deployment, one after another, in a child."""
    argv = [sys.executable, __file__, "--series", name, "--model", model, "--reps", str(reps)]
    argv += ["--cores", cores, "--mine", mine] + (["--tenant"] if tenant else [])
    return subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5, help="searches of each (default 5)")
    ap.add_argument("--only", action="append", help="a deployment (repeatable; default all)")
    ap.add_argument("--models", default="closed,open", help="default closed,open")
    ap.add_argument("--parallel", action="store_true", help="deployments side by side")
    ap.add_argument("--no-record", action="store_true", help="print, do not append")
    ap.add_argument("--rows", help="also write each search's row (JSON lines) to this file")
    ap.add_argument("--tenant", action="store_true", help="spin a process on redline's core")
    ap.add_argument("--series", help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    ap.add_argument("--cores", default="", help=argparse.SUPPRESS)
    ap.add_argument("--mine", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.series:
        for _ in range(args.reps):
            row = one(args.series, args.model, args.cores, args.mine, args.tenant)
            print(json.dumps(row), flush=True)
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
            if args.tenant and not mine:
                mine = str(max(os.sched_getaffinity(0)))  # one core, the tenant's too
            proc = series(name, model, args.reps, cores, mine, args.tenant)
            if not args.parallel:
                rows += _read(proc)
            else:
                wave.append(proc)
        for proc in wave:
            rows += _read(proc)
    text = table(rows) + "\n\n" + shares_table(rows)
    if _failed:
        text += "\n\nSeries that failed (rows missing): " + "; ".join(_failed)
    print(text)
    if args.rows:
        Path(args.rows).write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    if not args.no_record:
        title = "the test deployments, named five times each"
        if args.tenant:
            title += ", a tenant spinning on redline's core"
        record.append("bottleneck", title, ctx, text)
    return 0 if all(r["right"] for r in rows) and not _failed else 1


#: _failed: the series that ended in an error (their rows are missing from the table).
_failed: list[str] = []


def _read(proc: subprocess.Popen[str]) -> list[dict[str, Any]]:
    """_read: one series' rows; a series that failed is said in one line (its own error
    above it, on stderr), not left as rows silently missing from the table."""
    assert proc.stdout is not None
    out = [json.loads(line) for line in proc.stdout if line.startswith("{")]
    if proc.wait() != 0:
        argv = " ".join(str(a) for a in proc.args[2:])  # type: ignore[index]
        print(f"bottleneck: a series failed (exit {proc.returncode}): {argv}", flush=True)
        _failed.append(argv)
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


def shares_table(rows: list[dict[str, Any]]) -> str:
    """shares_table: the generator's shares at each search's limit (runnable / waiting / ran,
    % of its workers' time), what the one generator rule judges, and whether it was named."""
    lines = [
        "| deployment | model | tenant | runnable / wait / ran at the limit, search by search"
        " (most ran at any step) | generator named |",
        "| --- | --- | --- | --- | ---: |",
    ]
    groups: dict[tuple[str, str, bool], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["deployment"], r["model"], bool(r.get("tenant"))), []).append(r)
    for (name, model, tenant), rs in groups.items():
        cells = []
        for r in rs:
            x = r.get("shares") or {}
            most = x.get("most_ran")
            at = (
                f"{100 * x['runnable']:.0f} / {100 * x['wait']:.0f} / {100 * x['ran']:.0f}"
                if "ran" in x
                else "no limit"
            )
            cells.append(at + (f" ({100 * most:.0f})" if most is not None else ""))
        named = sum(1 for r in rs if (r.get("named") or [None])[0] == "generator")
        lines.append(
            f"| {name} | {model} | {'yes' if tenant else 'no'} | {', '.join(cells)}"
            f" | {named} of {len(rs)} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
