"""WebSocket steps in scenarios (``u.websocket``; docs/protocols.md) against the test server's
echo probe, whose truth is known: ``/ws?delay=D`` sends each message back D after it arrived
and counts the sockets it upgraded and the messages it read and wrote (``ws_sockets``,
``ws_received``, ``ws_sent``), and those it dropped (``drop=N``) or closed
(``close_after=N&code=C``). A step's books (``scenario.sockets``) are held to the server's
counts exactly, each message is a request of the step's name, its round trip the probe's
delay."""

from __future__ import annotations

from functools import partial

import pytest
import redline
from conftest import run_flow
from redline.scenario import ScenarioError
from redline.scenario.compiler import compile_scenario

#: WS_FIELDS: the probe's counters a test diffs.
WS_FIELDS = ("ws_sockets", "ws_received", "ws_sent", "ws_dropped", "ws_closed")

#: run runs a flow on the probe: its result document and the probe's counts (conftest).
run = partial(run_flow, fields=WS_FIELDS)


def test_a_socket_steps_messages_are_the_servers_and_timed_by_its_delay(target):
    """3 users x 2 iterations, each a socket sending 2 messages twice on a 200 ms echo, beside
    an HTTP request: the step's books equal the probe's counts, every message answered, each
    a request of the step's name whose round trip is the delay (p50 within 5 %; the tail has
    a busy box's room, the alone test holds it)."""

    def chat(u):
        u.get("/?latency=1ms", name="page", status=200)
        u.websocket("/ws?delay=200ms", send=["hello", {"n": u.iteration}], count=2, name="chat")

    doc, seen = run(target, chat)
    books = doc["scenario"]["sockets"]["chat"]
    assert seen["ws_sockets"] == 6 == books["opened"]
    assert books["sent"] == 24 == seen["ws_received"], (books, seen)
    assert books["received"] == seen["ws_sent"] == 24 and books["answered"] == 24
    assert books["lost_total"] == 0 and books["unmatched"] == 0
    chat = doc["per_name"]["chat"]
    assert chat["requests"] == 24 and chat["errors"] == 0, chat
    assert doc["per_name"]["page"]["requests"] == 6
    lat = chat["latency_ms"]
    assert lat["min"] >= 200 * 0.999, lat
    assert abs(lat["p50"] - 200) <= 0.05 * 200, lat
    assert lat["p99"] <= 200 * 1.5, lat
    assert doc["scenario"]["iterations"]["completed"] == 6


@pytest.mark.alone
def test_a_socket_steps_round_trips_within_5_percent_on_a_quiet_box(target):
    """The issue's 5 % at p99, on a 1 s echo (5 % is 50 ms: what a slow CI box's scheduler
    can hold, where 5 ms on a 100 ms echo is not)."""

    def chat(u):
        u.websocket("/ws?delay=1s", send="hi", count=3, name="chat")

    doc, seen = run(target, chat, users=20, iterations=1)
    assert doc["scenario"]["sockets"]["chat"]["sent"] == 60 == seen["ws_received"]
    lat = doc["per_name"]["chat"]["latency_ms"]
    assert lat["min"] >= 1000 * 0.999 and lat["p99"] <= 1000 * 1.05, lat


def test_replies_matched_by_a_field_equal_to_the_one_sent(target):
    def ask(u):
        u.websocket(
            "/ws?delay=10ms",
            send=[{"id": u.iteration, "q": "a"}, {"id": "second", "q": "b"}],
            match="id",
            name="ask",
        )

    doc, seen = run(target, ask)
    books = doc["scenario"]["sockets"]["ask"]
    assert books["sent"] == 12 == seen["ws_received"] == books["answered"], (books, seen)
    assert books["unmatched"] == 0 and doc["per_name"]["ask"]["errors"] == 0


def test_a_socket_the_server_drops_or_closes_is_counted_with_the_message_it_lost(target):
    """drop=2: each socket's third message finds it gone; close_after=2&code=1011: the server
    closes with 1011 instead of its third reply. Each is its iteration's failure, with the
    class as the reason, and the books still balance: sent = answered + lost."""

    def dropped(u):
        u.websocket("/ws?drop=2", send="x", count=3, name="dropped")

    doc, seen = run(target, dropped, users=2, iterations=2)
    books = doc["scenario"]["sockets"]["dropped"]
    assert seen["ws_dropped"] == 4 and books["opened"] == 4
    assert books["answered"] == 8 == seen["ws_sent"] == seen["ws_received"], (books, seen)
    # The third message either left (then lost: dropped) or found the socket gone (a failed
    # write, not a message sent); either way one failure of the name per socket.
    assert 8 <= books["sent"] <= 12 and books["sent"] == 8 + books["lost_total"], books
    assert set(books["lost"]) <= {"dropped"}
    assert doc["per_name"]["dropped"]["errors"] == 4
    assert doc["scenario"]["iterations"]["failed"] == 4

    def closed(u):
        u.websocket("/ws?close_after=2&code=1011", send="x", count=3, name="closed")

    doc, seen = run(target, closed, users=2, iterations=2)
    books = doc["scenario"]["sockets"]["closed"]
    # The third message crosses the server's close frame: the probe stops counting at its
    # close (it reads on only for the client's answer), so it counted two a socket.
    assert seen["ws_closed"] == 4 and books["sent"] == 12 == seen["ws_received"] + 4
    assert books["lost"] == {"close_1011": 4} and books["answered"] == 8 == seen["ws_sent"]
    reasons = doc["per_name"]["closed"]["failure_reasons"]
    assert reasons == {"close_1011": 4}, reasons


def test_a_refused_upgrade_fails_the_step_with_a_reason(target):
    def nowhere(u):
        u.websocket("/not-a-socket", send="x", name="nowhere")

    doc, seen = run(target, nowhere, users=1, iterations=2)
    assert seen["ws_sockets"] == 0
    assert doc["per_name"]["nowhere"]["errors"] == 2
    reasons = doc["per_name"]["nowhere"]["failure_reasons"]
    assert reasons == {"websocket: the upgrade was refused": 2}, reasons
    assert doc["scenario"]["sockets"]["nowhere"]["sent"] == 0


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"url": "http://h/ws", "send": "x"}, "a path starting with '/' or a ws:// or wss://"),
        ({"url": "/ws", "send": []}, "needs at least one message"),
        ({"url": "/ws", "send": "x", "match": "id"}, "each message must be a dict with it"),
        ({"url": "/ws", "send": {"q": 1}, "match": "id"}, "each message must be a dict with it"),
        ({"url": "/ws", "send": "x", "count": 0}, r"count=...\) is a whole number >= 1"),
        ({"url": "/ws", "send": "x", "timeout": "-1s"}, "timeout must be > 0"),
    ],
)
def test_a_bad_socket_step_names_its_line(kw, message):
    s = redline.Scenario(host="http://127.0.0.1:9")

    @s.flow
    def bad(u):
        u.websocket(**kw)

    with pytest.raises(ScenarioError, match=message) as e:
        compile_scenario(s, {})
    assert "test_scenario_socket.py:" in str(e.value)
