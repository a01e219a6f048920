"""--stream (docs/protocols.md) against the test server's stream probes, whose truth is known:
``/sse?first=200ms&every=20ms&events=50`` sends its first event 200 ms after a request arrives
and the next every 20 ms, and counts the events it wrote; the completions probe streams its
tokens at a set pace. redline's first byte and gaps are held to that pace, its counts to the
server's own.

Tolerances: a first byte can never come before 200 ms, and the gaps' p50 is held within 5 %
(the issue's figure: the median of hundreds of gaps moves by a server or client woken late only
when most of them are). The first byte's p50 is the issue's figure too, but it is the median of
only 12 answers that come in 3 rounds of 4, each round's first events due together on the
server's one thread: one late wake-up moves a whole round, two move the median (213-215 ms
against 210 at load 11, one run in three). Beside a busy suite it is held under 1.5 times the
probe's first (:data:`BUSY_FIRST`), and to 5 % in the test that runs alone. The tails and the
mean gap are held apart, in that test: on a shared 2-core box a thread woken 20-300 ms late is
common (gap p99 42.9 ms at load 13, a 324 ms stall at load 22), which says nothing of
redline's clock; alone, p99 is held within 25 % (first byte) and 50 % (gaps), the mean gap
within 5 %, which still fails a clock that is wrong (a gap timed per read of a whole body, or
from the head) by far more. Each over HTTP/1.1 and HTTP/2 (DATA frames).
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import redline
from conftest import run_cli
from redline import _engine, window

SCHEMA = json.loads((Path(__file__).parent.parent / "docs/schema/result.schema.json").read_text())

#: The issue's probe: first event at 200 ms, then every 20 ms, 50 events.
SSE = "/sse?first=200ms&every=20ms&events=50"


def within(value: float, want: float, share: float) -> bool:
    return abs(value - want) <= share * want


#: BUSY_FIRST: beside a busy suite a first byte's p50 is held under this many times the
#: probe's first, and never under the first: room for the median round woken half the first
#: late (100 ms of the SSE probe's 200; see the module's docstring). A first byte timed wrong
#: still falls outside: from the run's start the SSE probe reads the second round's ~1,380 ms
#: at p50, at the answer's end 1,180 ms, at the head's arrival ~0; one timed at the second
#: event reads 220 ms, inside, but then each answer has 48 gaps, not 49, and the gaps are
#: counted exactly.
BUSY_FIRST = 1.5


#: PROTOCOLS: each protocol's options for the probe (HTTP/2: two streams on each connection).
PROTOCOLS = {"http/1.1": {"connections": 4}, "h2": {"connections": 2, "streams": 2, "http2": True}}


def probe_run(target: redline.Target, protocol: str) -> redline.Result:
    """probe_run runs the issue's probe (12 streams, 4 at a time) with --stream and holds the
    counts to the server's: every event it wrote, and no other."""
    before = target.stats()
    r = redline.run(target.url + SSE, requests=12, stream=True, **PROTOCOLS[protocol])
    seen = target.stats()
    counts = r.stream
    assert counts is not None and r.first_byte is not None and r.chunk_gap is not None
    print(f"{protocol}: first byte {r.first_byte}, gap {r.chunk_gap}, {counts}")
    assert r.data["protocol"] == ("h2" if protocol == "h2" else "http/1.1"), r.data["protocol"]
    assert r.requests == 12 and r.errors_total == 0
    assert counts["events"] == 12 * 50 == seen["stream_events"] - before["stream_events"]
    assert counts["responses"] == 12 == seen["stream_responses"] - before["stream_responses"]
    assert counts["chunks"] == counts["events"]
    # A response of N pieces has N - 1 gaps: its first byte is its first event's.
    gaps, _ = _engine.histogram_quantiles(r.histograms["chunk_gap"], [0.5])
    assert gaps == 12 * (50 - 1), gaps
    return r


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_sse_first_byte_gaps_and_events_match_the_probe(target, protocol):
    r = probe_run(target, protocol)
    first, gap = r.first_byte, r.chunk_gap
    assert first is not None and gap is not None
    # Never early (less the histogram's 0.1 % precision); the gaps' p50 within 5 %, the first
    # byte's with a busy box's room (BUSY_FIRST; 5 % in the alone test below).
    assert first.min >= 200 * 0.999, first
    assert first.p50 <= 200 * BUSY_FIRST, first
    assert within(gap.p50, 20, 0.05), gap
    # The whole answer is the last event's: 200 + 49 * 20 ms.
    assert r.latency.p50 >= 1180 * 0.999, r.latency


