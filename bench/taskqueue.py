"""Benchmark of the taskqueue service (issue 3, "Performance"): three scenarios, one run.

    .venv/bin/python bench/taskqueue.py [--seconds 30] [--runs 1] [--only status,submit,mix]
        [--mix-rate 700,550,400] [--store sqlite,postgres] [--no-pin] [--service-cmd CMD]
        [--results FILE] [--no-record]

Each scenario gets a fresh service (`taskqueue serve --port 0`, a new temporary data dir,
`--allow-fetch-cidr 127.0.0.0/8`) and, for http-fetch, an origin (`redline target --threads 1`),
all on 127.0.0.1. The machine has 2 cores: by default the service (with its SQLite writer and
checkpointer threads and its factorial worker processes, which inherit the affinity) is pinned
to core 0 with `taskset -c 0`; the generator (wrk, one thread, or k6) and the origin share
core 1. Every generator run is bounded by its duration and by a subprocess timeout.

Scenarios and goals (2-core box, generator on the same box):
  status  GET /tasks/submissions/{id} over 300 finished tasks (wrk + Lua)   >= 5,000 req/s
  submit  POST /tasks/submissions, durable 202s per second (wrk + Lua)       >= 2,000/s
          (--max-queue raised to 10,000,000 so admission control does not turn it into a
          503 benchmark; 503s, if any, are reported separately)
  mix     seed 000's user with k6 (constant arrival rate): 5:1 http-fetch:factorial, status
          polled at once and then every second until done, then the result; req/s counts
          requests sent after a 5 s ramp-up until the arrivals stop;
          >= 2,500 req/s in total with p99 < 100 ms per request type and zero failures.

What the server saw is checked as well as what the client reported: the 202s counted by wrk
must match the tasks the service stored, and every k6 task must be SUCCEEDED in the service.
Latency percentiles are client-side (wrk: closed loop, from each request's send; k6: from each
request's actual send, so a saturated generator shows up as dropped iterations, reported too).
The notes give the service's CPU use, how long its threads waited for a CPU (schedstat: the
box is shared, and that wait is latency no code change removes) and its disk writes.

--store postgres runs the mix with the service on PostgreSQL (`taskqueue serve --database`,
issue 19): a fresh private cluster per run (taskqueue.localpg: the distribution's initdb and
pg_ctl, fsync on), pinned to the service's core, so the service and its store share one core
as the SQLite service and its writer thread do. --store sqlite,postgres runs both at each rate
back to back, alternating which goes first from one run to the next, so the two see the same
machine; their CPU (service and postgres) is in each note.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import shlex
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# This script's own name would shadow the service's package (taskqueue.localpg, for
# --store postgres): look for modules beside it (record) only after everything else.
_BENCH = str(Path(__file__).resolve().parent)
sys.path[:] = [p for p in sys.path if p not in (_BENCH, "")] + [_BENCH]

import record  # noqa: E402  (bench/record.py)
from taskqueue_harness import (  # noqa: E402  (bench/taskqueue_harness.py)
    CORES,
    PEERS_ENV,
    VENV_BIN,
    child_cpu,
    cpu_seconds,
    http_json,
    load_avg,
    origin_argv,
    peers,
    pin,
    run_generator,
    sched_wait_s,
    server_tasks,
    service_argv,
    started,
    store,
    wait_drained,
    written_bytes,
)

ROOT = Path(__file__).resolve().parent.parent
HERE = ROOT / "bench" / "taskqueue"
STATUS_IDS = 300
MIX_WARMUP_S = 5
K6_FAIL_RE = re.compile(r'msg="FAIL ((?:[^"\\]|\\.)*)"')


@dataclass
class Row:
    """Row is one scenario run as it appears in the results table."""

    scenario: str
    tool: str
    rps: float
    p50_ms: float
    p99_ms: float
    errors: str
    goal: str
    met: bool
    load: str
    notes: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)


def wrk_json(output: str) -> dict[str, Any]:
    """wrk_json extracts the WRKJSON line that bench/taskqueue/common.lua prints."""
    for line in output.splitlines():
        if line.startswith("WRKJSON "):
            return dict(json.loads(line[len("WRKJSON ") :]))
    raise RuntimeError(f"wrk printed no summary:\n{output[-1500:]}")


def wrk_argv(wrk: str, script: str, url: str, seconds: int, conns: int, arg: str) -> list[str]:
    """wrk_argv is the pinned wrk command line (one thread: one core to spend)."""
    return [
        *pin("generator"),
        wrk,
        "-t1",
        f"-c{conns}",
        f"-d{seconds}s",
        "--timeout",
        "5s",
        "-s",
        str(HERE / script),
        url,
        "--",
        arg,
    ]


def seed_ids(url: str, n: int, path: Path) -> None:
    """seed_ids submits n small factorial tasks, waits for them to finish, writes their ids."""
    ids = [
        str(http_json("POST", f"{url}/tasks/submissions", {"type": "factorial", "n": 50})["id"])
        for _ in range(n)
    ]
    tasks = wait_drained(url, 30)
    if tasks.get("SUCCEEDED", 0) != n:
        raise RuntimeError(f"seeding: expected {n} SUCCEEDED tasks, server has {tasks}")
    path.write_text("\n".join(ids) + "\n")


def ms(us: float) -> float:
    """ms converts wrk's microseconds to milliseconds."""
    return float(us) / 1000.0


