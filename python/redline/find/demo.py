"""demo: ``redline demo`` / ``make demo``. Starts the bundled services on 127.0.0.1 (the
target server as taskqueue's http-fetch origin, and taskqueue on SQLite in a temporary
directory), watches taskqueue, runs ``redline find`` against it, prints the four answers and
writes ``demo-report.html`` and ``demo-report.md`` (and ``demo-result.json``) in the working
directory. Everything it started is stopped at the end, on an error and on Ctrl-C.

The workload is the seed-000 scenario, ``examples/taskqueue.py``; where the scenario compiler
or the file is missing (an installed wheel), taskqueue's status read of a real task,
``GET /tasks/submissions/{id}``, as a plain URL.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from redline.errors import RedlineError
from redline.service.tether import tethered

#: START_TIMEOUT_S bounds how long a service may take to print its address.
START_TIMEOUT_S = 30.0

_URL = re.compile(rb"(http://127\.0\.0\.1:[0-9]+)")

#: ORIGIN_LATENCY_MS: how long the http-fetch origin takes to answer, as a remote API would
#: (the target answers after ?latency=). FETCH_PER_HOST: taskqueue's connections to one
#: origin host. Together they bound the service's fetches at FETCH_PER_HOST / latency a
#: second, a capacity of known truth the demo's answer can be held to (:func:`truth`).
#: The truth holds only where the pool runs out long before the service's CPU, also on a
#: busy machine: 10 connections to a 40 ms origin (300 tasks/s) needed 0.6 of a core for
#: the fetches and the ~1,200 polls a second, and under a load average of 12 on 2 cores the
#: service got 0.25-0.7 of one (a fetch held its connection 50 ms, not 40): the demo read
#: 102-235 tasks/s and named the executor slots. 25 connections to a 500 ms origin make 60
#: tasks/s, which the service completes on a fifth of a core, and the few milliseconds a
#: busy machine adds to each fetch are 1 % of it, not 25 %.
ORIGIN_LATENCY_MS = 500
FETCH_PER_HOST = 25

#: DONE_SERIES: taskqueue's own counter of the tasks it completed; QUEUED_SERIES: its gauge
#: of the tasks waiting for a slot (both on its /metrics).
DONE_SERIES = 'taskqueue_tasks_finished_total{status="SUCCEEDED"}'
QUEUED_SERIES = 'taskqueue_tasks{status="QUEUED"}'

#: The search's time budget (seconds): the whole demo (services, search, reports) stays
#: under 150 s, about a minute with --quick.
BUDGET = {"full": 125.0, "quick": 45.0}


def console_script(name: str) -> str:
    """console_script is the path of a console script installed beside this Python (the
    venv's bin); a clear error when it is missing."""
    path = Path(sys.executable).parent / name
    if not path.exists():
        raise RedlineError(f"{name} is not installed beside {sys.executable}: run make install")
    return str(path)


@contextmanager
def service(argv: list[str], log: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """service starts a server that prints its URL, in its own process group, and stops the
    whole group afterwards (taskqueue's worker processes included)."""
    with log.open("wb") as out:
        proc = subprocess.Popen(
            tethered(argv), stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            match = _URL.search(log.read_bytes())
            if match:
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = log.read_text(errors="replace")[-400:]
                raise RedlineError(f"{Path(argv[0]).name} did not start: {tail}")
            time.sleep(0.05)
        yield match.group(1).decode(), proc
    finally:
        stop_group(proc)


def stop_group(proc: subprocess.Popen[bytes]) -> None:
    """stop_group ends a process and everything in its process group: SIGTERM, then SIGKILL
    after 10 s."""
    for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            proc.wait(wait)
        except subprocess.TimeoutExpired:
            continue
        # The leader is gone; sweep stragglers left in its group.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        return


def submit(base: str) -> str:
    """submit creates one task and returns its status URL (the demo's workload for now)."""
    req = urllib.request.Request(
        f"{base}/tasks/submissions",
        data=json.dumps({"type": "factorial", "n": 100}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        task = json.loads(resp.read())
    return f"{base}/tasks/submissions/{task['id']}"


def _terminate_on_sigterm() -> None:
    """A SIGTERM to the demo unwinds like Ctrl-C, so the services it started stop too."""

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)


def demo(quick: bool = False, out_dir: str | os.PathLike[str] = ".", live: bool = True) -> int:
    """demo runs the whole walk-through; returns the exit status."""
    from redline.find import finder
    from redline.find.view import FindView, write_outputs

    _terminate_on_sigterm()
    budget = BUDGET["quick" if quick else "full"]
    out = Path(out_dir)
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="redline-demo-")))
        origin, origin_proc = stack.enter_context(
            service(
                [console_script("redline"), "target", "--threads", "1", "--port", "0"],
                tmp / "o.log",
            )
        )
        taskqueue = [
            console_script("taskqueue"),
            "serve",
            "--port",
            "0",
            "--data-dir",
            str(tmp / "data"),
        ]
        taskqueue += ["--allow-fetch-cidr", "127.0.0.0/8"]
        taskqueue += ["--fetch-per-host", str(FETCH_PER_HOST)]
        base, proc = stack.enter_context(service(taskqueue, tmp / "tq.log"))
        print(f"redline demo: origin {origin} (pid {origin_proc.pid}),", end="")
        print(f" taskqueue {base} (pid {proc.pid})", flush=True)
        workload = _workload(base, origin, quick)
        print(f"redline demo: searching {workload['what']}", flush=True)
        if workload.get("bound"):
            print(
                f"redline demo: the origin answers in {ORIGIN_LATENCY_MS} ms, as a remote API"
                f" would, and taskqueue fetches over {FETCH_PER_HOST} connections to it: at"
                f" most {FETCH_PER_HOST * 1000 // ORIGIN_LATENCY_MS} fetches, so"
                f" {workload['bound']:,.0f} tasks a second (one factorial for five fetches),"
                " unless its CPU gives out first",
                flush=True,
            )
        monitor = _monitor(proc.pid)
        max_step = 6.0 if quick else 10.0
        view = FindView(budget, max_step, monitor=monitor) if live else None
        try:
            result = finder.find(
                workload["url"],
                plan=workload["plan"],
                scenario=workload["scenario"],
                start=workload["start"],
                model="closed",
                max_time=budget,
                max_load=workload["max_load"],
                slos=["p99<500ms"],
                throughput=workload["throughput"],
                backlog=workload.get("backlog"),
                watch=watched(base, proc.pid, origin_proc.pid),
                # Users think 1-2 s and poll once a second: joining over one iteration's length
                # keeps them from moving in waves that take many steps to damp.
                ramp=workload["ramp"],
                min_step=2.0 if quick else 3.0,
                max_step=max_step,
                confirm=5.0 if quick else 10.0,
                monitor=monitor,
                on_snapshot=view.snapshot if view else None,
                on_step=view.step if view else None,
            )
        finally:
            if view is not None:
                view.close()
        _say(result, workload["throughput"], base)
        html, md = out / "demo-report.html", out / "demo-report.md"
        try:
            write_outputs(result, str(out / "demo-result.json"), str(html), str(md))
            print(f"redline demo: wrote {html} and {md}", flush=True)
        except RedlineError as e:
            finder.write_json(result, out / "demo-result.json")
            print(f"redline demo: {e}; wrote {out / 'demo-result.json'} only", flush=True)
    return 130 if result.get("interrupted") else 0


def _say(result: dict[str, Any], throughput: str, base: str) -> None:
    """_say prints the four answers, the steady state in tasks and requests, and (counting
    taskqueue's tasks) its own counts beside redline's, kept in the result."""
    from redline.find import finder

    print(finder.answers_text(result), flush=True)
    print(tasks_line(result, throughput), flush=True)
    if DONE_SERIES in throughput:
        result["reconciled"] = reconcile(base, result)
        said = reconciled_line(result["reconciled"])
        print(said, flush=True)
        # The reports say it under the answers too.
        result["answers"].setdefault("notes", []).append(said.removeprefix("redline demo: "))


#: SCENARIO: the seed-000 workload, in the source tree beside this package.
SCENARIO = Path(__file__).resolve().parents[3] / "examples" / "taskqueue.py"


def _workload(base: str, origin: str, quick: bool) -> dict[str, Any]:
    """_workload is what the demo searches: the seed-000 scenario (submit, poll the status
    every second, read the result; think time 1-2 s) when the scenario compiler and the file
    are there, else taskqueue's status read of one real task as a plain URL."""
    try:
        from redline.scenario.compiler import load

        compiled = load(SCENARIO, {"ORIGIN": f"{origin}/?latency={ORIGIN_LATENCY_MS}ms"})
    except (ImportError, OSError):
        url = submit(base)
        return {
            "url": url,
            "plan": None,
            "scenario": None,
            "start": 1.0,
            "max_load": 256,
            "throughput": "requests",
            "ramp": None,
            "what": f"taskqueue's status reads ({url}): examples/taskqueue.py is not available",
        }
    # Each user makes about two requests a second (think time, one poll a second): start
    # with enough users to measure, and allow the hundreds it takes to load the service.
    bound = truth(compiled.plan)
    return {
        "bound": bound,
        "url": base,
        "plan": compiled.plan,
        "scenario": str(SCENARIO),
        # The pool runs out at about 150 users (60 tasks/s, 2.5 s an iteration).
        "start": 64.0,
        "max_load": 8192,
        # Seed 000 asks how many tasks a second the service completes: taskqueue counts them
        # itself (a submit counts a task accepted, not one done: a queue filling inside the
        # service accepts more than it completes; a status poll sees a task done only when
        # it happens to ask, so the polls' count arrives in waves: 260 ± 104 tasks/s).
        "throughput": f"prometheus:{base}/metrics#{DONE_SERIES}=tasks",
        # The tasks waiting: a step whose queue keeps growing is no steady state.
        "backlog": f"prometheus:{base}/metrics#{QUEUED_SERIES}",
        "ramp": 2.0,
        "what": f"taskqueue with the seed-000 scenario {SCENARIO.name}",
    }


def watched(base: str, pid: int, origin_pid: int) -> list[str]:
    """watched are the demo's parts: taskqueue's process (its CPU against the cores it may
    use) and its own /metrics (its pools: executor slots, fetch connections), and the
    origin's process."""
    return [
        f"taskqueue=pid:{pid}",
        f"taskqueue=prometheus:{base}/metrics",
        f"origin=pid:{origin_pid}",
    ]


def truth(plan: dict[str, Any]) -> float | None:
    """truth is the most tasks a second the demo's taskqueue can complete whatever its CPU:
    its fetches go over FETCH_PER_HOST connections to an origin answering in
    ORIGIN_LATENCY_MS, so at most FETCH_PER_HOST / latency fetches a second, and the
    scenario's flows (weights) say what share of the tasks fetch. None without a fetch
    flow."""
    weights = {f["name"]: float(f.get("weight", 1)) for f in plan.get("flows") or []}
    total = sum(weights.values())
    if not total or not weights.get("fetch"):
        return None
    fetches = FETCH_PER_HOST / (ORIGIN_LATENCY_MS / 1000.0)
    return fetches * total / weights["fetch"]


def tasks_line(result: dict[str, Any], throughput: str) -> str:
    """tasks_line says the steady state in tasks a second (the seed-000 question) and in
    requests a second (every submit, status poll and result read), from the same step."""
    a = result["answers"]
    x = a.get("steady_state_throughput_rps")
    if x is None or DONE_SERIES not in throughput:
        return "redline demo: throughput counts requests (the scenario was not available)."
    # The step the steady state was read from, as the answers chose it: the confirmation when
    # there is one, else the good step with the most goodput (a search cut short by its
    # budget has no confirmation).
    good = [s for s in result["steps"] if s["ok"]]
    confirmed = [s for s in good if s["phase"] == "confirm"]
    best = max(good, key=lambda s: s["throughput_rps"], default=None)
    step = confirmed[-1] if confirmed else best
    requests = f"{step['answered_rps']:,.0f} req/s" if step else "n/a"
    ci = a.get("steady_state_throughput_ci") or 0.0
    drift = a.get("repeat_drift")
    spread = ""
    if ci > 0 and x > 0:
        spread = f" ± {ci:,.0f} ({ci / x:.0%}"
        spread += (
            f"; the confirmation moved {drift:+.1%} from the search's step at that load)"
            if drift is not None
            else ")"
        )
    return (
        f"redline demo: throughput counts the tasks taskqueue completed (its own counter,"
        f" {DONE_SERIES.split('{')[0]}): {x:,.0f}{spread}"
        f" tasks a second in a steady state; in requests (submits, status polls, result"
        f" reads): {requests}."
    )


def reconcile(base: str, result: dict[str, Any], wait_s: float = 15.0) -> dict[str, Any]:
    """reconcile sets what taskqueue counted beside what redline counted, over the whole
    search (the service started with it, so its counters hold the search's tasks alone),
    once the tasks the users left behind have finished (at most ``wait_s``):
    ``service_completed`` and ``service_failed`` (its counter of finished tasks),
    ``service_unfinished`` (queued or running still), ``redline_submitted`` (submits
    answered 202: every one is a task the service must finish), ``redline_read`` (the
    growths redline read from the completed counter interval by interval: all but what
    completed after its last reading) and ``users_saw`` (status polls that said SUCCEEDED:
    a user sees a task done only when a poll of it does, so fewer, by at most a task for
    each user stopped: ``users_stopped``, at each step that lowered the load and at the
    end)."""
    from redline.service.work import scrape

    deadline = time.monotonic() + wait_s
    while True:
        try:
            got = scrape(f"{base}/metrics", 10.0)
        except OSError as e:
            return {"error": f"taskqueue's /metrics did not answer: {e}"}
        counts: dict[str, float] = {}  # finished, by status (the counter)
        now: dict[str, float] = {}  # tasks held now, by status (the gauge)
        for n, labels, v in got.samples:
            into = {"taskqueue_tasks_finished_total": counts, "taskqueue_tasks": now}.get(n)
            if into is not None:
                key = labels.get("status", "")
                into[key] = into.get(key, 0.0) + v
        unfinished = now.get("QUEUED", 0.0) + now.get("RUNNING", 0.0)
        if unfinished == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.25)
    series = result.get("timeseries") or []

    def name(s: dict[str, Any], what: str) -> dict[str, Any]:
        return (s.get("names") or {}).get(what) or {}

    submitted = sum(
        int(name(s, "submit").get("requests", 0)) - int(name(s, "submit").get("errors", 0))
        for s in series
    )
    read = sum(int((s.get("work") or {}).get("completed") or 0) for s in series)
    saw = sum(int((name(s, "status").get("tally") or {}).get("SUCCEEDED", 0)) for s in series)
    steps = sorted(result.get("steps") or [], key=lambda s: s["index"])
    loads = [float(s["load"]) for s in steps]
    stopped = sum(max(0.0, a - b) for a, b in itertools.pairwise(loads)) + (
        loads[-1] if loads else 0
    )
    return {
        "service_completed": int(counts.get("SUCCEEDED", 0.0)),
        "service_failed": int(counts.get("FAILED", 0.0)),
        "service_unfinished": int(unfinished),
        "redline_submitted": submitted,
        "redline_read": read,
        "users_saw": saw,
        "users_stopped": int(stopped),
    }


