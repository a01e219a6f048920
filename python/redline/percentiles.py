"""percentiles: the latency percentiles redline reports, in one table.

Each percentile is spelt four ways, by four readers: the name a bound gives it (``p99.9`` in
``--slo``, ``--threshold`` and compare's ``--fail-on``), the quantile read from a merged
HdrHistogram (0.999), the key of a run report's ``latency_ms`` object (``p99_9``) with its
label in the summary (``99.9%``), and the field of an interval snapshot and of a search step
(``p99_9_ms``). The engine writes the report's seven and the snapshot's five
(``crates/engine/src/hdr.rs``, ``snapshot.rs``); everything in the package that names a
percentile reads it from here, so adding one is a row here and the engine's field.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Percentile:
    """Percentile is one latency percentile and how each reader spells it;
    ``snapshot_key`` is None for the ones only a run's report carries."""

    name: str
    quantile: float
    report_key: str
    label: str
    snapshot_key: str | None


#: PERCENTILES: every percentile a run's report carries, in ascending order.
PERCENTILES = (
    Percentile("p50", 0.5, "p50", "50%", "p50_ms"),
    Percentile("p75", 0.75, "p75", "75%", None),
    Percentile("p90", 0.9, "p90", "90%", "p90_ms"),
    Percentile("p95", 0.95, "p95", "95%", "p95_ms"),
    Percentile("p99", 0.99, "p99", "99%", "p99_ms"),
    Percentile("p99.9", 0.999, "p99_9", "99.9%", "p99_9_ms"),
    Percentile("p99.99", 0.9999, "p99_99", "99.99%", None),
)

#: BY_NAME: the percentiles by the name a bound gives them.
BY_NAME = {p.name: p for p in PERCENTILES}

#: IN_SNAPSHOTS: the percentiles each interval snapshot (and so each search step) carries.
IN_SNAPSHOTS = tuple(p for p in PERCENTILES if p.snapshot_key is not None)


def snapshot_key(name: str) -> str:
    """snapshot_key is the snapshot field of the percentile ``name`` (KeyError for one that
    snapshots do not carry)."""
    key = BY_NAME[name].snapshot_key
    if key is None:
        raise KeyError(name)
    return key
