"""Tests for redline.cluster.merge: snapshots and reports of several runs added exactly."""

from __future__ import annotations

from typing import Any

import pytest
import redline
from redline import _engine
from redline.cluster.merge import (
    SNAPSHOT_QUANTILES,
    add_counts,
    common_outages,
    merge_report,
    merge_snapshots,
)


@pytest.fixture(scope="module")
def runs(target: redline.Target) -> list[redline.Result]:
    """Three short real runs (as three injectors would make), each with its snapshots."""
    return [
        redline.run(target.url, connections=c, requests=300 * c, threads=1, interval=0.05)
        for c in (1, 2, 3)
    ]


def _first(r: redline.Result) -> dict[str, Any]:
    return r.data["timeseries"][0]


def test_snapshots_add_counts_and_read_percentiles_from_the_merged_histogram(runs) -> None:
    snaps = [_first(r) for r in runs]
    m = merge_snapshots(snaps, injectors=4)
    assert m["requests"] == sum(s["requests"] for s in snaps)
    assert m["bytes_in"] == sum(s["bytes_in"] for s in snaps)
    assert m["achieved_rate"] == pytest.approx(sum(s["achieved_rate"] for s in snaps))
    assert m["max_ms"] == max(s["max_ms"] for s in snaps)
    assert (m["injectors_reported"], m["injectors"]) == (3, 4)
    hist = _engine.merge_histograms([s["histogram"] for s in snaps])
    count, values = _engine.histogram_quantiles(hist, [q for _, q in SNAPSHOT_QUANTILES])
    assert count == m["requests"]
    for (key, _), v in zip(SNAPSHOT_QUANTILES, values, strict=True):
        assert m[key] == v / 1000.0, key


def test_stream_figures_add_up_across_injectors(target: redline.Target) -> None:
    """--stream: each interval's stream block (first bytes, gaps, a completion's TTFT, ITL
    and tokens) adds up over the injectors, its percentiles from the merged histograms."""
    url = target.url + "/v1/chat/completions?first=5ms&every=2ms&tokens=4"
    runs = [redline.run(url, connections=c, requests=10 * c, stream=True) for c in (1, 2)]
    snaps = [s for r in runs for s in r.data["timeseries"] if s["stream"]["responses"]]
    m = merge_snapshots(snaps, injectors=2)["stream"]
    assert m["responses"] == sum(s["stream"]["responses"] for s in snaps) == 30
    assert m["events"] == sum(s["stream"]["events"] for s in snaps)
    c = m["completion"]
    assert c["output_tokens"] == sum(r.data["completion"]["output_tokens"] for r in runs) == 120
    for figure, part in ((m["first_byte"], "first_byte"), (c["ttft"], "ttft")):
        parts = [s["stream"].get(part) or s["stream"]["completion"][part] for s in snaps]
        hist = _engine.merge_histograms([p["histogram"] for p in parts])
        count, (p99,) = _engine.histogram_quantiles(hist, [0.99])
        assert figure["count"] == count == 30 and figure["p99_ms"] == p99 / 1000.0, part
        assert figure["max_ms"] == max(p["max_ms"] for p in parts)


def test_a_late_snapshot_joins_its_merged_interval_as_if_it_had_come_in_time(runs) -> None:
    snaps = [_first(r) for r in runs]
    at_once = merge_snapshots(snaps, injectors=3)
    late = merge_snapshots([merge_snapshots(snaps[:2], injectors=3), snaps[2]], injectors=3)
    assert late.keys() == at_once.keys()
    for key, value in at_once.items():
        if isinstance(value, float):
            # Sums and weighted means of floats depend on the order of the additions
            # (a fresh-clone CI saw the mean differ in its 17th digit): equal to rounding.
            assert late[key] == pytest.approx(value, rel=1e-12), key
        else:
            assert late[key] == value, key


def test_reports_add_up_and_balance(runs) -> None:
    docs = [r.data for r in runs]
    m = merge_report(docs, timeseries=[])
    assert m["requests"] == sum(d["requests"] for d in docs) == 1800
    assert m["intended"] == sum(d["intended"] for d in docs)
    assert m["status_codes"] == add_counts(d["status_codes"] for d in docs)
    merged = _engine.merge_histograms([d["histograms"]["latency"] for d in docs])
    assert m["histograms"]["latency"] == merged
    assert m["latency_ms"]["max"] == max(d["latency_ms"]["max"] for d in docs)
    name = next(iter(m["per_name"]))
    assert m["per_name"][name]["requests"] == 1800
    assert m["per_name"][name]["latency_ms"] == m["latency_ms"], "one name: the run's latency"
    (origin,) = m["per_host"]
    assert origin == target_origin(docs[0]["url"])
    assert m["per_host"][origin]["requests"] == 1800
    assert m["per_host"][origin]["histogram"] == merged
    assert m["per_host"][origin]["latency_ms"] == m["latency_ms"], "one host: the run's latency"


