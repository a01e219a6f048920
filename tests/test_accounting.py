"""Every request a run intended is reported as exactly one of answered, failed, unfinished or
never sent (issue 7), checked through the Python API against the bundled target, whose
/__stats counts what it received."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import redline

SCHEMA = json.loads(
    (Path(__file__).parent.parent / "docs" / "schema" / "result.schema.json").read_text()
)


def books(result: redline.Result) -> tuple[int, int]:
    """books returns (the sum of the four outcomes, intended)."""
    transport = result.errors_total - result.errors["status"]
    return result.requests + transport + result.unfinished + result.unsent, result.intended


def test_requests_held_past_the_grace_are_reported_unfinished(target):
    # Every request hangs; the timeout (30 s) outlasts the 5 s grace, so at the cut-off each
    # of the 4 VUs has one request out: not an answer, not an error, but in the report.
    before = target.stats()["requests"]
    result = redline.run(
        target.url + "/?hang=1", connections=4, duration="0.5s", threads=1, timeout="30s"
    )
    received = target.stats()["requests"] - before
    jsonschema.validate(result.data, SCHEMA)
    assert (result.requests, result.unfinished, result.unsent) == (0, 4, 0)
    assert received == result.requests + result.unfinished == 4
    assert books(result) == (4, 4)
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
    assert books(result) == (400, 400)
    assert received == result.requests + result.unfinished
    assert result.unsent >= 300, result.unsent
    g = result.generator
    assert (g["limit"], g["saturated"]) == ("pool", False), g["verdict"]
    assert f"{result.unsent} hits due before the end were never sent" in g["verdict"]
    assert result.data["connections"] == 4
