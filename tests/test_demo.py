"""``redline demo --quick`` end to end: the four answers, the two reports, and nothing it
started left running afterwards, also when it is interrupted."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import psutil
import pytest
from consistency import assert_consistent
from redline.find.demo import DONE_SERIES, QUEUED_SERIES, SCENARIO, truth
from redline.scenario.compiler import load

REDLINE = str(Path(sys.executable).parent / "redline")
SCHEMA = json.loads(
    (Path(__file__).resolve().parent.parent / "docs/schema/find.schema.json").read_text()
)

pytestmark = pytest.mark.skipif(
    not (Path(sys.executable).parent / "taskqueue").exists(), reason="taskqueue is not installed"
)


def started_pids(text: str) -> list[int]:
    """The pids the demo says it started (origin and taskqueue)."""
    return [int(p) for p in re.findall(r"\(pid (\d+)\)", text)]


def descendants_of(pids: list[int]) -> list[psutil.Process]:
    procs = []
    for pid in pids:
        try:
            p = psutil.Process(pid)
            procs += [p, *p.children(recursive=True)]
        except psutil.NoSuchProcess:
            pass
    return procs


def assert_all_gone(procs: list[psutil.Process]) -> None:
    _, alive = psutil.wait_procs(procs, timeout=15)
    assert not alive, f"left running: {[(p.pid, p.name()) for p in alive]}"


@pytest.mark.slow
def test_demo_quick_end_to_end(tmp_path):
    proc = subprocess.Popen(
        [REDLINE, "demo", "--quick", "-q"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    seen: list[psutil.Process] = []
    lines = []
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line)
        if "(pid " in line:
            seen = descendants_of(started_pids(line))
    assert proc.wait(timeout=150) == 0, "".join(lines)
    out = "".join(lines)
    result = json.loads((tmp_path / "demo-result.json").read_text())
    jsonschema.validate(result, SCHEMA)
    md = (tmp_path / "demo-report.md").read_text()
    assert_consistent(result, md)
    a = result["answers"]
    assert (a["steady_state_throughput_rps"] or 0) > 0, a  # None: no steady step, said in a
    # The four answers are printed as the JSON says them, numbered.
    for n, key in enumerate(("throughput", "latency", "optimal", "limit"), start=1):
        assert f"{n}. {a['text'][key]}" in out, (key, out)
    # Seed 000 asks how many tasks a second the service completes: the answers say it.
    assert a["unit"] == "tasks/s", a["unit"]
    assert "tasks a second" in out, out
    # A task is counted done when taskqueue's own counter says so (not when a user's status
    # poll happened to see it), and every interval carries that count and the queue's depth.
    assert result["config"]["throughput"].endswith("#" + DONE_SERIES), result["config"]
    assert result["config"]["backlog"].endswith("#" + QUEUED_SERIES), result["config"]
    assert "tasks taskqueue completed (its own counter" in out, out
    work = [i["work"] for i in result["timeseries"] if "work" in i]
    assert len(work) >= 0.9 * len(result["timeseries"]), len(work)
    assert all(w["completed"] is None or w["completed"] >= 0 for w in work)
    # The HTTP figures beside the tasks: every answer a second at the steady state.
    assert "req/s answered over HTTP" in a["text"]["throughput"], a["text"]
    assert (tmp_path / "demo-report.html").stat().st_size > 1000
    assert len(seen) >= 2, out
    assert_all_gone(seen)
    # Known truth: taskqueue cannot complete more tasks than its fetch connections allow
    # (demo.truth: 25 connections to an origin answering in 500 ms, one factorial for five
    # fetches: 60 tasks a second). No answer exceeds it by more than its own ±.
    bound = truth(load(SCENARIO, {"ORIGIN": "http://127.0.0.1:9/"}).plan)
    assert bound == pytest.approx(60.0)
    assert f"{bound:,.0f} tasks a second" in out, out
    x, x_ci = a["steady_state_throughput_rps"], a["steady_state_throughput_ci"] or 0.0
    assert x - x_ci <= 1.05 * bound, (x, x_ci, bound)
    cap, cap_ci = a["limit"].get("capacity_rps"), a["limit"].get("capacity_ci") or 0.0
    assert cap is None or cap - cap_ci <= 1.05 * bound, (cap, cap_ci, bound)
    # And the search reaches it: the pool runs out on a fifth of a core, so a busy 2-core
    # machine (load average 15 while this was written: a step read 28 tasks/s while the
    # machine stalled) still gives some good step within 15 % of the truth, and the part
    # named is the fetch pool. (The ±3 % is bench/demo.py's, on the full demo.)
    best = max((s["throughput_rps"] or 0.0 for s in result["steps"] if s["ok"]), default=0.0)
    assert best >= 0.85 * bound, [(s["load"], s["throughput_rps"]) for s in result["steps"]]
    # (On a machine this busy redline's own workers may wait for a CPU first: the generator
    # is then named, truthfully; never the executor slots the fetches hold while they wait
    # for a connection, nor taskqueue's CPU, starved by other work from the first step on.)
    named = a["limit"].get("bottleneck") or {}
    if named.get("part") is not None and named["resource"] != "generator":
        assert named["resource"] == "pool", named
        assert "taskqueue_fetch_host_connections" in named["evidence"], named
    # The service's own count against redline's: every submit the users saw accepted is a
    # task taskqueue finished (a submit cut off by the end of the search may be accepted
    # unseen: one a user stopped at most); the counter's growths redline read add up to its
    # count less what completed after the last reading; the users' polls saw no more
    # succeed than it completed, and fewer by at most a task a user stopped.
    rec = result["reconciled"]
    done, read, saw = rec["service_completed"], rec["redline_read"], rec["users_saw"]
    assert rec["service_unfinished"] == 0, rec
    finished = done + rec["service_failed"]
    assert 0 <= finished - rec["redline_submitted"] <= rec["users_stopped"], rec
    assert 0.9 * done <= read <= done, rec
    assert 0 <= done - saw <= rec["users_stopped"], rec
    assert f"taskqueue finished {finished:,} tasks" in out, out


def test_demo_stops_everything_on_ctrl_c(tmp_path):
    proc = subprocess.Popen(
        [REDLINE, "demo", "--quick"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        # The default SIGINT disposition, even when the suite runs in the background.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert proc.stdout is not None
    seen: list[psutil.Process] = []
    deadline = time.monotonic() + 60
    # Interrupt once the search is measuring: its first interval line (the live view
    # prints one a line when not on a terminal), or after a bounded wait.
    for line in proc.stdout:
        if "(pid " in line:
            seen = descendants_of(started_pids(line))
        if " load=" in line or time.monotonic() > deadline:
            break
    os.kill(proc.pid, signal.SIGINT)
    rest = proc.communicate(timeout=60)[0]
    assert proc.returncode == 130, rest
    assert len(seen) >= 2
    assert_all_gone(seen)


def _step(index: int, phase: str, tasks: float, answered_rps: float, ok: bool = True) -> dict:
    return {
        "index": index,
        "phase": phase,
        "throughput_rps": tasks,
        "answered_rps": answered_rps,
        "ok": ok,
    }


def test_the_tasks_line_gives_requests_a_second_with_or_without_a_confirmation():
    """The demo's line speaks in tasks and in requests from the step the steady state was read
    from: the confirmation when there is one, else the good step with the most goodput (a
    search cut short by its budget has no confirmation; it printed 'n/a' then), not the
    last good step (here a lighter one the optimum's bisection measured after it)."""
    from redline.find.demo import DONE_SERIES, tasks_line

    answers = {"steady_state_throughput_rps": 300.0, "steady_state_load": 64}
    searched = [_step(0, "search", 160, 900.0), _step(1, "search", 300, 1700.0)]
    searched.append(_step(2, "optimum", 200, 1150.0))
    throughput = f"prometheus:http://127.0.0.1:9/metrics#{DONE_SERIES}=tasks"
    line = tasks_line({"answers": answers, "steps": searched}, throughput)
    assert "300 tasks a second" in line and "1,700 req/s" in line, line
    over = _step(3, "search", 420, 2500.0, ok=False)
    confirmed = [*searched, over, _step(4, "confirm", 290, 1650.0)]
    line = tasks_line({"answers": answers, "steps": confirmed}, throughput)
    assert "1,650 req/s" in line and "n/a" not in line, line
