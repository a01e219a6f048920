"""A flow that branches on the poll, run by `redline run` against the test server's task
app failing every 7th task: what the server counted (results fetched, resubmissions, tasks
it answered SUCCEEDED and FAILED) against each other and against redline's per-name counts."""

from __future__ import annotations

import json
from pathlib import Path

import redline
from conftest import run_cli

ROOT = Path(__file__).resolve().parent.parent

USERS, ITERATIONS, FAIL_EVERY = 4, 35, 7


def test_the_flow_branches_on_the_poll_exactly_as_the_server_answered(tmp_path):
    out = tmp_path / "r.json"
    with redline.Target(threads=2, fail_every=FAIL_EVERY) as t:
        p = run_cli(
            "run",
            str(ROOT / "examples/branching.py"),
            "--host",
            t.url,
            "--var",
            "EVERY=0",
            "-u",
            str(USERS),
            "--iterations",
            str(ITERATIONS),
            "-q",
            "--json",
            str(out),
        )
        seen = t.stats()
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    fresh = USERS * ITERATIONS
    failed = fresh // FAIL_EVERY
    # The server's own counts: every fresh task was answered SUCCEEDED or FAILED once; each
    # FAILED one was resubmitted once (a retry never fails: it is not fresh), and every
    # SUCCEEDED answer, first try or retry, had its result fetched.
    assert seen["tasks_submitted"] == fresh + failed
    assert seen["tasks_failed"] == failed > 0
    assert seen["tasks_resubmitted"] == seen["tasks_failed"]
    assert seen["tasks_results"] == seen["tasks_succeeded"] == fresh
    assert seen["tasks_refused"] == 0
    # redline's books agree, name by name.
    names = doc["per_name"]
    assert names["submit"]["requests"] == fresh
    assert names["resubmit"]["requests"] == seen["tasks_resubmitted"]
    assert names["result"]["requests"] == seen["tasks_results"]
    assert names["status"]["requests"] == seen["tasks_polled"]
    assert names["status"]["tally"]["FAILED"] == seen["tasks_failed"]
    assert names["status"]["tally"]["SUCCEEDED"] == seen["tasks_succeeded"]
    assert doc["errors_total"] == 0
    it = doc["scenario"]["iterations"]
    assert it["started"] == it["completed"] == fresh and it["failed"] == 0