def scenario_status(tools: dict[str, str], work: Path, seconds: int, conns: int) -> Row:
    """scenario_status: GET /tasks/submissions/{id} over STATUS_IDS finished tasks (wrk)."""
    ids = work / "ids.txt"
    with started(service_argv(tools["TASKQUEUE"], work / "data", None), work / "service.log") as (
        url,
        svc,
    ):
        seed_ids(url, STATUS_IDS, ids)
        load = load_avg()
        argv = wrk_argv(tools["WRK"], "status.lua", url, seconds, conns, str(ids))
        cpu0, gen0, wait0 = cpu_seconds(svc), child_cpu(), sched_wait_s(svc)
        out, wall = run_generator(argv, seconds + 30, work)
        svc_cpu, gen_cpu = cpu_seconds(svc) - cpu0, child_cpu() - gen0
        waited = sched_wait_s(svc) - wait0
    s = wrk_json(out)
    codes = {str(k): int(v) for k, v in dict(s["codes"]).items()}
    rps = int(s["requests"]) / (int(s["duration_us"]) / 1e6)
    bad = sum(n for c, n in codes.items() if c != "200") + sum(
        int(v) for k, v in dict(s["errors"]).items() if k != "status"
    )
    return Row(
        "status GETs",
        "wrk",
        rps,
        ms(s["p50_us"]),
        ms(s["p99_us"]),
        str(bad),
        ">= 5,000 req/s",
        rps >= 5000 and bad == 0,
        load,
        notes=[
            f"{conns} connections, {STATUS_IDS} ids; codes {codes}; "
            f"service CPU {100 * svc_cpu / wall:.0f}% of a core, waited {waited:.1f} s for a CPU "
            f"({1e6 * svc_cpu / max(1, int(s['requests'])):.0f} us/request), "
            f"wrk {100 * gen_cpu / wall:.0f}%"
        ],
        commands=[
            shlex.join(service_argv(tools["TASKQUEUE"], Path("$DATA"), None)),
            shlex.join(argv),
        ],
    )


SUBMIT_BODIES = {
    "factorial": '{"type":"factorial","n":20}',
    "fetch": '{"type":"http-fetch","url":"%s/anything?size=1024"}',
}


