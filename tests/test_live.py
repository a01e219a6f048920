"""Tests for redline.live: addresses, chart patches, the event stream (one event per interval,
several browsers), the stop button (the server's own count is short of a full run's; find's
search keeps the steps that ran) and the web token. The bucket counts and the ledger are in
test_live_metrics.py, Prometheus and OTLP in test_live_exports.py, the page in headless
Chromium and ``redline ui`` in test_live_page.py."""

from __future__ import annotations

import io
import json
import time
import urllib.error
import urllib.request
from typing import Any

import pytest
import redline
from live_support import (
    WAIT_S,
    Cli,
    SseClient,
    post_stop,
    stop_token,
)
from redline.errors import ConfigError
from redline.live import LiveSession, parse_address
from redline.live.events import ChartBook, first_change
from redline.report.charts import Chart, Series

# -- pure parts ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "label,text,host,port",
    [
        ("a bare port: loopback", "8089", "127.0.0.1", 8089),
        ("port 0: any free port", "0", "127.0.0.1", 0),
        ("host and port", "0.0.0.0:9464", "0.0.0.0", 9464),
        ("an empty host: loopback", ":80", "127.0.0.1", 80),
        ("IPv6 in brackets", "[::1]:0", "::1", 0),
        ("a name", "localhost:8080", "localhost", 8080),
    ],
)
def test_parse_address(label, text, host, port):
    a = parse_address(text, "--web")
    assert (a.host, a.port) == (host, port), label


@pytest.mark.parametrize(
    "label,text",
    [
        ("not a port", "web"),
        ("port too big", "70000"),
        ("IPv6 without brackets", "::1:80"),
        ("no port", "127.0.0.1:"),
        ("a negative port", "-1"),
        ("bad IPv6", "[zz]:80"),
    ],
)
def test_parse_address_refuses(label, text):
    with pytest.raises(ConfigError, match=r"--web: expected \[HOST:\]PORT"):
        parse_address(text, "--web")


@pytest.mark.parametrize(
    "label,old,new,expect",
    [
        ("unchanged", [[1, 2], [3, 4]], [[1, 2], [3, 4]], None),
        ("rows appended", [[1, 2], [3, 4]], [[1, 2, 3], [3, 4, 5]], 2),
        ("an earlier row filled in", [[1, 2], [3, None]], [[1, 2, 3], [3, 4, 5]], 1),
        ("from nothing", [[], []], [[1], [2]], 0),
        ("rows removed", [[1, 2, 3], [3, 4, 5]], [[1, 2], [3, 4]], 2),
        ("a column more", [[1, 2], [3, 4]], [[1, 2], [3, 4], [5, 6]], 0),
    ],
)
def test_first_change(label, old, new, expect):
    assert first_change(old, new) == expect, label


def test_chart_book_sends_specs_once_then_rows():
    def chart(rows: int, label: str = "a") -> Chart:
        xs = [float(i) for i in range(rows)]
        return Chart("c", "C", "t", "y", [Series(label, "#000")], [xs, [2 * x for x in xs]])

    book = ChartBook()
    (first,) = book.patch([chart(2)])
    assert first["spec"]["id"] == "c" and first["start"] == 0 and first["cols"][0] == [0.0, 1.0]
    assert "data" not in first["spec"]
    (second,) = book.patch([chart(3)])
    assert "spec" not in second and second["start"] == 2 and second["cols"] == [[2.0], [4.0]]
    assert book.patch([chart(3)]) == []
    (relabelled,) = book.patch([chart(3, "b")])
    assert relabelled["spec"]["series"][0]["label"] == "b" and relabelled["start"] == 0
    (whole,) = book.full()
    assert whole["cols"] == [[0.0, 1.0, 2.0], [0.0, 2.0, 4.0]]


def test_session_refuses_a_public_page_without_a_token():
    with pytest.raises(ConfigError, match="non-loopback address needs --web-token"):
        LiveSession(web=parse_address("0.0.0.0:0", "--web"))


# -- a live run ------------------------------------------------------------------------------