def target_origin(url: str) -> str:
    """target_origin: a plain run's one host, as per_host names it."""
    scheme, rest = url.split("://", 1)
    return f"{scheme}://{rest.split('/', 1)[0]}"


def test_hosts_merge_by_origin_across_injectors(runs) -> None:
    """Each injector's per-host figures join those of the same origin; an origin one
    injector alone reached keeps its figures."""
    docs = [dict(r.data) for r in runs]
    (origin,) = docs[0]["per_host"]
    docs[2]["per_host"] = {"http://other:1": docs[2]["per_host"][origin]}
    m = merge_report(docs, timeseries=[])
    assert sorted(m["per_host"]) == sorted([origin, "http://other:1"])
    assert m["per_host"][origin]["requests"] == docs[0]["requests"] + docs[1]["requests"]
    assert m["per_host"]["http://other:1"]["requests"] == docs[2]["requests"]
    both = _engine.merge_histograms([d["histograms"]["latency"] for d in docs[:2]])
    assert m["per_host"][origin]["histogram"] == both


OUTAGES = [
    ("one injector alone", [[{"start_s": 1.0, "end_s": 2.0}], []], []),
    (
        "overlap",
        [[{"start_s": 1.0, "end_s": 3.0}], [{"start_s": 2.0, "end_s": 4.0}]],
        [(2.0, 3.0)],
    ),
    (
        "still down at the end",
        [[{"start_s": 1.0, "end_s": None}], [{"start_s": 1.5, "end_s": None}]],
        [(1.5, None)],
    ),
    ("disjoint", [[{"start_s": 1.0, "end_s": 2.0}], [{"start_s": 3.0, "end_s": 4.0}]], []),
]


@pytest.mark.parametrize(("label", "spans", "want"), OUTAGES, ids=[o[0] for o in OUTAGES])
def test_an_outage_is_one_every_injector_saw(label, spans, want) -> None:
    full = [
        [{**o, "error_class": "connect", "errors": 1, "errors_by_class": {"connect": 1}} for o in s]
        for s in spans
    ]
    got = [(o["start_s"], o["end_s"]) for o in common_outages(full)]
    assert got == want, label


def test_tallies_add_up_across_injectors(runs) -> None:
    """A scenario's tallies (per name, per interval and over the run) add value by value."""

    def name_of(snap: dict[str, Any]) -> dict[str, Any]:
        keys = ("requests", "errors", "errors_by_class", "histogram")
        return {k: snap[k] for k in keys}

    snaps = [
        {**_first(r), "names": {"status": {**name_of(_first(r)), "tally": t}}}
        for r, t in zip(runs, ({"RUNNING": 2}, {"RUNNING": 1, "DONE": 4}, {}), strict=True)
    ]
    m = merge_snapshots(snaps, injectors=3)
    assert m["names"]["status"]["tally"] == {"RUNNING": 3, "DONE": 4}
    docs = []
    for r, t in zip(runs, ({"DONE": 5}, {"DONE": 1, "FAILED": 2}, None), strict=True):
        d = {**r.data, "per_name": {k: dict(v) for k, v in r.data["per_name"].items()}}
        if t is not None:
            d["per_name"][next(iter(d["per_name"]))]["tally"] = t
        docs.append(d)
    merged = merge_report(docs, timeseries=[])
    assert next(iter(merged["per_name"].values()))["tally"] == {"DONE": 6, "FAILED": 2}


def test_status_codes_add_up_across_injectors(runs) -> None:
    """Each interval's answers by status code (count, buckets, sum, least and greatest)
    add code by code, as the engine would have counted them in one run."""
    snaps = [_first(r) for r in runs]
    assert all(set(s["statuses"]) == {"200"} for s in snaps)
    five = {
        "count": 2,
        "buckets": [0] * 5 + [2] * 11,
        "sum_s": 0.04,
        "min_s": 0.015,
        "max_s": 0.025,
    }
    snaps[1] = {**snaps[1], "statuses": {**snaps[1]["statuses"], "503": five}}
    m = merge_snapshots(snaps, injectors=3)
    ok = [s["statuses"]["200"] for s in snaps]
    assert m["statuses"]["200"] == {
        "count": sum(f["count"] for f in ok),
        "buckets": [sum(col) for col in zip(*(f["buckets"] for f in ok), strict=True)],
        "sum_s": pytest.approx(sum(f["sum_s"] for f in ok)),
        "min_s": min(f["min_s"] for f in ok),
        "max_s": max(f["max_s"] for f in ok),
    }
    assert m["statuses"]["503"] == five
    assert sum(f["count"] for f in m["statuses"].values()) == m["requests"] + 2
    assert all(s["statuses"]["200"]["count"] == s["requests"] for s in snaps)
