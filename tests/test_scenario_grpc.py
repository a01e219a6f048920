"""gRPC calls in scenarios (``u.grpc``; docs/protocols.md) against the test server's gRPC
probe, whose truth is known (examples/grpc/probe.proto: ``Unary`` answers ``delay_ms`` after the
call with its ``payload``, ``Stream`` sends ``count`` messages (10 when 0), each call ends with
the status ``status`` asks for; the server counts ``grpc_calls``, ``grpc_received``,
``grpc_messages`` and ``grpc_failed``). Each test holds redline's books to the server's counts
exactly; the chain's calls act on the values the last reply gave (a stream of ``count``
messages, a call failed with ``status``), so what the server did is what it was sent."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import jsonschema
import pytest
import redline
from conftest import RESULT_SCHEMA, run_cli, run_flow
from redline.scenario import ScenarioError, load

ROOT = Path(__file__).parent.parent
PROBE = str(ROOT / "examples/grpc/probe.proto")

#: GRPC_FIELDS: the probe's counters a test diffs.
GRPC_FIELDS = ("grpc_calls", "grpc_received", "grpc_messages", "grpc_failed")


def call_url(target: redline.Target, method: str) -> str:
    return target.url.replace("http://", "grpc://", 1) + "/redline.probe.Probe/" + method


#: run runs a flow on the probe: its result document and the probe's counts (conftest).
run = partial(run_flow, fields=GRPC_FIELDS)


def test_calls_are_the_servers_and_timed_like_requests(target):
    """3 users x 2 iterations of a unary call (50 ms) and a streamed one (5 messages), beside
    an HTTP request: every call the server answered is a request of its step, every message
    it wrote was read, the unary latency is the probe's delay (never under it; p50 within
    25 % of 6 calls beside a busy suite, test_grpc holds the plain run's 5 %), and the calls
    have their origin's figures."""

    def flow(u):
        u.get("/?latency=1ms", name="page", status=200)
        u.grpc(call_url(target, "Unary"), proto=PROBE, message={"delay_ms": 50}, name="unary")
        u.grpc(
            call_url(target, "Stream"),
            proto=PROBE,
            message={"count": 5, "first_ms": 10, "gap_ms": 10},
            name="stream",
        )

    doc, seen = run(target, flow)
    names = doc["per_name"]
    assert seen["grpc_calls"] == 12 == names["unary"]["requests"] + names["stream"]["requests"]
    assert names["unary"]["requests"] == names["stream"]["requests"] == 6, names
    assert seen["grpc_received"] == 12 and seen["grpc_failed"] == 0, seen
    assert seen["grpc_messages"] == 36 and doc["stream"]["chunks"] == 30, (seen, doc["stream"])
    assert doc["errors_total"] == 0 and doc["scenario"]["iterations"]["completed"] == 6
    assert doc["status_codes"] == {"0": 12, "200": 6}, doc["status_codes"]
    assert doc["non_2xx"] == 0
    lat = names["unary"]["latency_ms"]
    assert lat["min"] >= 50 * 0.999 and abs(lat["p50"] - 50) <= 0.25 * 50, lat
    origin = target.url.replace("http://", "grpc://", 1)
    assert doc["per_host"][origin]["requests"] == 12, doc["per_host"].keys()


def test_a_value_from_one_reply_arrives_in_the_next_call_as_sent(target):
    """Each VU's number goes out as a payload, comes back in the reply, is extracted and sent
    as the next call's ``count``: the server writes that many messages (VU 0's 0: its 10), so
    its message count is the sum only the values as sent give; the streamed reply reads as a
    list, and its last message's payload (the VU's number again) is checked."""

    def chain(u):
        first = u.grpc(call_url(target, "Unary"), proto=PROBE, message={"payload": u.vu})
        n = first.json("$.payload")
        streamed = u.grpc(
            call_url(target, "Stream"), proto=PROBE, message={"count": n, "payload": n}
        )
        echo = streamed.json("$[0].payload")
        u.grpc(call_url(target, "Unary"), proto=PROBE, message={"payload": echo}, name="echo")

    doc, seen = run(target, chain, users=3, iterations=2)
    # Unary replies 2 x 3 x 2, streams (10 + 1 + 2) x 2.
    assert seen["grpc_messages"] == 12 + 26 == doc["stream"]["chunks"] + 12, (seen, doc["stream"])
    assert seen["grpc_calls"] == 18 and doc["errors_total"] == 0, (seen, doc["errors"])
    assert doc["per_name"]["echo"]["requests"] == 6


