"""WebSocket runs (``redline run ws://...``, :func:`redline.websocket`; docs/protocols.md)
against the test server's echo probe, whose truth is known: ``/ws?delay=D`` sends each message
back D after it arrived and counts the messages it read and wrote (``ws_received``,
``ws_sent``), the sockets it upgraded, and those it dropped (``drop=N``) or closed
(``close_after=N&code=C``). redline's counts are held to the server's exactly, its round trips
to D."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import redline
from conftest import run_cli
from redline.sockets.summary import render

SCHEMA = json.loads((Path(__file__).parent.parent / "docs/schema/socket.schema.json").read_text())

#: WS_FIELDS: the probe's counters a test diffs.
WS_FIELDS = ("ws_sockets", "ws_received", "ws_sent", "ws_dropped", "ws_closed")


def ws_url(target: redline.Target, query: str = "") -> str:
    return target.url.replace("http://", "ws://", 1) + "/ws" + query


def seen_since(target: redline.Target, before: dict[str, int]) -> dict[str, int]:
    now = target.stats()
    return {k: now[k] - before[k] for k in WS_FIELDS}


def thousand_sockets(
    target: redline.Target, **load: float
) -> tuple[redline.SocketResult, dict[str, int]]:
    """The issue's run: 1,000 sockets against the echo at 1 s, for 4 s (1,000 messages a
    second each way: a busy 2-core box has the CPU for them, not for ten times as many)."""
    before = target.stats()
    r = redline.websocket(ws_url(target, "?delay=1s"), sockets=1000, duration="4s", **load)
    seen = seen_since(target, before)
    print(r, r.data["latency_ms"], seen)
    m = r.messages
    assert r.errors_total == 0, r.errors
    assert r.sockets == {"wanted": 1000, "opened": 1000} and seen["ws_sockets"] == 1000
    # Exactly: every message the server read was sent, every one it wrote was read.
    assert m["sent"] == seen["ws_received"] and m["received"] == seen["ws_sent"], (m, seen)
    assert m["answered"] == m["sent"] and m["lost_total"] == 0 and m["unmatched"] == 0
    # Opened before the clock starts, a round trip of 1 s, 4 s: 4,000 rounds at most.
    assert 2_000 <= m["sent"] <= 4_000, m
    # Never early (less the histogram's 0.1 %).
    assert r.latency.min >= 1000 * 0.999, r.latency
    return r, seen


def test_a_thousand_sockets_a_message_a_second_each_time_the_probes_delay(target):
    """The open model spreads the 1,000 messages a second evenly (socket k sends at k ms past
    each second): the round trips are the probe's delay, within 5 % at p50. Not p99 beside a
    busy suite: the server's one thread answers 1,000 messages a second, and one wait of it
    for a core delays every answer due meanwhile (p99 1,556 and 2,318 ms at load 18 with two
    CPU hogs, p50 1,009-1,034 ms in the same runs; 0.3 % at load 13). The alone test holds
    p99 to 5 %."""
    r, _ = thousand_sockets(target, rate=1000)
    jsonschema.validate(r.data, SCHEMA)
    assert abs(r.latency.p50 - 1000) <= 0.05 * 1000, r.latency


@pytest.mark.alone
def test_a_thousand_sockets_p99_within_5_percent_on_a_quiet_box(target):
    r, _ = thousand_sockets(target, rate=1000)
    assert abs(r.latency.p50 - 1000) <= 0.05 * 1000, r.latency
    assert r.latency.p99 <= 1000 * 1.05, r.latency


def test_a_thousand_sockets_in_the_closed_model_are_counted_both_ways(target):
    """The closed model's 1,000 sockets start together and stay in step: each second the
    server and redline take 1,000 messages at once, and the last of a burst waits its turn
    (p50 +4 %, p99 +12 % at load 12), hence the room."""
    r, _ = thousand_sockets(target)
    assert r.latency.p50 <= 1000 * 1.25, r.latency


def test_the_closed_models_sockets_staggered_lose_the_burst(target):
    """stagger="1s" spreads the closed model's first messages over the echo's round trip: the
    sockets stay spread (each sends when its reply came), so no second brings 1,000 at once
    (bench/sockets.py at load 12-14: p99 +0.7 % staggered, +6.5 % all at once). Held as the
    open model's: p50 within 5 % beside a busy suite, p99 within 5 % in the alone test."""
    r, _ = thousand_sockets(target, stagger="1s")
    assert r.data["stagger_s"] == 1.0 and "first sends spread over 1s" in render(r)
    assert abs(r.latency.p50 - 1000) <= 0.05 * 1000, r.latency


@pytest.mark.alone
def test_staggered_closed_sockets_p99_within_5_percent_on_a_quiet_box(target):
    r, _ = thousand_sockets(target, stagger="1s")
    assert r.latency.p99 <= 1000 * 1.05, r.latency


