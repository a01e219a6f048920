"""What a run does at its edges, held to what a server saw: a scenario's iterations under way
at the end of ``-d`` (their requests after it are counted, and the rates cover the time they
went out in), and ``--http2`` to a server without it when the preflight is off (one line,
not a storm of protocol errors that reads as an outage). Issue 36."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import jsonschema
import pytest
import redline
from accounting import assert_books
from conftest import run_cli

SCHEMA = json.loads((Path(__file__).parent.parent / "docs/schema/result.schema.json").read_text())

#: SLOW_MS: the first request's latency. Each user's first iteration ends at 1.5 s (its two
#: fast requests sent then); the second starts at once, well inside -d 2s, and its first
#: answer comes at 3.0 s, a second past the end: its two fast requests go out after it.
SLOW_MS = 1500

SCENARIO = f"""
from redline.scenario import Scenario
scenario = Scenario(host="http://127.0.0.1:1", users=4, duration="2s")

@scenario.flow
def f(u):
    u.get("/slow?latency={SLOW_MS}ms", name="slow")
    u.get("/a", name="a")
    u.get("/b", name="b")
"""


def test_requests_sent_after_the_end_are_counted_and_the_rates_cover_their_time(tmp_path):
    """4 users, 2 iterations each: 24 requests, 8 of them (the second iterations' fast
    pair) sent about 1 s after -d. Before, every rate divided them by -d alone (12.0 req/s
    printed for 24 requests over 3 s), and the live line said they were answers to requests
    sent before the end."""
    path = tmp_path / "edge.py"
    path.write_text(textwrap.dedent(SCENARIO))
    out = tmp_path / "r.json"
    with redline.Target(threads=1) as t:
        p = run_cli("run", str(path), "--host", t.url, "--json", str(out))
        served = t.stats()["requests"]
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    jsonschema.validate(doc, SCHEMA)
    books = assert_books(doc)
    # What the server saw: every request, each answered, none cut off.
    assert served == doc["requests"] == 24 and doc["unfinished"] == 0, (served, books)
    it = doc["scenario"]["iterations"]
    assert (it["started"], it["completed"]) == (8, 8), it
    after = doc["after_end"]
    assert after["requests"] == 8, after
    assert 0.7 <= after["s"] <= 2.5, after  # ~1.0 s: the slow answer, 1.5 s after 1.5 s
    # The rates cover the time the requests went out in: -d and the time past it.
    assert doc["duration_s"] == pytest.approx(2.0 + after["s"], abs=0.01), doc["duration_s"]
    assert doc["rps"] == pytest.approx(24 / doc["duration_s"]), doc["rps"]
    assert doc["rps"] < 24 / 2.0 * 0.9, doc["rps"]
    for name, n in (("slow", 8), ("a", 8), ("b", 8)):
        assert doc["per_name"][name]["requests"] == n, (name, doc["per_name"][name])
    assert it["rate"] == pytest.approx(8 / doc["duration_s"], rel=0.01), it
    # What redline printed says so.
    assert f"24 requests in {doc['duration_s']:.2f}s" in p.stdout, p.stdout
    line = "After the end (2.00s): 8 requests sent by the iterations under way then, the last"
    assert line in p.stdout, p.stdout
    assert f"Requests/sec: {doc['rps']:>12.2f}" in p.stdout, p.stdout
    assert "the iterations under way went on sending" in p.stderr, p.stderr


def test_http2_without_the_preflight_still_names_a_server_that_does_not_speak_it(http1_server):
    """preflight=False skips the reachability check; a server that is up and speaks only
    HTTP/1.1 got the HTTP/2 preface on every connection: thousands of protocol errors and
    reconnects a second, "Target stopped answering", exit 0. Asked once, it is one line."""
    with pytest.raises(redline.UnreachableError) as e:
        redline.run(http1_server.url, http2=True, preflight=False, duration="2s", connections=2)
    assert "does not speak HTTP/2 without TLS (h2c)" in str(e.value)
    assert "\n" not in str(e.value)
    assert (http1_server.connections, http1_server.gets) == (1, 0), http1_server


def test_without_the_preflight_a_dead_port_is_still_run_against(free_port):
    """The question is asked only of a server that is up: a closed port still runs (its
    connects fail, counted), as preflight=False means."""
    r = redline.run(
        f"http://127.0.0.1:{free_port}/", http2=True, preflight=False, duration="1s", connections=1
    )
    assert r.requests == 0 and r.errors_total > 0, r
