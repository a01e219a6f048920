"""gRPC calls in scenarios (``u.grpc``; docs/protocols.md) against the test server's gRPC
probe, whose truth is known (examples/grpc/probe.proto: ``Unary`` answers ``delay_ms`` after the
call with its ``payload``, ``Stream`` sends ``count`` messages (10 when 0), each call ends with
the status ``status`` asks for; the server counts ``grpc_calls``, ``grpc_received``,
``grpc_messages``, ``grpc_failed`` and ``grpc_deadline``, the calls its ``grpc-timeout`` ended).
Each test holds redline's books to the server's counts
exactly; the chain's calls act on the values the last reply gave (a stream of ``count``
messages, a call failed with ``status``), so what the server did is what it was sent."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import jsonschema
import pytest
import redline
from conftest import RESULT_SCHEMA, run_cli, run_flow
from redline.scenario import ScenarioError, json_eq, load

ROOT = Path(__file__).parent.parent
PROBE = str(ROOT / "examples/grpc/probe.proto")

#: GRPC_FIELDS: the probe's counters a test diffs.
GRPC_FIELDS = ("grpc_calls", "grpc_received", "grpc_messages", "grpc_failed", "grpc_deadline")


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
    # Trailers only: the status and its grpc-message came in the answer's head.
    assert down["failure_reasons"] == {"gRPC UNAVAILABLE: probe status": 4}
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


def test_the_servers_grpc_message_is_in_the_reason_from_its_trailers(target):
    """A stream the probe ends NOT_FOUND after its 2 messages: the status and its
    grpc-message come in the trailers, after the DATA; both are the reason. The messages
    read are the server's written."""

    def flow(u):
        u.grpc(call_url(target, "Stream"), proto=PROBE, message={"count": 2, "status": 5}, name="s")

    doc, seen = run(target, flow, users=2, iterations=2)
    assert seen["grpc_failed"] == 4 == doc["errors"]["grpc"], (seen, doc["errors"])
    assert seen["grpc_messages"] == 8 == doc["stream"]["chunks"], (seen, doc["stream"])
    reasons = doc["per_name"]["s"]["failure_reasons"]
    assert reasons == {"gRPC NOT_FOUND: probe status": 4}, reasons

    def read(u):
        r = u.grpc(
            call_url(target, "Stream"),
            proto=PROBE,
            message={"count": 1, "status": 5},
            status=("OK", "NOT_FOUND"),
            name="expected",
        )
        # The trailer read as a header, sent back: the probe echoes it as the payload.
        u.grpc(
            call_url(target, "Unary"),
            proto=PROBE,
            message={"payload": r.header("grpc-message")},
            checks=[json_eq("$.payload", "probe status")],
            name="echo",
        )

    doc, seen = run(target, read, users=1, iterations=2)
    assert seen["grpc_calls"] == 4 and seen["grpc_failed"] == 2, seen
    assert doc["errors_total"] == 0 and doc["per_name"]["echo"]["requests"] == 2, doc["errors"]


def settled(target: redline.Target, before: dict[str, int], field: str, want: int) -> int:
    """settled is the server's count of ``field`` since ``before`` once it reaches ``want``, or
    what it is after 5 s: the probe books a call when its own deadline passes, a moment after
    the client's (which started at the send, before the call arrived)."""
    end = time.monotonic() + 5
    while (seen := target.stats()[field] - before[field]) < want and time.monotonic() < end:
        time.sleep(0.01)
    return seen


def test_a_calls_timeout_is_its_deadline_sent_and_kept_by_the_server(target):
    """timeout= is the call's deadline and goes with it (grpc-timeout): the probe, due to
    write a message at 10 ms and then every 200 ms, writes those due before the 500 ms
    deadline (3; the last 90 ms before it, room for a busy box) and ends the call
    DEADLINE_EXCEEDED at it, counted in grpc_deadline; redline ends it so too (whichever side
    saw the deadline first), a grpc error of that name. A call answered in time under its
    deadline is not cut."""

    def flow(u):
        u.grpc(
            call_url(target, "Unary"),
            proto=PROBE,
            message={"delay_ms": 10},
            timeout="2s",
            name="in time",
        )
        u.grpc(
            call_url(target, "Stream"),
            proto=PROBE,
            message={"count": 5, "first_ms": 10, "gap_ms": 200},
            timeout="500ms",
            name="cut",
        )

    before = target.stats()
    doc, _ = run(target, flow, users=2, iterations=2)
    assert settled(target, before, "grpc_deadline", 4) == 4
    seen = {k: target.stats()[k] - before[k] for k in GRPC_FIELDS}
    assert seen["grpc_calls"] == 8 and seen["grpc_failed"] == 4, seen
    # The probe's schedule, not the box's speed, says which messages go: 3 of 5 a cut call.
    assert seen["grpc_messages"] == 4 + 4 * 3, seen
    cut, in_time = doc["per_name"]["cut"], doc["per_name"]["in time"]
    assert cut["requests"] == 4 == cut["errors"] == doc["errors"]["grpc"], (cut, doc["errors"])
    assert in_time["requests"] == 4 and in_time["errors"] == 0, in_time
    assert doc["status_codes"] == {"0": 4, "4": 4}, doc["status_codes"]
    # The probe's own answer carries its message; a deadline redline saw first has none.
    reasons = cut["failure_reasons"]
    assert sum(reasons.values()) == 4, reasons
    assert set(reasons) <= {"gRPC DEADLINE_EXCEEDED", "gRPC DEADLINE_EXCEEDED: deadline exceeded"}