def scenario_submit(
    tools: dict[str, str],
    work: Path,
    seconds: int,
    conns: int,
    kind: str,
) -> Row:
    """scenario_submit: durable POST /tasks/submissions at a closed loop of conns (wrk)."""
    max_queue = 10_000_000  # far above what a run can submit: no admission-control 503s
    with started(origin_argv(), work / "origin.log") as (origin, _):
        with started(
            service_argv(tools["TASKQUEUE"], work / "data", max_queue), work / "service.log"
        ) as (url, svc):
            body = SUBMIT_BODIES[kind].replace("%s", origin)
            before = sum(server_tasks(url).values())
            load = load_avg()
            argv = wrk_argv(tools["WRK"], "submit.lua", url, seconds, conns, body)
            cpu0, gen0, wait0 = cpu_seconds(svc), child_cpu(), sched_wait_s(svc)
            io0 = written_bytes(svc)
            out, wall = run_generator(argv, seconds + 30, work)
            svc_cpu, gen_cpu = cpu_seconds(svc) - cpu0, child_cpu() - gen0
            waited = sched_wait_s(svc) - wait0
            wrote = written_bytes(svc) - io0
            after = server_tasks(url)
            drained = wait_drained(url, 120)
    s = wrk_json(out)
    codes = {str(k): int(v) for k, v in dict(s["codes"]).items()}
    accepted = codes.get("202", 0)
    stored = sum(after.values()) - before
    rps = accepted / (int(s["duration_us"]) / 1e6)
    other = sum(n for c, n in codes.items() if c not in ("202", "503")) + sum(
        int(v) for k, v in dict(s["errors"]).items() if k != "status"
    )
    errors = f"{other} (+{codes.get('503', 0)} 503s)"
    # wrk stops counting at its deadline with up to `conns` submissions in flight, which the
    # server may still store: accepted <= stored <= accepted + conns.
    ok = rps >= 2000 and other == 0 and accepted <= stored <= accepted + conns
    return Row(
        f"durable submissions ({kind})",
        "wrk",
        rps,
        ms(s["p50_us"]),
        ms(s["p99_us"]),
        errors,
        ">= 2,000 accepted/s",
        ok,
        load,
        notes=[
            f"{conns} connections, --max-queue {max_queue}; codes {codes}; server stored "
            f"{stored} new tasks (202s: {accepted}), writing "
            f"{wrote / max(1, stored) / 1024:.1f} KiB to disk per task; "
            f"queue at end {after.get('QUEUED', 0)}, "
            f"after drain {drained}; service CPU {100 * svc_cpu / wall:.0f}% of a core, "
            f"waited {waited:.1f} s for a CPU "
            f"({1e6 * svc_cpu / max(1, accepted):.0f} us per 202, incl. running tasks), "
            f"wrk {100 * gen_cpu / wall:.0f}%"
        ],
        commands=[
            shlex.join(service_argv(tools["TASKQUEUE"], Path("$DATA"), max_queue)),
            shlex.join(argv),
        ],
    )


def k6_argv(k6: str) -> list[str]:
    """k6_argv is the pinned k6 command line; its settings come from the environment."""
    return [*pin("generator"), k6, "run", "-q", "--no-color", str(HERE / "mix.js")]


def mix_figures(summary: dict[str, Any]) -> dict[str, float]:
    """mix_figures pulls counts and per-type latencies out of k6's handleSummary JSON."""
    metrics: dict[str, dict[str, dict[str, float]]] = summary["metrics"]

    def val(name: str, key: str) -> float:
        return float(metrics.get(name, {}).get("values", {}).get(key, 0.0))

    out = {
        "requests": val("http_reqs", "count"),
        "iterations": val("iterations", "count"),
        "dropped": val("dropped_iterations", "count"),
        "failures": val("failures", "count"),
        "done": val("tasks_done", "count"),
        "p50": val("http_req_duration", "med"),
        "steady": val("steady_reqs", "count"),
        "p99": val("http_req_duration", "p(99)"),
        "wall_s": float(summary["state"]["testRunDurationMs"]) / 1000,
    }
    for rt in ("submit_fetch", "submit_factorial", "status", "result"):
        out[f"p99_{rt}"] = val(f"http_req_duration{{rt:{rt}}}", "p(99)")
        out[f"n_{rt}"] = val(f"http_reqs{{rt:{rt}}}", "count")
    return out


