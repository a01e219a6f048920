"""Tests of redline.scenario.watch: a live threshold (``SPEC;abort=WINDOW``) judges the last
WINDOW of run as a whole (merged histograms, sums over the window), not each interval alone.
Table-driven on hand-made interval snapshots whose histograms are real encoded HdrHistograms."""

from __future__ import annotations

from typing import Any

import pytest
from redline.errors import ConfigError
from redline.scenario.watch import split
from test_steps import hdr

INTERVAL_S = 0.5


def snap(t_s: float, ms: list[float], errors: int = 0, **extra: Any) -> dict[str, Any]:
    """snap is an interval snapshot ending at ``t_s`` whose responses took ``ms``; its own
    percentiles are those of its responses only."""
    xs = sorted(ms)
    n = len(xs)

    def q(p: float) -> float:
        return xs[min(n - 1, int(p * n))] if n else 0.0

    s: dict[str, Any] = {
        "t_s": t_s,
        "requests": n,
        "errors": errors,
        "p50_ms": q(0.5),
        "p95_ms": q(0.95),
        "max_ms": max(xs, default=0.0),
        "mean_ms": sum(xs) / n if n else 0.0,
        "histogram": hdr([round(x * 1000) for x in xs]),
    }
    s.update(extra)
    return s


def alternate(a: dict[str, Any], b: dict[str, Any], count: int) -> list[dict[str, Any]]:
    """alternate is ``count`` intervals taking turns between two kinds (a first)."""
    return [{**(a if i % 2 == 0 else b), "t_s": (i + 1) * INTERVAL_S} for i in range(count)]


FAST = snap(0, [10.0] * 20)
SLOW = snap(0, [900.0] * 20)

CASES = [
    # (label, spec, snapshots, (t_s of the first abort or None, its line or None))
    (
        "half fast, half slow intervals: each fast one passes, the window's p95 fails",
        "p95<500ms;abort=2s",
        alternate(FAST, SLOW, 8),
        (2.0, "threshold p95<500ms failed over the last 2 s (p95 900.1 ms at 2.0 s)"),
    ),
    (
        "one slow interval with few responses among fast ones: the window's p95 holds",
        "p95<500ms;abort=2s",
        [snap(0.5 * (i + 1), [900.0] * 2 if i == 4 else [10.0] * 100) for i in range(8)],
        (None, None),
    ),
    (
        "every interval failing: fires once the window is full, not before",
        "p95<500ms;abort=2s",
        alternate(SLOW, SLOW, 8),
        (2.0, "threshold p95<500ms failed over the last 2 s (p95 900.1 ms at 2.0 s)"),
    ),
    (
        "warm-up intervals are not part of the window: it fills 2 s after they end",
        "p95<500ms;abort=2s",
        [{**s, "warmup": True} for s in alternate(SLOW, SLOW, 2)] + alternate(SLOW, SLOW, 8)[2:],
        (3.0, "threshold p95<500ms failed over the last 2 s (p95 900.1 ms at 3.0 s)"),
    ),
    (
        "errors summed over the window: 0% and 30% intervals make 60 of 340",
        "errors<10%;abort=2s",
        alternate(snap(0, [5.0] * 70, errors=0), snap(0, [5.0] * 70, errors=30), 8),
        (2.0, "threshold errors<10% failed over the last 2 s (errors 17.65% at 2.0 s)"),
    ),
    (
        "rps is the window's answered requests over its length: 180 rps and idle intervals",
        "rps>100;abort=2s",
        alternate(snap(0, [5.0] * 90), snap(0, []), 8),
        (2.0, "threshold rps>100 failed over the last 2 s (rps 90.0 at 2.0 s)"),
    ),
    (
        "the mean is request-weighted over the window",
        "mean<400ms;abort=2s",
        alternate(snap(0, [10.0] * 100), snap(0, [1000.0] * 100), 8),
        (2.0, "threshold mean<400ms failed over the last 2 s (mean 505.0 ms at 2.0 s)"),
    ),
    (
        "a stream figure (--stream): the intervals' TTFT merged, not the latency's",
        "ttft_p95<500ms;abort=2s",
        alternate(
            snap(0, [5.0] * 20, stream={"completion": {"ttft": snap(0, [10.0] * 20, count=20)}}),
            snap(0, [5.0] * 20, stream={"completion": {"ttft": snap(0, [900.0] * 20, count=20)}}),
            8,
        ),
        (2.0, "threshold ttft_p95<500ms failed over the last 2 s (ttft_p95 900.1 ms at 2.0 s)"),
    ),
    (
        "snapshots without histograms: the request-weighted mean of their percentiles",
        "p95<400ms;abort=2s",
        [{k: v for k, v in s.items() if k != "histogram"} for s in alternate(FAST, SLOW, 8)],
        (2.0, "threshold p95<400ms failed over the last 2 s (p95 455.0 ms at 2.0 s)"),
    ),
]


