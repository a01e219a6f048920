"""Tests for redline.live.metrics: the bucket counts read from the engine's histograms (against
every rank, merged, a fixed latency, the exact status buckets) and the ledger's names, tallies
and Prometheus text."""

from __future__ import annotations

from typing import Any

import pytest
import redline
from live_support import (
    assert_exact_within_the_histogram,
    top_of_bucket,
)
from prometheus_client.parser import text_string_to_metric_families
from redline import _engine
from redline.errors import ConfigError
from redline.live.metrics import BOUNDS_S, Ledger, counts_at, figures_of


@pytest.fixture(scope="module")
def snapshots(target) -> list[dict[str, Any]]:
    """Interval snapshots of a short run with a spread of latencies (1 to ~30 ms)."""
    snaps: list[dict[str, Any]] = []
    redline.run(
        target.url + "?latency=lognormal:2ms:0.8",
        connections=8,
        duration="1s",
        interval="0.25s",
        progress=snaps.append,
    )
    return snaps


def test_bucket_counts_agree_with_the_engine(snapshots):
    """counts_at and the engine read the same histogram: for each bound, the value at the
    count's rank is at or below it and the next rank's above it; the last bound (1 min)
    holds every answered request."""
    bounds = [round(b * 1e6) for b in BOUNDS_S]
    answered = [s for s in snapshots if s["requests"]]  # the last, partial one may be empty
    assert len(answered) >= 3
    for snap in answered:
        n, counts = counts_at(snap["histogram"], bounds)
        assert n == snap["requests"] and counts == sorted(counts) and counts[-1] == n
        for bound, c in zip(bounds, counts, strict=True):
            ranks = [r for r in (c, c + 1) if 1 <= r <= n]
            _, values = _engine.histogram_quantiles(
                snap["histogram"], [(r - 0.5) / n for r in ranks]
            )
            for r, v in zip(ranks, values, strict=True):
                assert (v <= bound) == (r == c), (bound, c, r, v)


def test_bucket_counts_equal_a_count_of_every_rank(snapshots):
    """counts_at's search and figures_of's (narrowed by its quantile grid) agree with the
    plain count: the value at every rank, read from the engine, compared with each bound."""
    bounds = [round(b * 1e6) for b in BOUNDS_S]
    for snap in snapshots:
        n = snap["requests"]
        if not n:
            continue
        _, every = _engine.histogram_quantiles(
            snap["histogram"], [(r - 0.5) / n for r in range(1, n + 1)]
        )
        truth = [sum(v <= b for v in every) for b in bounds]
        assert counts_at(snap["histogram"], bounds) == (n, truth)
        assert figures_of(snap["histogram"]).buckets == truth


def test_bucket_counts_add_like_merged_histograms(snapshots):
    """Adding each interval's buckets gives the buckets of the merged histogram."""
    bounds = [round(b * 1e6) for b in BOUNDS_S]
    summed = [0] * len(bounds)
    for snap in snapshots:
        for i, n in enumerate(counts_at(snap["histogram"], bounds)[1]):
            summed[i] += n
    merged = _engine.merge_histograms([s["histogram"] for s in snapshots])
    assert counts_at(merged, bounds)[1] == summed
    assert summed[-1] == sum(s["requests"] for s in snapshots)


def test_top_of_bucket_is_the_histograms():
    """top_of_bucket: the top of a bucket is its own top, and the bounds' buckets are as
    HdrHistogram lays them out (2,500 µs in [2,500, 2,501], 25 ms in [24,992, 25,007])."""
    for us in (1, 500, 2047, 2048, 2500, 4096, 5000, 10_000, 25_000, 250_000, 60_000_000):
        assert top_of_bucket(top_of_bucket(us)) == top_of_bucket(us)
    assert (top_of_bucket(2500), top_of_bucket(25_000), top_of_bucket(1000)) == (
        2501,
        25_007,
        1000,
    )


def test_status_buckets_agree_with_the_histogram_within_its_precision(snapshots):
    """Each snapshot's ``statuses`` (the engine's exact counts at the bounds) count every
    answer once, and agree at each bound with the interval's HdrHistogram read there, to
    its precision (the answers in the histogram's bucket that straddles the bound)."""
    bounds = [round(b * 1e6) for b in BOUNDS_S]
    for snap in snapshots:
        n = snap["requests"]
        statuses = snap.get("statuses", {})
        assert sum(f["count"] for f in statuses.values()) == n
        if not n:
            continue
        exact = [sum(f["buckets"][i] for f in statuses.values()) for i in range(len(bounds))]
        assert_exact_within_the_histogram(exact, snap["histogram"])
        assert exact[-1] == n
        low = min(f["min_s"] for f in statuses.values())
        assert low * 1000 == pytest.approx(
            _engine.histogram_quantiles(snap["histogram"], [0.0])[1][0] / 1000, rel=2e-3
        )


