"""The one percentile table against what the engine writes: every report key and snapshot
field it names is in a real run's report, and the quantile it gives each is the one the
engine read (the report's figure equals the histogram's at that quantile)."""

from __future__ import annotations

import pytest
import redline
from redline import _engine
from redline.percentiles import BY_NAME, IN_SNAPSHOTS, PERCENTILES


def test_the_table_names_what_the_engine_writes_and_reads_its_quantiles() -> None:
    with redline.Target(threads=1) as t:
        # lognormal (median 20 ms, sigma 1): a heavy tail spreads the percentiles far apart, so
        # each falls in a bucket of its own even with a busy machine's delays added (uniform
        # 1-50 ms put p95 and p99 in one bucket under load in CI)
        r = redline.run(
            t.url + "/?latency=lognormal:20ms:1.0", connections=32, duration=2, threads=1
        )
    latency = r.data["latency_ms"]
    assert all(p.report_key in latency for p in PERCENTILES), latency
    snaps = [s for s in r.data["timeseries"] if s.get("requests")]
    assert snaps
    for p in IN_SNAPSHOTS:
        assert all(p.snapshot_key in s for s in snaps), p
    count, values = _engine.histogram_quantiles(
        r.histograms["latency"], [p.quantile for p in PERCENTILES]
    )
    assert count == r.requests
    for p, v in zip(PERCENTILES, values, strict=True):
        assert latency[p.report_key] == pytest.approx(v / 1000.0, rel=1e-9), p
    # and they differ from one another, so that a quantile in the wrong row shows
    assert len({latency[p.report_key] for p in PERCENTILES}) == len(PERCENTILES), latency
    assert BY_NAME["p99.9"].report_key == "p99_9"