def scenario_mix(
    tools: dict[str, str], work: Path, seconds: int, rate: int, kind: str = "sqlite"
) -> Row:
    """scenario_mix: the seed-000 user at `rate` new tasks per second (k6), the service on
    the store ``kind`` (sqlite or postgres)."""
    summary = work / "k6-summary.json"
    with (
        store(kind, work) as (database, store_cpu),
        started(origin_argv(), work / "origin.log") as (origin, _),
    ):
        with started(
            service_argv(tools["TASKQUEUE"], work / "data", None, database), work / "service.log"
        ) as (url, svc):
            env = {
                "TQ_URL": url,
                "ORIGIN_URL": origin,
                "RATE": str(rate),
                "DURATION": f"{seconds}s",
                "SUMMARY": str(summary),
                "SIZE": "1024",
                "FACT_N": "100",
                "WARMUP_S": str(MIX_WARMUP_S),
                "K6_NO_USAGE_REPORT": "true",
            }
            os.environ.update(env)
            load = load_avg()
            argv = k6_argv(tools["K6"])
            cpu0, gen0, wait0 = cpu_seconds(svc), child_cpu(), sched_wait_s(svc)
            io0, db0 = written_bytes(svc), store_cpu()
            out, wall = run_generator(argv, seconds + 120, work)
            svc_cpu, gen_cpu = cpu_seconds(svc) - cpu0, child_cpu() - gen0
            db_cpu = store_cpu() - db0
            waited = sched_wait_s(svc) - wait0
            wrote = written_bytes(svc) - io0
            tasks = wait_drained(url, 60)
    if not summary.exists():
        raise RuntimeError(f"k6 wrote no summary:\n{out[-1500:]}")
    f = mix_figures(json.loads(summary.read_text()))
    causes = sorted({m.group(1).strip() for m in K6_FAIL_RE.finditer(out)})
    rps = f["steady"] / (seconds - MIX_WARMUP_S)
    worst = max(f[f"p99_{rt}"] for rt in ("submit_fetch", "submit_factorial", "status", "result"))
    server_ok = tasks.get("SUCCEEDED", 0) == f["done"] and tasks.get("FAILED", 0) == 0
    failures = int(f["failures"]) + int(f["dropped"])
    on = "" if kind == "sqlite" else f" on {kind}"
    return Row(
        f"seed-000 mix @ {rate} tasks/s{on}",
        "k6",
        rps,
        f["p50"],
        worst,
        f"{int(f['failures'])} (+{int(f['dropped'])} dropped iterations)",
        ">= 2,500 req/s, p99 < 100 ms, 0 failures",
        rps >= 2500 and worst < 100 and failures == 0 and server_ok,
        load,
        notes=[
            _mix_note(
                f,
                causes,
                seconds,
                tasks,
                kind,
                wall=wall,
                svc_cpu=svc_cpu,
                gen_cpu=gen_cpu,
                db_cpu=db_cpu,
                waited=waited,
                wrote=wrote,
            )
        ],
        commands=[
            shlex.join(
                service_argv(
                    tools["TASKQUEUE"], Path("$DATA"), None, "$DATABASE" if database else None
                )
            ),
            shlex.join(origin_argv()),
            " ".join(f"{k}={v}" for k, v in env.items() if k != "SUMMARY") + " " + shlex.join(argv),
        ],
    )