def reconciled_line(r: dict[str, Any]) -> str:
    """reconciled_line says :func:`reconcile`'s counts side by side, and where they
    disagree."""
    if "error" in r:
        return f"redline demo: not reconciled with taskqueue's own count: {r['error']}"
    done, read, saw = r["service_completed"], r["redline_read"], r["users_saw"]
    finished = done + r["service_failed"]
    said = [
        f"redline demo: taskqueue finished {finished:,} tasks ({done:,} succeeded) of the"
        f" {r['redline_submitted']:,} redline's users submitted and saw accepted"
    ]
    if r["service_unfinished"]:
        said.append(f"{r['service_unfinished']:,} still queued or running")
    said.append(
        f"redline read {read:,} completions from its counter during the search (the rest"
        " came after its last reading)"
    )
    unseen = done - saw
    said.append(
        f"the users' status polls saw {saw:,} succeed: {unseen:,} done that no poll had seen"
        + (
            f", within the {r['users_stopped']:,} users stopped mid-task at most"
            if 0 <= unseen <= r["users_stopped"]
            else f", more than the {r['users_stopped']:,} users stopped: the counts disagree"
        )
    )
    if finished != r["redline_submitted"]:
        said.append(f"{finished - r['redline_submitted']:+,} tasks against the submits")
    return "; ".join(said) + "."


def _monitor(pid: int) -> Any:
    """_monitor watches taskqueue's process tree when the monitor module is there."""
    try:
        from redline.service import monitor
    except ImportError:
        return None
    return monitor.ProcessMonitor(pid)