def test_open_model_sends_its_rate_matched_by_field(target):
    before = target.stats()
    r = redline.websocket(
        ws_url(target, "?delay=100ms"),
        sockets=20,
        rate=400,
        duration="1s",
        message='{"id": 0, "text": "hi"}',
        match="id",
    )
    seen = seen_since(target, before)
    m = r.messages
    assert r.data["model"] == "open" and r.data["match_rule"] == "field:id"
    assert m["sent"] == seen["ws_received"] and m["received"] == seen["ws_sent"]
    assert m["answered"] == m["sent"] and r.errors_total == 0
    # On a schedule: 400 a second for 1 s, less any a starved box sent after the end.
    assert 390 <= m["sent"] <= 400, m
    # Timed from each message's intended send (tokio's timer sends up to 1 ms late): never
    # early; p50 with a busy box's room (the 1,000-socket test holds it to 5 %).
    lat = r.latency
    assert lat.min >= 100 * 0.999 and lat.p50 <= 100 * 1.25, lat


def test_a_socket_the_server_drops_is_counted_not_a_crash(target):
    before = target.stats()
    r = redline.websocket(ws_url(target, "?drop=3"), sockets=5, messages=60)
    seen = seen_since(target, before)
    m = r.messages
    # A socket takes at most 3 answered + 1 lost; the last 5 may end with the count, undropped.
    assert seen["ws_dropped"] >= 60 // 4 - 5, seen
    assert r.errors == {"dropped": seen["ws_dropped"]}, (r.errors, seen)
    assert m["sent"] == 60 == m["answered"] + m["lost_total"], m
    assert r.sockets["opened"] == seen["ws_sockets"], "each dropped socket opened again"


def test_a_close_code_is_an_error_class(target):
    before = target.stats()
    r = redline.websocket(ws_url(target, "?close_after=2&code=1011"), sockets=4, messages=40)
    seen = seen_since(target, before)
    # A socket takes at most 2 answered + 1 lost; the last 4 may end with the count, unclosed.
    assert seen["ws_closed"] >= 40 // 3 - 4, seen
    assert r.errors == {"close_1011": seen["ws_closed"]}, (r.errors, seen)
    m = r.messages
    assert m["sent"] == m["answered"] + m["lost_total"]


def test_cli_summary_and_json(target, tmp_path):
    out = tmp_path / "ws.json"
    before = target.stats()
    p = run_cli("run", ws_url(target, "?delay=10ms"), "-c", "4", "-n", "40", "--json", str(out))
    assert p.returncode == 0, p.stderr
    seen = seen_since(target, before)
    doc = json.loads(out.read_text())
    jsonschema.validate(doc, SCHEMA)
    assert doc["messages"]["sent"] == 40 == seen["ws_received"] == doc["messages"]["answered"]
    assert "WebSocket run @ ws://" in p.stdout and "40 messages sent, 40 received" in p.stdout
    assert "Round trip distribution" in p.stdout, p.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--http2",), "--http2/--http1 is an HTTP run's option"),
        (("-m", "POST"), "-m/--method is an HTTP run's option"),
        (("--match", "id", "--body", "hi"), "needs the message to be a JSON object"),
        (("-c", "0"), "sockets must be 1 to"),
    ],
)
def test_bad_input_is_one_line(target, args, message):
    p = run_cli("run", ws_url(target), "-n", "1", *args)
    assert p.returncode == 2 and message in p.stderr, p.stderr
    assert "Traceback" not in p.stderr


def test_websocket_flags_on_an_http_run_are_refused(target):
    for flag, value in (("--match", "id"), ("--stagger", "1s")):
        p = run_cli("run", target.url + "/", "-n", "1", flag, value)
        assert p.returncode == 2 and f"{flag} is a WebSocket run's option" in p.stderr, p.stderr


def wss_url(target: redline.Target, query: str = "") -> str:
    return target.url.replace("https://", "wss://", 1) + "/ws" + query


def test_wss_counts_what_the_tls_server_counted(tls_target):
    """wss:// is TLS with the HTTP runs' trust options: the CA given with cacert (--cacert),
    or none checked (-k); the server's counts over TLS equal redline's."""
    target, ca_pem = tls_target
    before = target.stats()
    r = redline.websocket(
        wss_url(target, "?delay=20ms"), sockets=10, messages=200, cacert=str(ca_pem)
    )
    seen = seen_since(target, before)
    m = r.messages
    assert r.errors_total == 0, r.errors
    assert seen["ws_sockets"] == 10 and r.sockets["opened"] == 10
    assert m["sent"] == 200 == seen["ws_received"] == m["answered"], (m, seen)
    assert m["received"] == seen["ws_sent"], (m, seen)
    assert r.latency.min >= 20 * 0.999, r.latency
    jsonschema.validate(r.data, SCHEMA)
    p = run_cli("run", wss_url(target), "-c", "2", "-n", "20", "-k")
    assert p.returncode == 0, p.stderr
    assert "20 messages sent, 20 received" in p.stdout, p.stdout
    assert seen_since(target, before)["ws_received"] == 220


def test_wss_to_an_untrusted_server_is_one_line_before_any_load(tls_target):
    target, _ = tls_target
    before = target.stats()
    p = run_cli("run", wss_url(target), "-n", "5")
    assert p.returncode == 2, (p.stdout, p.stderr)
    (line,) = p.stderr.strip().splitlines()
    assert "TLS handshake with 127.0.0.1:" in line and "--cacert" in line, line
    assert seen_since(target, before)["ws_sockets"] == 0