def _mix_note(
    f: dict[str, float],
    causes: list[str],
    seconds: int,
    tasks: dict[str, int],
    kind: str,
    *,
    wall: float,
    svc_cpu: float,
    gen_cpu: float,
    db_cpu: float,
    waited: float,
    wrote: int,
) -> str:
    """_mix_note: the mix row's note: p99 by request type, the failures seen, what req/s
    counts, disk writes per task, the tasks as k6 and the server counted them, and the CPU
    of the service (and the wait for one), of its store and of k6 over the run's ``wall`` s."""
    p99s = ", ".join(
        f"{rt} {f[f'p99_{rt}']:.1f}"
        for rt in ("submit_fetch", "submit_factorial", "status", "result")
    )
    return (
        f"p99 ms by type: {p99s} (p99 column: the worst type; p50: all requests); "
        + (f"failures seen: {'; '.join(causes[:5])}; " if causes else "")
        + f"req/s = {int(f['steady'])} requests sent from {MIX_WARMUP_S} s to {seconds} s "
        f"(all: {int(f['requests'])} in {f['wall_s']:.1f} s incl. ramp-up and drain); "
        f"disk writes {wrote / max(1, f['iterations']) / 1024:.1f} KiB per task; "
        f"{int(f['iterations'])} tasks, k6 done {int(f['done'])}, server "
        f"{tasks}; service CPU {100 * svc_cpu / wall:.0f}% of a core, "
        f"waited {waited:.1f} s for a CPU "
        f"({1e6 * svc_cpu / max(1, f['requests']):.0f} us/request incl. running tasks), "
        + (
            f"{kind} {100 * db_cpu / wall:.0f}% ({1e6 * db_cpu / max(1, f['requests']):.0f}"
            " us/request), "
            if kind != "sqlite"
            else ""
        )
        + f"k6 {100 * gen_cpu / wall:.0f}%"
    )


def table(rows: list[Row]) -> str:
    """table renders the results as Markdown, with each run's notes and commands below it."""
    lines = [
        "| scenario | tool | req/s | p50 ms | p99 ms | errors | goal | met? | load avg |",
        "|---|---|---:|---:|---:|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.scenario} | {r.tool} | {r.rps:,.0f} | {r.p50_ms:.1f} | "
            f"{r.p99_ms:.1f} | {r.errors} | {r.goal} | {'yes' if r.met else 'NO'} | "
            f"{r.load} |"
        )
    lines.append("")
    for i, r in enumerate(rows, 1):
        lines.append(f"{i}. **{r.scenario}**: " + "; ".join(r.notes))
        lines.extend(f"   - `{c}`" for c in r.commands)
    return "\n".join(lines) + "\n"


def mix_job(tools: dict[str, str], seconds: int, rate: int, kind: str, work: Path) -> Row:
    """mix_job binds one mix rate and store for the job list (a lambda in a loop would bind
    late)."""
    return scenario_mix(tools, work, seconds, rate, kind)


