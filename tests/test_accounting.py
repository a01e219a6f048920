"""Every request a run intended is reported as exactly one of answered, failed without an
answer, unfinished or never sent (issue 7; a failed check is an answered request, issue 14),
for every kind of run: checked by the one helper, tests/accounting.py, against the bundled
target, whose /__stats counts what it received."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import jsonschema
import pytest
import redline
from accounting import assert_books
from conftest import run_cli

SCHEMA = json.loads(
    (Path(__file__).parent.parent / "docs" / "schema" / "result.schema.json").read_text()
)


# Each case: (label, path, options, what the books hold, what the server received).
# The books' parts are exact where the physics makes them so.
RUNS = [
    (
        "closed, a request count",
        "/",
        dict(connections=4, requests=300),
        dict(answered=300, transport=0, unfinished=0, unsent=0),
        300,
    ),
    (
        "closed, 500s are answers and errors",
        "/?status=500",
        dict(connections=2, requests=100),
        dict(answered=100, transport=0, unfinished=0, unsent=0),
        100,
    ),
    (
        # Each VU sends, times out after 200 ms, sends again: 4 VUs x 5 in 1 s, all reached
        # the server, none answered.
        "closed, timeouts",
        "/?latency=2s",
        dict(connections=4, duration="1s", timeout="200ms"),
        dict(answered=0, transport=20, unfinished=0, unsent=0),
        20,
    ),
    (
        "closed, stages",
        "/?latency=5ms",
        dict(stages="500ms:4,500ms:4"),
        None,
        "answered",
    ),
    (
        "open, 200 req/s for 1 s",
        "/?latency=2ms",
        dict(rate=200, duration="1s"),
        dict(answered=200, transport=0, unfinished=0, unsent=0),
        200,
    ),
    (
        "open, stages",
        "/",
        dict(stages="1s:100,1s:100", open_model=True),
        dict(answered=150, transport=0, unfinished=0, unsent=0),
        150,
    ),
    (
        # Every request hangs; the timeout (30 s) outlasts the 5 s grace, so at the cut-off
        # each of the 4 VUs has one request out: not an answer, not an error.
        "closed, held past the grace",
        "/?hang=1",
        dict(connections=4, duration="0.5s", timeout="30s"),
        dict(answered=0, transport=0, unfinished=4, unsent=0),
        4,
    ),
]


@pytest.mark.parametrize(("label", "path", "options", "parts", "received"), RUNS)
def test_url_runs_balance_their_books(target, label, path, options, parts, received):
    before = target.stats()["requests"]
    result = redline.run(target.url + path, threads=1, **options)
    seen = target.stats()["requests"] - before
    jsonschema.validate(result.data, SCHEMA)
    got = assert_books(result)
    if parts is not None:
        assert got == parts, label
    if received == "answered":
        received = got["answered"]
    assert seen == received, (label, seen, got)


def test_refused_connections_balance_their_books(free_port):
    # 50 req/s for 1 s at a port nobody listens on: all 50 intended hits fail to connect,
    # exactly (a bound like `connect >= 40` would let lost or doubled hits through).
    result = redline.run(f"http://127.0.0.1:{free_port}/", rate=50, duration="1s", preflight=False)
    assert assert_books(result) == dict(answered=0, transport=50, unfinished=0, unsent=0)
    assert result.errors["connect"] == result.intended == 50


def test_held_requests_are_reported_unfinished(target):
    result = redline.run(
        target.url + "/?hang=1", connections=4, duration="0.5s", threads=1, timeout="30s"
    )
    assert_books(result)
    # Timed at their age at the cut-off (0.5 s window + 5 s grace): a lower bound, not lost.
    assert result.latency.max >= 5000
    assert "4 requests were unfinished at the cut-off" in result.generator["verdict"]


def test_open_run_with_a_small_pool_balances_its_books(target):
    # 400 req/s against 50 ms answers needs ~20 connections; 4 carry ~80 req/s.
    before = target.stats()["requests"]
    result = redline.run(
        target.url + "/?latency=50ms", rate=400, duration="1s", max_connections=4, threads=2
    )
    received = target.stats()["requests"] - before
    jsonschema.validate(result.data, SCHEMA)
    assert result.intended == 400, "the schedule: 400 req/s for 1 s"
    parts = assert_books(result)
    assert received == parts["answered"] + parts["unfinished"]
    assert result.unsent >= 300, result.unsent
    g = result.generator
    assert (g["limit"], g["saturated"]) == ("pool", False), g["verdict"]
    assert f"{result.unsent} hits due before the end were never sent" in g["verdict"]
    assert result.data["connections"] == 4


# -- scenarios: a failed check is an answered request with error class `check` ----------------

CHECKS = """\
from redline.scenario import Scenario, contains
s = Scenario(users=2)
@s.flow
def f(u):
    u.get("/", name="home", checks=[contains("text no page has")])
"""

MIXED = """\
from redline.scenario import Scenario
s = Scenario(users=2)
@s.flow
def f(u):
    u.get("/a", name="ok")
    u.get("/b?status=503", name="down", status=200)
"""


@pytest.mark.parametrize(
    ("label", "source", "errors", "parts"),
    [
        # 2 VUs x 5 iterations, one request each, every one answered and failing its check:
        # the books counted it twice before (20 = 10) when only `status` was set aside.
        ("every check fails", CHECKS, {"check": 10}, dict(answered=10, transport=0)),
        # Each iteration: /a answered, /b answered with a 503 the flow did not expect.
        ("503s not expected", MIXED, {"status": 10}, dict(answered=20, transport=0)),
    ],
)
def test_scenario_runs_balance_their_books(target, tmp_path, label, source, errors, parts):
    path = tmp_path / "flow.py"
    path.write_text(textwrap.dedent(source))
    out = tmp_path / "r.json"
    before = target.stats()["requests"]
    p = run_cli(
        "run", str(path), "--host", target.url, "--iterations", "5", "-q", "--json", str(out)
    )
    seen = target.stats()["requests"] - before
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    jsonschema.validate(doc, SCHEMA)
    assert {k: v for k, v in doc["errors"].items() if v} == errors, label
    got = assert_books(doc)
    assert got == {**parts, "unfinished": 0, "unsent": 0}, label
    assert seen == got["answered"] == doc["intended"], label
