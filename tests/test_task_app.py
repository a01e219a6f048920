"""The test server's task app (seed 000's task-queue API, lean: one TCP segment per answer)
driven by the seed-000 benchmark flow; assertions compare redline's books with the server's
own counters."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import jsonschema
import redline
from conftest import run_cli

ROOT = Path(__file__).resolve().parent.parent
RESULT_SCHEMA = json.loads((ROOT / "docs/schema/result.schema.json").read_text())


def run_json(tmp_path: Path, *argv: str) -> tuple[int, str, dict]:
    out = tmp_path / "r.json"
    p = run_cli("run", *argv, "-q", "--json", str(out))
    return p.returncode, p.stderr, json.loads(out.read_text()) if out.exists() else {}


def test_seed000_flow_against_the_task_app(tmp_path):
    flow = str(ROOT / "bench/scenarios/seed000_flow.py")
    with redline.Target(threads=1) as t:
        code, err, doc = run_json(tmp_path, flow, "--host", t.url, "-u", "4", "-d", "2s")
        seen = t.stats()
    assert code == 0, err
    names = doc["per_name"]
    # Every request redline counted under a name is one the server answered as that route.
    assert names["submit"]["requests"] == seen["tasks_submitted"] > 0
    assert names["status"]["requests"] == seen["tasks_polled"]
    assert names["result"]["requests"] == seen["tasks_results"]
    assert seen["tasks_refused"] == 0 and doc["errors_total"] == 0
    # A task runs 2 ms: back-to-back polls see it RUNNING at least once per task.
    assert seen["tasks_polled"] > seen["tasks_submitted"]
    it = doc["scenario"]["iterations"]
    assert it["completed"] == seen["tasks_results"] and it["failed"] == 0


def test_the_seed000_flow_takes_its_think_and_poll_interval_as_run_variables():
    """One flow for the benchmarks and the soak: by default no pause and polls back to back;
    ``--var THINK=6s --var POLL_EVERY=20ms`` is the soak's idle-connection flow."""
    from redline.scenario import load

    flow = str(ROOT / "bench/scenarios/seed000_flow.py")
    for run_vars, interval_s, think in [
        ({}, 0.0, []),
        ({"THINK": "6s", "POLL_EVERY": "20ms"}, 0.02, [("constant", 6.0)]),
    ]:
        steps = load(flow, run_vars).plan["flows"][0]["steps"]
        assert [s["step"] for s in steps[:3]] == ["request", "poll", "request"]
        assert steps[1]["interval_s"] == interval_s
        assert [(s["dist"], s["s"]) for s in steps[3:]] == think


def test_a_failed_task_fails_the_status_check(tmp_path):
    path = tmp_path / "fail.py"
    path.write_text(
        textwrap.dedent("""\
        from redline.scenario import Scenario, json_eq, json_in
        s = Scenario(users=2)
        @s.flow
        def f(u):
            tid = u.post("/tasks/submissions", json={"type": "fail"}, name="submit",
                         status=202).json("$.id")
            u.poll(f"/tasks/submissions/{tid}", name="status", every=0, timeout="5s",
                   until=json_in("$.status", ["SUCCEEDED", "FAILED"]),
                   checks=[json_eq("$.status", "SUCCEEDED")])
            u.get(f"/tasks/{tid}", name="result", status=200)
        """)
    )
    with redline.Target(threads=1) as t:
        code, err, doc = run_json(tmp_path, str(path), "--host", t.url, "--iterations", "3")
        seen = t.stats()
    assert code == 0, err
    status = doc["per_name"]["status"]
    assert seen["tasks_submitted"] == 6 and seen["tasks_results"] == 0
    assert status["requests"] == seen["tasks_polled"]
    # The last poll of each task said FAILED: one failure per task, with the check's reason.
    assert status["errors"] == 6 == doc["errors"]["check"]
    assert status["failure_reasons"] == {'$.status is "FAILED", expected "SUCCEEDED"': 6}
    assert doc["scenario"]["iterations"]["failed"] == 6


def test_a_tally_counts_what_the_service_said_as_the_server_said_it(tmp_path):
    """tally="$.status": each answer counted by its status, per name and per interval; the
    server counts the RUNNING answers it gave, the truth the tally is held to."""
    path = tmp_path / "tally.py"
    path.write_text(
        textwrap.dedent("""\
        from redline.scenario import Scenario, json_eq, json_in
        s = Scenario(users=3)
        @s.flow
        def f(u):
            tid = u.post("/tasks/submissions", json={"type": "factorial"}, name="submit",
                         status=202, tally="$.status").json("$.id")
            u.poll(f"/tasks/submissions/{tid}", name="status", every=0, timeout="5s",
                   until=json_in("$.status", ["SUCCEEDED", "FAILED"]),
                   checks=[json_eq("$.status", "SUCCEEDED")], tally="$.status")
            u.get(f"/tasks/{tid}", name="result", status=200, tally="$.status")
        """)
    )
    with redline.Target(threads=1) as t:
        code, err, doc = run_json(
            tmp_path, str(path), "--host", t.url, "-d", "1.5s", "--interval", "0.25s"
        )
        seen = t.stats()
    assert code == 0, err
    jsonschema.validate(doc, RESULT_SCHEMA)
    names = doc["per_name"]
    polled, running = seen["tasks_polled"], seen["tasks_running"]
    assert 0 < running < polled, seen
    # Every answer tallied once, as the server said it.
    assert names["submit"]["tally"] == {"QUEUED": seen["tasks_submitted"]}
    assert names["status"]["tally"] == {"RUNNING": running, "SUCCEEDED": polled - running}
    # The result is 100!'s digits: a JSON number, which has no $.status.
    assert names["result"]["tally"] == {"(missing)": seen["tasks_results"]}
    # The intervals add up to the run's tally (no warm-up: every interval is measured).
    by_interval: dict[str, int] = {}
    for snap in doc["timeseries"]:
        for value, n in snap["names"]["status"].get("tally", {}).items():
            by_interval[value] = by_interval.get(value, 0) + n
    assert by_interval == names["status"]["tally"]
    assert sum(1 for s in doc["timeseries"] if s["names"]["status"].get("tally")) >= 3