def test_event_stream_one_event_per_interval_to_two_browsers(target, session):
    clients = [SseClient(session.web_url), SseClient(session.web_url)]
    for c in clients:
        assert c.connected.wait(WAIT_S)
    snaps: list[dict[str, Any]] = []
    before = target.stats()["requests"]
    result = redline.run(
        target.url,
        connections=2,
        duration="1.2s",
        interval="0.2s",
        progress=session.progress(snaps.append),
    )
    session.finish(result.data, lambda data: "<html>report</html>")
    for c in clients:
        c.close()
    a, b = (c.kinds("interval") for c in clients)
    assert len(snaps) >= 5
    assert len(a) == len(b) == len(snaps)
    assert [e["t_s"] for e in a] == [s["t_s"] for s in snaps] == [e["t_s"] for e in b]
    for event, snap in zip(a, snaps, strict=True):
        for key in ("requests", "errors", "errors_by_class", "p50_ms", "p99_ms", "achieved_rate"):
            assert event[key] == snap[key], key
        assert "histogram" not in event
        assert {"totals", "charts", "service", "phase", "load"} <= set(event)
    last = a[-1]["totals"]
    assert last["requests"] == result.data["requests"] == sum(s["requests"] for s in snaps)
    assert target.stats()["requests"] - before == result.data["requests"]
    # The charts: whole specs first, then only new rows.
    first = {p["id"]: p for p in a[0]["charts"]}
    assert {"throughput", "latency", "load", "errors"} <= set(first)
    assert all("spec" in p for p in first.values())
    later = {p["id"]: p for p in a[-1]["charts"]}
    assert later["throughput"].get("spec") is None
    assert later["throughput"]["start"] == len(snaps) - 1
    (done,) = clients[0].kinds("done")
    assert done["status"] == "done" and done["report"] == "report"
    report = urllib.request.urlopen(session.web_url + "report", timeout=WAIT_S).read()
    assert report == b"<html>report</html>"
    # A browser that joins now is caught up: the state, then the end.
    late = SseClient(session.web_url)
    late.close()
    assert [k for k, _ in late.events] == ["state", "done"]
    state = late.kinds("state")[0]
    assert state["last"]["t_s"] == snaps[-1]["t_s"]
    assert {p["id"] for p in state["charts"]} >= {"throughput", "latency"}


def test_stop_button_ends_a_run_early(target, session):
    """Open model, 200 req/s for 20 s: a full run is 4,000 requests; the stop button pressed
    after the second interval ends it with the target's own count far short of that, and
    the result of what ran comes back. A POST without the page's token stops nothing."""
    full = 200 * 20
    token = stop_token(session.web_url)
    assert post_stop(session.web_url, None) == 403
    assert post_stop(session.web_url, "wrong") == 403
    seen: list[dict[str, Any]] = []

    def press(snap: dict[str, Any]) -> None:
        seen.append(snap)
        if len(seen) == 2:
            assert post_stop(session.web_url, token) == 202

    before = target.stats()["requests"]
    started = time.monotonic()
    result = redline.run(
        target.url,
        rate=200,
        duration="20s",
        interval="0.25s",
        progress=session.progress(press),
    )
    took = time.monotonic() - started
    served = target.stats()["requests"] - before
    assert session.stop_requested
    assert result.interrupted
    # Stopped at the press (the engine ends its last partial interval promptly; 2 s of
    # slack for a busy machine) rather than after 20 s.
    assert result.data["duration_s"] < seen[1]["t_s"] + 2.0, [s["t_s"] for s in seen]
    assert took < 5.0
    assert 0 < served < full / 4
    assert result.data["requests"] <= served
    assert result.data["intended"] < full / 4


def test_find_stop_button_keeps_the_steps_that_ran(target, tmp_path):
    """``redline find --web``: the stop button ends the search (as Ctrl-C: exit 130, the
    result written and marked interrupted) long before its --max-time."""
    out = tmp_path / "find.json"
    cli = Cli(
        "find", target.url, "--max-time", "60s", "--min-step", "1s", "--max-step", "2s",
        "--confirm", "1s", "--web", "0", "--json", str(out), "-q",
    )  # fmt: skip
    started = time.monotonic()
    try:
        base = cli.wait_line(r"live view at (\S+)").group(1)
        client = SseClient(base)
        assert client.connected.wait(WAIT_S)
        token = stop_token(base)
        deadline = time.monotonic() + WAIT_S
        while not client.kinds("step") and time.monotonic() < deadline:
            client.finished.wait(0.05)
        assert client.kinds("step"), "no step was judged"
        assert post_stop(base, token) == 202
        code, _, err = cli.finish()
        client.close()
    finally:
        cli.kill()
    assert code == 130, err
    assert "stopped from the web page" in err
    assert time.monotonic() - started < 30
    result = json.loads(out.read_text())
    assert result["interrupted"] is True
    assert len(result["steps"]) >= 1
    (done,) = client.kinds("done")
    assert done["status"] == "stopped" and done["report"] == "report"
    intervals = client.kinds("interval")
    assert intervals and all(e["phase"] and e["load"] for e in intervals)


def test_web_token_guards_every_page_request():
    """With --web-token, the page, the stream and the stop need ?token=TOKEN."""
    with LiveSession(web=parse_address("0", "--web"), token="s3cret", out=io.StringIO()) as live:
        base = live.web_url
        for path in ("", "events", "report", "metrics"):
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(base + path, timeout=WAIT_S)
            assert refused.value.code == 403, path
        page = urllib.request.urlopen(base + "?token=s3cret", timeout=WAIT_S).read().decode()
        assert 'data-stop="s3cret"' in page
        client = SseClient(base, "?token=s3cret")
        assert client.connected.wait(WAIT_S) and client.kinds("state")
        assert post_stop(base, "s3cret") == 403  # the stop header alone is not enough
        req = urllib.request.Request(base + "stop?token=s3cret", method="POST", data=b"")
        req.add_header("X-Redline-Stop", "s3cret")
        assert urllib.request.urlopen(req, timeout=WAIT_S).status == 202
        assert live.stop_requested
        live.finish(None)
        client.close()
        assert client.kinds("done")[0]["status"] == "stopped"