@pytest.fixture(scope="module")
def tls_probe(tls_files: tuple[Path, Path, Path]) -> Iterator[tuple[redline.Target, Path]]:
    """The test server over TLS offering h2 by ALPN, so its gRPC probe answers grpcs://;
    and the CA's PEM file."""
    ca_pem, cert_pem, key_pem = tls_files
    with redline.Target(threads=1, tls_cert=cert_pem, tls_key=key_pem, http2=True) as t:
        yield t, ca_pem


def test_a_grpcs_origin_is_tls_with_the_runs_trust_options(target, tls_probe):
    """grpcs:// in a flow: the calls go over TLS (h2 by ALPN) to the probe, trusted by the
    run's cacert; the server's counts are redline's, the reply's payload the one sent. Without
    the CA no call reaches the server, and each iteration fails at its first call."""
    tls, ca_pem = tls_probe
    origin = tls.url.replace("https://", "grpcs://", 1)

    def flow(u):
        r = u.grpc(
            origin + "/redline.probe.Probe/Unary",
            proto=PROBE,
            message={"delay_ms": 5, "payload": "sealed"},
            name="secure",
        )
        u.grpc(
            origin + "/redline.probe.Probe/Stream",
            proto=PROBE,
            message={"count": 3, "payload": r.json("$.payload")},
            checks=[json_eq("$[2].payload", "sealed")],
            name="streamed",
        )

    doc, seen = run(tls, flow, users=2, iterations=2, host=target.url, cacert=str(ca_pem))
    assert seen["grpc_calls"] == 8 and seen["grpc_failed"] == 0, seen
    assert seen["grpc_messages"] == 4 + 12 == 4 + doc["stream"]["chunks"], (seen, doc["stream"])
    assert doc["errors_total"] == 0, doc["errors"]
    assert doc["per_host"][origin]["requests"] == 8, doc["per_host"].keys()

    doc, seen = run(tls, flow, users=2, iterations=2, host=target.url)
    assert seen["grpc_calls"] == 0, seen
    assert doc["per_name"]["secure"]["errors"] == 4 == doc["errors_total"], doc["errors"]
    assert doc["scenario"]["iterations"]["failed"] == 4


def test_an_origin_from_a_run_variable_is_checked_as_each_call_goes(target):
    """u.var("GRPC") holds the origin, the method written out: the calls go where it says,
    as the server counts; a value that is not a gRPC origin fails each call with the reason,
    and none reaches the server."""

    def flow(u):
        u.grpc(
            u.var("GRPC") + "/redline.probe.Probe/Unary",
            proto=PROBE,
            message={"payload": u.vu},
            name="by var",
        )

    origin = target.url.replace("http://", "grpc://", 1)
    doc, seen = run(target, flow, users=2, iterations=2, vars={"GRPC": origin})
    assert seen["grpc_calls"] == 4 == doc["per_name"]["by var"]["requests"], seen
    assert doc["errors_total"] == 0 and doc["per_host"][origin]["requests"] == 4

    doc, seen = run(target, flow, users=2, iterations=2, vars={"GRPC": target.url})
    assert seen["grpc_calls"] == 0, seen
    reasons = doc["per_name"]["by var"]["failure_reasons"]
    (reason,) = reasons
    assert reasons[reason] == 4 and "a gRPC call's URL is grpc://" in reason, reasons


@pytest.mark.parametrize(
    ("call", "want"),
    [
        ("u.grpc('http://h/p.S/M', proto=P)", "a gRPC call's URL is grpc://"),
        ("u.grpc('/p.S/M', proto='none.proto')", "grpc(proto='none.proto'): no such file"),
        ("u.grpc('/p.S/M', proto=P, status='MAYBE')", "a gRPC status is a code 0-16"),
        ("u.grpc(u.var('G', 'x'), proto=P)", "got '{var.G}'"),
        ("u.grpc(u.var('G', 'x') + '/p.S/M' + u.var('G', 'x'), proto=P)", "the method written"),
        ("u.grpc('grpc://' + u.var('G', 'x') + '/p.S/M', proto=P)", "an origin from a variable"),
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
    assert seen["grpc_deadline"] == 0, seen
    assert seen["grpc_messages"] == 12 + 52 and doc["stream"]["chunks"] == 52, (seen, doc)
    assert doc["errors_total"] == 0 and doc["per_name"]["fallback"]["requests"] == 12