def placement() -> str:
    """placement says where each side ran and what else shared the box (for the results)."""
    where = (
        "service pinned to core 0 (`taskset -c 0`, with its threads and worker processes); "
        "wrk/k6 and the origin on core 1 (`taskset -c 1`)"
        if CORES
        else "nothing pinned (the scheduler placed service, generator and origin)"
    )
    return (
        f"{os.cpu_count()} cores; {where}. The box was shared with other engineers' builds "
        "and tests during the runs: the load average is given per row, and each note says "
        "how long the service's threads waited for a CPU."
    )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """parse_args reads the command line."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=int, default=30, help="duration of each run (default 30)")
    p.add_argument("--runs", type=int, default=1, help="runs of each scenario (default 1)")
    p.add_argument(
        "--only",
        default="status,submit,mix",
        help="comma-separated scenarios: status, submit, submit-fetch, mix",
    )
    p.add_argument("--conns", type=int, default=64, help="wrk connections (default 64)")
    p.add_argument(
        "--mix-rate",
        default="700",
        help="k6 new tasks per second; a comma list runs each (default 700: about "
        "2,600 req/s at ~3.7 requests a task)",
    )
    p.add_argument(
        "--store",
        default="sqlite",
        help="the mix's store: sqlite, postgres, or sqlite,postgres for both back to back at "
        "each rate, alternating which goes first (default sqlite)",
    )
    p.add_argument(
        "--service-cmd",
        default=str(VENV_BIN / "taskqueue"),
        help="command that runs the taskqueue CLI, for A/B runs of a scratch copy "
        "(e.g. 'env PYTHONPATH=/tmp/copy .venv/bin/python -m taskqueue')",
    )
    p.add_argument(
        "--no-pin",
        action="store_true",
        help="do not pin (default: service on core 0, generator and origin on core 1)",
    )
    p.add_argument(
        "--results",
        type=Path,
        help="append the table here instead of bench/results/taskqueue.md (e.g. a smoke run)",
    )
    p.add_argument("--no-record", action="store_true", help="print the table only")
    args = p.parse_args(argv)
    if not 1 <= args.seconds <= 300 or not 1 <= args.runs <= 10:
        p.error("--seconds must be 1..300 and --runs 1..10")
    if "mix" in args.only and args.seconds < 2 * MIX_WARMUP_S:
        p.error(
            f"the mix needs --seconds >= {2 * MIX_WARMUP_S} "
            f"(its first {MIX_WARMUP_S} s are ramp-up)"
        )
    return args


def main(argv: list[str] | None = None) -> int:
    """main runs the chosen scenarios and prints the table."""
    args = parse_args(argv)
    ctx = record.Context.now(sys.argv[:1] + argv if argv is not None else None)
    tools = peers()
    tools["TASKQUEUE"] = args.service_cmd
    if args.no_pin:
        CORES.clear()
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    unknown = only - {"status", "submit", "submit-fetch", "mix"}
    if unknown:
        print(f"taskqueue bench: unknown scenario(s) {sorted(unknown)}", file=sys.stderr)
        return 2
    try:
        rates = [int(r) for r in args.mix_rate.split(",") if r.strip()]
    except ValueError:
        print(
            f"taskqueue bench: --mix-rate {args.mix_rate!r} is not a list of integers",
            file=sys.stderr,
        )
        return 2
    stores = [k.strip() for k in args.store.split(",") if k.strip()]
    if not stores or set(stores) - {"sqlite", "postgres"}:
        print(f"taskqueue bench: --store {args.store!r}: sqlite, postgres", file=sys.stderr)
        return 2
    wants = {"WRK": only & {"status", "submit", "submit-fetch"}, "K6": only & {"mix"}}
    for key, needed in wants.items():
        if needed and not (tools.get(key) and Path(tools[key]).exists()):
            print(f"taskqueue bench: {key.lower()} not found (see {PEERS_ENV})", file=sys.stderr)
            return 2
    jobs: list[Callable[[Path], Row]] = []
    for run in range(args.runs):
        if "status" in only:
            jobs.append(lambda w: scenario_status(tools, w, args.seconds, args.conns))
        if "submit" in only:
            jobs.append(lambda w: scenario_submit(tools, w, args.seconds, args.conns, "factorial"))
        if "submit-fetch" in only:
            jobs.append(lambda w: scenario_submit(tools, w, args.seconds, args.conns, "fetch"))
        if "mix" in only:
            order = stores if run % 2 == 0 else stores[::-1]
            jobs.extend(
                functools.partial(mix_job, tools, args.seconds, r, k) for r in rates for k in order
            )
    rows = []
    for job in jobs:
        with tempfile.TemporaryDirectory(prefix="tq-bench-") as tmp:
            row = job(Path(tmp))
        rows.append(row)
        print(
            f"{row.scenario}: {row.rps:,.0f} req/s, p99 {row.p99_ms:.1f} ms, errors "
            f"{row.errors} (load {row.load})",
            file=sys.stderr,
            flush=True,
        )
    text = table(rows)
    print(text)
    if not args.no_record:
        body = placement() + "\n\n" + text
        where = record.append("taskqueue", "taskqueue scenarios", ctx, body, args.results)
        print(f"\nrecorded in {where}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