def test_a_status_other_than_ok_is_a_grpc_error_or_the_branch_the_flow_asked(target):
    """A call the probe fails with UNAVAILABLE (14): a ``grpc`` error of its step, with its
    name as the reason, ending the iteration; listed in ``status=``, the same code is an
    answer the flow branches on. The server's failed calls are those redline saw."""

    def failing(u):
        u.grpc(call_url(target, "Unary"), proto=PROBE, message={"status": 14}, name="down")
        u.get("/", name="after")

    doc, seen = run(target, failing, users=2, iterations=2)
    down = doc["per_name"]["down"]
    assert seen["grpc_failed"] == 4 == down["errors"] == doc["errors"]["grpc"], (seen, down)
    assert down["failure_reasons"] == {"gRPC UNAVAILABLE": 4}
    assert doc["status_codes"] == {"14": 4} and doc["per_name"]["after"]["requests"] == 0
    assert doc["scenario"]["iterations"]["failed"] == 4

    def expected(u):
        r = u.grpc(
            call_url(target, "Unary"),
            proto=PROBE,
            message={"status": 5},
            status=("OK", "NOT_FOUND"),
            name="lookup",
        )
        with u.when(r.status == 5):
            u.get("/", name="missing")

    doc, seen = run(target, expected, users=2, iterations=2)
    assert seen["grpc_failed"] == 4 and doc["errors_total"] == 0, (seen, doc["errors"])
    assert doc["per_name"]["missing"]["requests"] == 4


@pytest.mark.parametrize(
    ("call", "want"),
    [
        ("u.grpc('http://h/p.S/M', proto=P)", "a gRPC call's URL is grpc://"),
        ("u.grpc('/p.S/M', proto='none.proto')", "grpc(proto='none.proto'): no such file"),
        ("u.grpc('/p.S/M', proto=P, status='MAYBE')", "a gRPC status is a code 0-16"),
    ],
)
def test_a_bad_call_is_one_line_naming_the_scenario_line(tmp_path, call, want):
    src = tmp_path / "s.py"
    src.write_text(
        "import redline\n"
        f"P = {PROBE!r}\n"
        "s = redline.Scenario(host='http://127.0.0.1:1')\n"
        "@s.flow\n"
        "def f(u):\n"
        f"    {call}\n"
    )
    with pytest.raises(ScenarioError) as e:
        load(src)
    assert str(e.value).startswith(f"{src}:6: ") and want in str(e.value), str(e.value)
    assert "\n" not in str(e.value)


def test_a_mistake_the_engine_finds_names_the_line_too(target, tmp_path):
    """The method and the message's fit are read from the .proto when the plan is built:
    one line, the scenario's file and line."""

    def flow(u):
        u.grpc(call_url(target, "Nope"), proto=PROBE)

    s = redline.Scenario(host=target.url, users=1, iterations=1)
    s.flow(flow)
    with pytest.raises(redline.ConfigError) as e:
        redline.run(s, preflight=False)
    assert "has no method Nope" in str(e.value) and "test_scenario_grpc.py:" in str(e.value)


def test_the_documented_example_runs_as_the_server_counts(target, tmp_path):
    """examples/grpc_calls.py, as docs/protocols.md runs it: 3 users x 4 iterations of three
    calls and the fallback GET; the stream's messages are those the extracted counts asked
    for ((10 + 1 + 2) x 4), no error."""
    out = tmp_path / "r.json"
    before = target.stats()
    p = run_cli(
        "run", str(ROOT / "examples/grpc_calls.py"), "--host", target.url, "-q", "--json", str(out)
    )
    assert p.returncode == 0, p.stderr
    now = target.stats()
    seen = {k: now[k] - before[k] for k in GRPC_FIELDS}
    doc = json.loads(out.read_text())
    jsonschema.validate(doc, RESULT_SCHEMA)
    assert seen["grpc_calls"] == 36 and seen["grpc_failed"] == 12, seen
    assert seen["grpc_messages"] == 12 + 52 and doc["stream"]["chunks"] == 52, (seen, doc)
    assert doc["errors_total"] == 0 and doc["per_name"]["fallback"]["requests"] == 12