def test_bucket_counts_of_a_fixed_latency(target):
    """A target that answers after 20 ms: no request lies at or below 10 or 20 ms (the
    wait is a floor), every one at or below a minute; an interval's figures have its count,
    the same buckets, the engine's mean times the count and its max, to the histogram's
    precision (3 digits)."""
    snaps: list[dict[str, Any]] = []
    redline.run(target.url + "?latency=20ms", connections=2, duration="0.5s", progress=snaps.append)
    merged = _engine.merge_histograms([s["histogram"] for s in snaps if s["requests"]])
    bounds = [round(b * 1e6) for b in BOUNDS_S]
    n, (at_10ms, at_20ms, at_1min) = counts_at(merged, [10_000, 20_000, 60_000_000])
    assert n == sum(s["requests"] for s in snaps) > 0
    assert (at_10ms, at_20ms, at_1min) == (0, 0, n)
    for s in snaps:
        if s["requests"]:
            f = figures_of(s["histogram"])
            assert f.count == s["requests"] and f.buckets == counts_at(s["histogram"], bounds)[1]
            assert f.sum_s == pytest.approx(s["mean_ms"] / 1000 * f.count, rel=2e-3)
            assert 0.020 <= f.min_s <= f.max_s == pytest.approx(s["max_ms"] / 1000, rel=2e-3)


@pytest.mark.parametrize(
    "label,encoded",
    [
        ("not base64", "HIST!!"),
        ("another format", "AAAAAAAAAAAA"),
        ("truncated", "HISTFAAAAeV4nC1QQUhUYRD"),
    ],
)
def test_bucket_counts_refuse_garbage(label, encoded):
    with pytest.raises(ConfigError):
        counts_at(encoded, [1000])


def test_ledger_caps_names_and_skips_warmup(snapshots):
    ledger = Ledger(name="GET /")
    ledger.add({**snapshots[0], "warmup": True})
    assert ledger.totals()["requests"] == 0
    ledger.add(snapshots[1])
    assert ledger.totals()["requests"] == snapshots[1]["requests"]
    # A scenario's snapshot: counted per name, those past the cap as _other.
    capped = Ledger(name_cap=2)
    part = {k: snapshots[1][k] for k in ("requests", "errors_by_class", "histogram")}
    capped.add({**snapshots[1], "names": {n: part for n in ("a", "b", "c", "d")}})
    rows = {r["name"]: r for r in capped.table()}
    assert list(rows) == ["a", "b", "_other"]
    assert rows["_other"]["requests"] == 2 * rows["a"]["requests"] == 2 * part["requests"]
    # (These parts carry no ``statuses``, as an older injector's: read from the histogram.)
    assert capped._names["_other"].whole.count == 2 * part["requests"]
    assert capped.totals()["requests"] == 4 * part["requests"]


def test_exposition_reads_back_with_prometheus_clients_parser(snapshots):
    """The hand-written text format: a name that needs escaping (a quote, a backslash, a
    newline) comes back from prometheus_client's parser as it was, with every sample."""
    name = 'GET /a"b\\c\nd'
    ledger = Ledger(name=name)
    for snap in snapshots:
        ledger.add(snap)
    families = {f.name: f for f in text_string_to_metric_families(ledger.exposition().decode())}
    requests = families["redline_requests"].samples
    assert {s.labels["name"] for s in requests} == {name}
    assert sum(s.value for s in requests) == sum(s["requests"] for s in snapshots)
    hist = {s.name: s for s in families["redline_request_duration_seconds"].samples}
    assert hist["redline_request_duration_seconds_count"].value == ledger.read().names[name].count
    assert families["redline_run_done"].type == "gauge"


def test_ledger_keeps_each_names_tally_for_the_page_and_the_exposition(snapshots):
    part = {k: snapshots[1][k] for k in ("requests", "errors_by_class", "histogram")}
    ledger = Ledger()
    odd = 'say "hi"\\now'
    for tally in ({"RUNNING": 3, odd: 1}, {"RUNNING": 2, "SUCCEEDED": 4}):
        ledger.add({**snapshots[1], "names": {"status": {**part, "tally": tally}, "get": part}})
    rows = {r["name"]: r for r in ledger.table()}
    assert rows["status"]["tally"] == {"RUNNING": 5, odd: 1, "SUCCEEDED": 4}
    assert rows["get"]["tally"] == {}
    families = {f.name: f for f in text_string_to_metric_families(ledger.exposition().decode())}
    got = {s.labels["value"]: s.value for s in families["redline_tally"].samples}
    assert got == {"RUNNING": 5, odd: 1, "SUCCEEDED": 4}
    assert {s.labels["name"] for s in families["redline_tally"].samples} == {"status"}
