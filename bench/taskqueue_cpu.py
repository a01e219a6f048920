"""taskqueue's CPU a request on its hot paths, source trees side by side (issue 35), in one run:

    .venv/bin/python bench/taskqueue_cpu.py --src base=DIR --src new=DIR [--rounds 5]
        [--seconds 8] [--conns 20] [--rate N] [--users 1500]
        [--only status,result,submit,mix] [--no-record]

DIR holds a `taskqueue` package (an earlier commit's: `git archive COMMIT
services/taskqueue/src | tar -x -C D`, then D/services/taskqueue/src); `--src now=installed`
runs the one installed in this interpreter. Each round starts, for every path and every tree
in turn (the order reversed every other round: the box is shared and its load drifts), a fresh
`taskqueue serve --port 0 --workers 1` pinned to core 0 and loads it with wrk (one thread,
--conns connections, pinned to core 1) for --seconds, as fast as it answers or, with --rate, at N
requests a second (wrk2: a CPU figure taken at the same pace for both trees, which a shared
box's drift does not move as much as the closed loop's batching):
  status  GET /tasks/submissions/{id} over 300 finished factorial tasks
  result  GET /tasks/{id} over the same 300 (their results are in the service's memory)
  submit  POST /tasks/submissions of factorial(20): CPU a 202, running the task included
  mix     the seed-000 mix (examples/taskqueue.py: five http-fetch tasks to one factorial(1000),
          each polled every second, its result read, 1-2 s of thought) from --users users of
          `redline run` (5 s ramp, then --seconds) pinned to core 1 with the fetches' origin
          (`redline target`): CPU a request, the tasks' work included, at the pace those users
          ask (1.56 requests a second each where the service keeps up); not in the default --only
The figure is the service's CPU (user + system of its process and its workers, from /proc)
over the requests the generator completed; every answer must be the path's one status code
(the mix: no error but tasks that ended FAILED, which are counted), and the submit and mix
rows also check that the service stored as many tasks as it answered 202 (within the
connections or users in flight at the deadline). The table gives each round's figure and the
median; results are appended to bench/results/taskqueue.md.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

# This folder holds bench/taskqueue/ (wrk scripts), which would shadow the service's package.
_BENCH = str(Path(__file__).resolve().parent)
sys.path[:] = [p for p in sys.path if p not in (_BENCH, "")] + [_BENCH]

import psutil  # noqa: E402
import record  # noqa: E402  (bench/record.py)
from taskqueue_harness import (  # noqa: E402  (bench/taskqueue_harness.py)
    VENV_BIN,
    http_json,
    origin_argv,
    peers,
    pin,
    run_generator,
    sched_wait_s,
    server_tasks,
    started,
    wait_drained,
)

LUA = Path(__file__).resolve().parent / "taskqueue"
MIX_FLOW = Path(__file__).resolve().parent.parent / "examples" / "taskqueue.py"
IDS = 300
PATHS = {  # path -> (wrk script, its arguments after the ids file (None: no ids), status code)
    "status": ("status.lua", ["/tasks/submissions/"], "200"),
    "result": ("status.lua", ["/tasks/"], "200"),
    "submit": ("submit.lua", None, "202"),
}
SUBMIT_BODY = '{"type":"factorial","n":20}'
MIX = "mix"


def service_argv(src: str, data: Path) -> list[str]:
    """service_argv: the pinned service, its package taken from ``src`` (or the installed one)."""
    env = [] if src == "installed" else ["env", f"PYTHONPATH={Path(src).resolve()}"]
    taskqueue = str(VENV_BIN / "taskqueue")
    return [*pin("service"), *env, taskqueue, "serve", "--port", "0", "--workers", "1"] + [
        "--data-dir",
        str(data),
        "--max-queue",
        "10000000",
    ]


def cpu_split(proc: subprocess.Popen[bytes]) -> tuple[float, float]:
    """cpu_split: user and system CPU seconds of a process and its descendants so far."""
    user = system = 0.0
    try:
        root = psutil.Process(proc.pid)
        for p in [root, *root.children(recursive=True)]:
            t = p.cpu_times()
            user, system = user + t.user, system + t.system
    except psutil.Error:
        pass
    return user, system


def one(
    wrk: list[str], src: str, path: str, seconds: int, conns: int, work: Path
) -> dict[str, float]:
    """one measures one path on one fresh service: its CPU µs a request and what was checked."""
    script, extra, code = PATHS[path]
    with started(service_argv(src, work / "data"), work / "service.log") as (url, svc):
        if extra is None:
            args = [SUBMIT_BODY]
        else:
            ids = [
                str(
                    http_json("POST", f"{url}/tasks/submissions", {"type": "factorial", "n": 50})[
                        "id"
                    ]
                )
                for _ in range(IDS)
            ]
            if wait_drained(url, 30).get("SUCCEEDED", 0) != IDS:
                raise RuntimeError(f"{src}: the {IDS} seeded tasks did not all succeed")
            (work / "ids.txt").write_text("\n".join(ids) + "\n")
            args = [str(work / "ids.txt"), *extra]
        before = sum(server_tasks(url).values())
        argv = [*pin("generator"), *wrk, "-t1", f"-c{conns}", f"-d{seconds}s", "--timeout", "5s"]
        argv += ["-s", str(LUA / script), url, "--", *args]
        (user0, sys0), wait0 = cpu_split(svc), sched_wait_s(svc)
        out, wall = run_generator(argv, seconds + 30, work)
        (user1, sys1), waited = cpu_split(svc), sched_wait_s(svc) - wait0
        cpu, system = user1 + sys1 - user0 - sys0, sys1 - sys0
        stored = sum(server_tasks(url).values()) - before
    line = next(ln for ln in out.splitlines() if ln.startswith("WRKJSON "))
    s = json.loads(line[len("WRKJSON ") :])
    codes = {str(k): int(v) for k, v in s["codes"].items()}
    if sum(codes.values()) != int(s["requests"]):  # wrk2 hands the table back swapped
        codes = {str(v): int(k) for k, v in codes.items()}
    if sum(codes.values()) != int(s["requests"]):
        raise RuntimeError(f"{src} {path}: codes {codes} do not add up to {s['requests']}")
    errors = sum(int(v) for k, v in s["errors"].items() if k != "status")
    done = codes.get(code, 0)
    if set(codes) - {code} or errors:
        raise RuntimeError(f"{src} {path}: codes {codes}, socket errors {s['errors']}")
    if path == "submit" and not done <= stored <= done + conns:
        raise RuntimeError(f"{src} submit: {done} answered 202, the service stored {stored}")
    return figures(cpu, system, waited, done, wall)


def figures(cpu: float, system: float, waited: float, done: int, wall: float) -> dict[str, float]:
    """figures: the service's CPU µs a request (and its system part) over `done` requests, the
    requests a second, and the shares of the wall it ran (busy) and waited for a CPU (wait)."""
    return {
        "us": 1e6 * cpu / max(1, done),
        "sys": 1e6 * system / max(1, done),
        "rps": done / wall,
        "busy": cpu / wall,
        "wait": waited / wall,
    }


def one_mix(src: str, seconds: int, users: int, work: Path) -> dict[str, float]:
    """one_mix measures the seed-000 mix on one fresh service (and origin): its CPU µs a
    request, the tasks' work included, and what was checked."""
    service = [*service_argv(src, work / "data"), "--allow-fetch-cidr", "127.0.0.0/8"]
    report = work / "report.json"
    with (
        started(origin_argv(), work / "origin.log") as (origin, _),
        started(service, work / "service.log") as (url, svc),
    ):
        before = sum(server_tasks(url).values())
        argv = [*pin("generator"), str(VENV_BIN / "redline"), "run", str(MIX_FLOW)]
        argv += ["--host", url, "--var", f"ORIGIN={origin}/", "-q", "--json", str(report)]
        argv += ["--stages", f"5s:{users},{seconds}s:{users}", "--timeout", "30s"]
        (user0, sys0), wait0 = cpu_split(svc), sched_wait_s(svc)
        out, wall = run_generator(argv, seconds + 90, work)
        (user1, sys1), waited = cpu_split(svc), sched_wait_s(svc) - wait0
        cpu, system = user1 + sys1 - user0 - sys0, sys1 - sys0
        stored = sum(server_tasks(url).values()) - before
    if not report.exists():
        raise RuntimeError(f"{src} mix: redline wrote no report: {out[-1000:]}")
    doc = json.loads(report.read_text())
    done, submits = int(doc["requests"]), int(doc["per_name"]["submit"]["requests"])
    # A failed check is a task that ended FAILED (a fetch past its deadline on a busy box): an
    # answer the service owes, counted. Any other error is the run's, and voids it.
    if any(n for kind, n in doc["errors"].items() if kind != "check"):
        raise RuntimeError(f"{src} mix: errors {doc['errors']}")
    if not submits <= stored <= submits + users:
        raise RuntimeError(f"{src} mix: {submits} answered 202, the service stored {stored}")
    failed = float(doc["errors"].get("check", 0))
    return {**figures(cpu, system, waited, done, wall), "failed": failed}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", action="append", required=True, help="LABEL=DIR or LABEL=installed")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=8)
    ap.add_argument("--conns", type=int, default=20)
    ap.add_argument("--rate", type=int, help="requests a second (wrk2), else a closed loop")
    ap.add_argument("--users", type=int, default=1500, help="the mix's users")
    ap.add_argument("--only", default="status,result,submit", help="add mix for the seed-000 mix")
    ap.add_argument("--no-record", action="store_true")
    a = ap.parse_args()
    srcs = dict(s.split("=", 1) for s in a.src)
    paths = [p for p in a.only.split(",") if p]
    if not set(paths) <= {*PATHS, MIX} or len(srcs) != len(a.src):
        ap.error(f"--only takes {','.join([*PATHS, MIX])}; --src labels must differ")
    tool = peers()["WRK2" if a.rate else "WRK"]
    if not tool and set(paths) - {MIX}:
        ap.error("wrk (wrk2 for --rate) not found: install-peers.sh")
    wrk = [tool, f"-R{a.rate}"] if a.rate else [tool]
    ctx = record.Context.now()
    got: dict[tuple[str, str], list[dict[str, float]]] = {}
    for r in range(a.rounds):
        order = list(srcs) if r % 2 == 0 else list(reversed(srcs))
        for path in paths:
            for label in order:
                with tempfile.TemporaryDirectory() as tmp:
                    if path == MIX:
                        m = one_mix(srcs[label], a.seconds, a.users, Path(tmp))
                    else:
                        m = one(wrk, srcs[label], path, a.seconds, a.conns, Path(tmp))
                got.setdefault((path, label), []).append(m)
                print(
                    f"round {r + 1} {path:6} {label:8} {m['us']:6.1f} µs/request "
                    f"(sys {m['sys']:5.1f}) "
                    f"{m['rps']:7.0f}/s, service busy {m['busy']:.2f}, waited {m['wait']:.2f}"
                    + (f", {m['failed']:.0f} tasks FAILED" if m.get("failed") else ""),
                    flush=True,
                )
    rows = [
        "| path | tree | µs of service CPU a request, each round | median | of it system"
        " (median) | req/s (median) | busy, waited (median, share of the wall) |",
        "|---|---|---|---:|---:|---:|---|",
    ]
    for (path, label), ms in got.items():
        us = [m["us"] for m in ms]
        med = {k: statistics.median(m[k] for m in ms) for k in ("sys", "rps", "busy", "wait")}
        rows.append(
            f"| {path} | {label} | {', '.join(f'{u:.1f}' for u in us)} | "
            f"{statistics.median(us):.1f} | {med['sys']:.1f} | {med['rps']:,.0f} | "
            f"{med['busy']:.2f}, {med['wait']:.2f} |"
        )
    trees = "\n".join(f"- {label}: {shlex.quote(src)}" for label, src in srcs.items())
    paces = [f"wrk2 -R{a.rate}" if a.rate else f"wrk, closed loop of {a.conns}"]
    paces = paces if set(paths) - {MIX} else []
    if MIX in paths:
        paces.append(f"the mix: {a.users} users of examples/taskqueue.py after a 5 s ramp")
    pace = "; ".join(paces)
    body = "\n".join(rows) + f"\n\n{pace}, {a.seconds} s a run. Trees:\n{trees}\n"
    print(body)
    if not a.no_record:
        print(
            "appended to",
            record.append("taskqueue", "taskqueue CPU a request, trees side by side", ctx, body),
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
