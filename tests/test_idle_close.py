"""A kept-alive connection the server closed while it sat idle (its keep-alive timeout) is
replaced before a request is written on it: a flow whose think times outlast the server's idle
timeout loses no POST to a reset (crates/engine/src/conn_idle.rs). Each case compares what
redline reported with what the server counted, or stored."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
import redline
from accounting import assert_books
from conftest import run_cli
from taskqueue_server import running_taskqueue, tasks

#: FLOW: two submissions a think time apart: the second goes out on a connection idle for THINK.
FLOW = """\
from redline.scenario import Scenario
s = Scenario(users={users})
@s.flow
def f(u):
    u.post("/tasks/submissions", json={{"type": "factorial", "n": 10}}, name="first", status=202)
    u.think("{think}")
    u.post("/tasks/submissions", json={{"type": "factorial", "n": 10}}, name="second", status=202)
"""


def run_flow(tmp_path: Path, url: str, users: int, think: str, iterations: int) -> dict:
    path = tmp_path / "flow.py"
    path.write_text(textwrap.dedent(FLOW.format(users=users, think=think)))
    out = tmp_path / "r.json"
    p = run_cli(
        "run", str(path), "--host", url, "--iterations", str(iterations), "-q", "--json", str(out)
    )
    assert p.returncode == 0, p.stderr
    return json.loads(out.read_text())


def test_posts_after_the_test_servers_idle_timeout_all_arrive(tmp_path):
    # The server closes a connection idle for 100 ms; the flow waits 600 ms before each second
    # POST (the first of the next iteration follows the second at once).
    with redline.Target(threads=1, idle_timeout="100ms") as t:
        doc = run_flow(tmp_path, t.url, users=2, think="600ms", iterations=3)
        seen = t.stats()
    assert_books(doc)
    sent = doc["per_name"]["first"]["requests"] + doc["per_name"]["second"]["requests"]
    assert doc["errors_total"] == 0, doc["errors"]
    assert sent == seen["tasks_submitted"] == seen["requests"] == 2 * 3 * 2, seen
    # Every think outlasted the timeout: the server closed each user's connection during it.
    assert seen["idle_closed"] >= 2 * 3, seen
    assert doc["retries"] == 0, "nothing was sent on a closed connection"


def test_posts_after_uvicorns_keep_alive_timeout_all_arrive(tmp_path):
    # taskqueue's uvicorn closes a kept-alive connection after 5 s idle (its default): a POST
    # 5.5 s later met that close as a reset before (bench/results/soak.md, the hour-long rows).
    with running_taskqueue() as url:
        doc = run_flow(tmp_path, url, users=1, think="5500ms", iterations=1)
        stored = tasks(url)
    assert_books(doc)
    assert doc["errors_total"] == 0, doc["errors"]
    answered = doc["per_name"]["first"]["requests"] + doc["per_name"]["second"]["requests"]
    assert answered == len(stored) == 2, stored


def test_a_zero_idle_timeout_is_refused_in_one_line():
    with pytest.raises(redline.ConfigError, match=r"^idle timeout: must be above zero"):
        redline.Target(idle_timeout=0)