@pytest.mark.alone
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_sse_tails_match_the_probe(target, protocol):
    r = probe_run(target, protocol)
    first, gap = r.first_byte, r.chunk_gap
    assert first is not None and gap is not None
    assert 200 * 0.999 <= first.p99 <= 200 * 1.25, first
    assert within(first.p50, 200, 0.05), first
    assert gap.p99 <= 20 * 1.5, gap
    assert within(gap.mean, 20, 0.05), gap


def test_completion_tokens_are_events_at_the_set_pace(target):
    """The OpenAI-compatible probe: N token events, a closing chunk and [DONE], each counted;
    the gaps between tokens are the set pace."""
    before = target.stats()
    url = target.url + "/v1/chat/completions?tokens=20&first=100ms&every=20ms"
    r = redline.run(url, connections=2, requests=4, stream=True)
    seen = target.stats()
    assert r.stream is not None and r.first_byte is not None and r.chunk_gap is not None
    assert r.stream["events"] == 4 * (20 + 2) == seen["stream_events"] - before["stream_events"]
    assert seen["completion_tokens"] - before["completion_tokens"] == 4 * 20
    assert r.first_byte.min >= 100 * 0.999
    assert r.first_byte.p50 <= 100 * BUSY_FIRST, r.first_byte
    # 19 gaps of 20 ms and 2 of ~0 (the closing chunk and [DONE] follow the last token).
    assert within(r.chunk_gap.p50, 20, 0.05), r.chunk_gap


def test_without_stream_the_report_has_no_stream_figures(target):
    r = redline.run(target.url + "/sse?events=2&every=1ms", connections=1, requests=2)
    assert r.first_byte is None and r.chunk_gap is None and r.stream is None
    assert "first_byte_ms" not in r.data and "first_byte" not in r.data["histograms"]
    assert all("stream" not in s for s in r.timeseries)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_each_interval_carries_its_stream_figures(target, protocol):
    """The time series (and so the live page, the report and find's steps) has each
    interval's stream figures: their counts add up to the run's and the server's exactly,
    the intervals' merged histograms are the run's own (p50 equal) and read the probe's pace
    (the gaps' p50 within 5 %, the first byte's never early and under BUSY_FIRST)."""
    before = target.stats()["stream_events"]
    r = redline.run(
        target.url + SSE, requests=12, stream=True, interval=0.25, **PROTOCOLS[protocol]
    )
    served = target.stats()["stream_events"] - before
    ts = r.timeseries
    doc = {**r.data, "timeseries": ts}
    jsonschema.validate(doc, SCHEMA)
    assert r.stream is not None
    assert sum(s["stream"]["events"] for s in ts) == r.stream["events"] == served == 600
    assert sum(s["stream"]["responses"] for s in ts) == 12
    # A response of N pieces has N - 1 gaps.
    assert sum(s["stream"]["chunk_gap"]["count"] for s in ts) == 600 - 12
    assert sum(s["stream"]["first_byte"]["count"] for s in ts) == 12
    got = {}
    for name in ("first_byte", "chunk_gap"):
        parts = window.stream_figure(ts, name)
        (p50,) = window.percentiles(parts, [(0.5, "p50_ms")]) or [None]
        assert p50 is not None, name
        got[name] = p50
    assert 200 * 0.999 <= got["first_byte"] <= 200 * BUSY_FIRST, got
    assert within(got["chunk_gap"], 20, 0.05), got
    # The run's own table agrees with its intervals merged (one set of values, two readings).
    assert r.first_byte is not None and r.chunk_gap is not None
    assert got["first_byte"] == pytest.approx(r.first_byte.p50, rel=0.002), (got, r.first_byte)
    assert got["chunk_gap"] == pytest.approx(r.chunk_gap.p50, rel=0.002), (got, r.chunk_gap)


def test_cli_stream_summary_and_json(target, tmp_path):
    out = tmp_path / "s.json"
    url = target.url + "/sse?first=50ms&every=10ms&events=5"
    p = run_cli("run", url, "--stream", "-c", "2", "-n", "4", "--json", str(out))
    assert p.returncode == 0, p.stderr
    assert "Streamed: first byte" in p.stdout and "20 events" in p.stdout, p.stdout
    doc = json.loads(out.read_text())
    jsonschema.validate(doc, SCHEMA)
    assert doc["stream"]["events"] == 20
    assert doc["histograms"]["first_byte"] and doc["histograms"]["chunk_gap"]


def test_cli_stream_over_http2(target):
    url = target.url + "/sse?first=50ms&every=10ms&events=5"
    p = run_cli("run", url, "--stream", "--http2", "-c", "1", "-n", "2")
    assert p.returncode == 0, p.stderr
    assert "Streamed: first byte" in p.stdout and "10 events" in p.stdout, p.stdout