@pytest.mark.parametrize("label, spec, snaps, want", CASES, ids=[c[0] for c in CASES])
def test_watch_judges_the_window_as_a_whole(label, spec, snaps, want):
    _, w = split(spec)
    assert w is not None
    fired = [(s["t_s"], line) for s in snaps if (line := w.feed(s, INTERVAL_S))]
    at, line = want
    if at is None:
        assert fired == [], label
        return
    assert fired, label
    assert fired[0][0] == at, label
    assert fired[0][1] == f"{line}: the run was stopped", label


def test_the_window_slides():
    # Slow for 2 s, then fast: the window fails while it holds slow intervals, and holds once
    # the last of them has left it.
    _, w = split("p95<500ms;abort=1s")
    assert w is not None
    snaps = alternate(SLOW, SLOW, 4) + [{**FAST, "t_s": 2.5 + 0.5 * i} for i in range(4)]
    fails = [s["t_s"] for s in snaps if w.feed(s, INTERVAL_S)]
    # At 2.5 the window (1.5, 2.5] is half slow: its p95 still fails; at 3.0 it is all fast.
    assert fails == [1.0, 1.5, 2.0, 2.5]


def test_split_reads_and_refuses():
    t, w = split("p95<500ms;abort=2s")
    assert t.metric == "p95" and w is not None and w.window_s == 2.0
    _, none = split("p95<500ms")
    assert none is None
    cases = [
        ("p95<1ms;abort", "the only option is ;abort=WINDOW"),
        ("p95<1ms;stop=1s", "the only option is ;abort=WINDOW"),
        ("x:mean<1ms;abort=1s", "mean is judged at the end only"),
        ("p95<1ms;abort=0s", "the abort window must be > 0"),
        ("min<1ms;abort=1s", "min is not in the live snapshots"),
    ]
    for bad, why in cases:
        with pytest.raises(Exception, match="bad threshold") as e:
            split(bad)
        assert why in str(e.value), bad


def named(t_s: float, parts: dict[str, tuple[list[float], dict[str, int]]]) -> dict[str, Any]:
    """named is a scenario's interval snapshot of each name's responses (their latencies in
    ms, and errors by class, every one of them an answered failure): run-wide figures of all
    the responses together, and each name's part (counts, errors by class, histogram)."""
    every = [x for ms, _ in parts.values() for x in ms]
    by_class: dict[str, int] = {}
    for _, by in parts.values():
        for k, n in by.items():
            by_class[k] = by_class.get(k, 0) + n
    whole = snap(t_s, every, errors=sum(by_class.values()), errors_by_class=by_class)
    whole["names"] = {
        name: {
            "requests": len(ms),
            "errors": sum(by.values()),
            "errors_by_class": by,
            "histogram": hdr([round(x * 1000) for x in ms]),
        }
        for name, (ms, by) in parts.items()
    }
    return whole


def test_a_request_names_threshold_is_judged_live_on_its_own_figures():
    """submit:p95 judges submit's responses only: a slow submit among many fast polls fails
    it while the run-wide p95 holds; another name's threshold holds."""
    snaps = [
        named(0.5 * (i + 1), {"submit": ([900.0] * 5, {}), "poll": ([5.0] * 200, {})})
        for i in range(6)
    ]
    fired = {}
    for spec in ("submit:p95<500ms;abort=1s", "poll:p95<500ms;abort=1s", "p95<500ms;abort=1s"):
        _, w = split(spec)
        assert w is not None
        fired[spec] = [s["t_s"] for s in snaps if w.feed(s, INTERVAL_S)]
    assert fired == {
        "submit:p95<500ms;abort=1s": [1.0, 1.5, 2.0, 2.5, 3.0],
        "poll:p95<500ms;abort=1s": [],
        "p95<500ms;abort=1s": [],
    }


def test_live_errors_count_each_request_once():
    """Every answer a 503: the engine counts each in requests and in errors (class status);
    the live error rate is 100 %, not 50 % (run-wide and per name)."""
    snaps = [named(0.5 * (i + 1), {"submit": ([5.0] * 10, {"status": 10})}) for i in range(4)]
    for spec in ("errors<50%;abort=1s", "submit:errors<50%;abort=1s"):
        _, w = split(spec)
        assert w is not None
        lines = [line for s in snaps if (line := w.feed(s, INTERVAL_S))]
        assert lines and "(errors 100.00% at 1.0 s)" in lines[0], (spec, lines)


def test_an_unknown_request_name_is_one_line_at_the_first_interval():
    _, w = split("nope:p95<1s;abort=1s")
    assert w is not None
    with pytest.raises(ConfigError, match=r"no request name 'nope' \(names: poll, submit;"):
        w.feed(named(0.5, {"submit": ([1.0], {}), "poll": ([1.0], {})}), INTERVAL_S)
    with pytest.raises(ConfigError, match="no request names"):
        w.feed(snap(0.5, [1.0]), INTERVAL_S)
