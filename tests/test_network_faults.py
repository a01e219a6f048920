"""redline through a network that misbehaves: Toxiproxy (tests/toxiproxy.py) between redline
and the test server, each fault switched on for one run. What must hold whatever the network
does: every request the server saw is one redline counted, answered, failed or unfinished
(the proxy's upstream side is left clean, so every request sent reaches the server); added
latency shows in redline's latency as that amount (within 5 %); each fault lands in its own
error class (a reset in ``reset``, a response cut short in ``read``, a proxy that stops
answering in ``timeout``).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest
import redline
from accounting import assert_books, transport_failures
from toxiproxy import Toxiproxy, running

#: PROXIES numbers the proxies (one a test).
PROXIES = itertools.count()


@pytest.fixture(scope="module")
def toxiproxy() -> Iterator[Toxiproxy]:
    with running() as t:
        yield t


@pytest.fixture()
def proxied(toxiproxy: Toxiproxy, target: redline.Target) -> tuple[str, str]:
    """proxied: a fresh proxy to the module's target (its name, and its URL)."""
    name = f"proxy{next(PROXIES)}"
    upstream = target.url.removeprefix("http://").rstrip("/")
    return name, "http://" + toxiproxy.proxy(name, upstream)


def served(target: redline.Target) -> int:
    return int(target.stats()["requests"])


def run_counted(target: redline.Target, url: str, **options: Any) -> tuple[Any, int]:
    """run_counted runs redline and returns its result and what the server saw meanwhile;
    the books balance and the server's count is redline's, exactly."""
    before = served(target)
    result = redline.run(url, threads=1, **options)
    seen = served(target) - before
    parts = assert_books(result)
    # Every request sent went through the clean upstream side to the server: answered,
    # failed after it was sent, or still out at the end.
    assert seen == parts["answered"] + parts["transport"] + parts["unfinished"], (seen, parts)
    return result, seen


@pytest.mark.alone  # a ±5 % latency bound: not beside the parallel suite
def test_added_latency_shifts_latency_by_that_amount(toxiproxy, proxied, target) -> None:
    name, url = proxied
    base, _ = run_counted(target, url + "/", connections=2, duration="3s")
    added_ms = 100.0
    toxic = toxiproxy.toxic(name, "latency", latency=int(added_ms))
    try:
        # 16 connections keep the proxy awake: with 2, each delayed answer waited for the
        # kernel to wake toxiproxy on this busy machine (+5 ms at the median, load 15).
        slow, seen = run_counted(target, url + "/", connections=16, duration="4s")
    finally:
        toxiproxy.remove(name, toxic)
    shift = slow.data["latency_ms"]["p50"] - base.data["latency_ms"]["p50"]
    assert abs(shift - added_ms) <= 0.05 * added_ms, (shift, base.data["latency_ms"])
    assert slow.data["errors_total"] == 0 and seen > 0


@pytest.mark.alone  # a ±5 % latency bound: not beside the parallel suite
def test_jitter_spreads_latency_around_the_added_amount(toxiproxy, proxied, target) -> None:
    name, url = proxied
    base, _ = run_counted(target, url + "/", connections=2, duration="3s")
    added_ms, jitter_ms = 100.0, 40.0
    toxic = toxiproxy.toxic(name, "latency", latency=int(added_ms), jitter=int(jitter_ms))
    try:
        # 16 connections for 5 s: about 800 answers, so the median of the uniform delay is
        # known to about 80 ms / (2 sqrt(800)) = 1.4 ms, well inside the 5 % asked.
        slow, _ = run_counted(target, url + "/", connections=16, duration="5s")
    finally:
        toxiproxy.remove(name, toxic)
    b, s = base.data["latency_ms"], slow.data["latency_ms"]
    # Uniform over [added - jitter, added + jitter): the median moves by the added amount (the
    # mean too, but a busy machine's scheduling stalls pull the mean up by several ms).
    assert abs((s["p50"] - b["p50"]) - added_ms) <= 0.05 * added_ms, (s, b)
    # Nothing comes sooner than the least delay; the bulk stays inside the widest one (the
    # very tail is the busy machine's scheduling, not the proxy's: not judged here).
    assert s["min"] >= added_ms - jitter_ms - 1.0, s
    assert s["p90"] - b["p50"] <= added_ms + jitter_ms + 0.05 * added_ms, (s, b)
    assert s["p90"] - s["p50"] >= 0.3 * jitter_ms, s  # the jitter is there, not flattened


def test_a_bandwidth_cap_caps_the_bytes_a_second(toxiproxy, proxied, target) -> None:
    name, url = proxied
    rate_kb = 400  # toxiproxy's KB: 1,000 bytes
    body = 40_000  # 0.1 s of the cap per answer
    toxic = toxiproxy.toxic(name, "bandwidth", rate=rate_kb)
    try:
        result, seen = run_counted(target, f"{url}/?size={body}", connections=1, duration="4s")
    finally:
        toxiproxy.remove(name, toxic)
    got = result.data["bytes_in"] / result.data["duration_s"]
    assert 0.85 * rate_kb * 1000 <= got <= 1.05 * rate_kb * 1000, got
    # One connection: one answer at a time, each taking body / cap.
    assert result.requests == pytest.approx(4.0 * rate_kb * 1000 / body, rel=0.2)
    assert result.data["errors_total"] == 0


@pytest.mark.parametrize(
    ("label", "kind", "attributes", "query", "klass"),
    [
        ("a reset as the answer comes", "reset_peer", {"timeout": 0}, "", "reset"),
        ("an answer cut short", "limit_data", {"bytes": 5_000}, "?size=20000", "read"),
    ],
)
def test_a_connection_broken_mid_response_is_its_error_class(
    toxiproxy, proxied, target, label, kind, attributes, query, klass
) -> None:
    name, url = proxied
    toxic = toxiproxy.toxic(name, kind, **attributes)
    try:
        result, seen = run_counted(target, f"{url}/{query}", connections=2, duration="2s")
    finally:
        toxiproxy.remove(name, toxic)
    errors = {k: v for k, v in result.data["errors"].items() if v}
    # Each connection's first answer is broken: every request fails, all in one class.
    assert list(errors) == [klass], (label, errors)
    assert result.requests == 0 and transport_failures(result.data) > 0, errors
    assert seen >= errors[klass], (seen, errors)


def test_a_proxy_that_stops_answering_gives_timeouts(toxiproxy, proxied, target) -> None:
    name, url = proxied
    toxic = toxiproxy.toxic(name, "timeout", timeout=0)  # data dropped, connection kept
    try:
        result, seen = run_counted(target, url + "/", connections=2, duration="2s", timeout="300ms")
    finally:
        toxiproxy.remove(name, toxic)
    errors = {k: v for k, v in result.data["errors"].items() if v}
    assert list(errors) == ["timeout"], errors
    # Two connections, each waiting 300 ms a request: about 2 x 2 s / 0.3 s timeouts.
    assert 6 <= errors["timeout"] <= 2 * (2.0 / 0.3 + 1), errors
    assert result.requests == 0 and seen == errors["timeout"] + result.data["unfinished"]
