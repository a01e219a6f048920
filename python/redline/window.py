"""window: the latency figures of a window of interval snapshots, one rule for every reader.

A find step, a threshold's abort window and a comparison's window are all runs of the engine's
interval snapshots (result.schema.json). Their percentiles come from the intervals' merged
HdrHistograms: an average of interval p99s is not the window's p99, and it hides a tail that a
few intervals carry. Snapshots without histograms (an engine from before they were shipped)
fall back to the request-weighted mean of the intervals' own percentiles, and the largest of
their maxima: an approximation, since a percentile of a whole is no average of its parts, but
one that lies between the smallest and the largest of them. The mean needs no histogram: the
request-weighted mean of the intervals' means is exact.

Only the engine's extension is imported, and only when a histogram is read: the CLI's watch
of a threshold loads this module at start-up (tests/test_startup.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

Snapshot = dict[str, Any]


def answered(snaps: Sequence[Snapshot]) -> list[Snapshot]:
    """answered is the snapshots that counted at least one response."""
    return [s for s in snaps if int(s.get("requests") or 0) > 0]


def merged_histogram(snaps: Sequence[Snapshot]) -> str | None:
    """merged_histogram is the answered snapshots' latency histograms merged into one (encoded
    as the engine encodes them); None when nothing was answered or one of them has none."""
    hists = [s.get("histogram") for s in answered(snaps)]
    if not hists or not all(isinstance(h, str) and h for h in hists):
        return None
    if len(hists) == 1:
        return str(hists[0])
    from redline import _engine

    return str(_engine.merge_histograms([str(h) for h in hists]))


def weighted(snaps: Sequence[Snapshot], key: str) -> float | None:
    """weighted is the request-weighted mean of ``key`` over the snapshots that carry a finite
    value of it (None when none does)."""
    pairs: list[tuple[int, float]] = []
    for s in snaps:
        v = s.get(key)
        if v is not None and math.isfinite(float(v)):
            pairs.append((int(s.get("requests") or 0), float(v)))
    n = sum(w for w, _ in pairs)
    return sum(w * x for w, x in pairs) / n if n else None


def percentiles(
    snaps: Sequence[Snapshot],
    wanted: Sequence[tuple[float, str]],
    merged: str | None = None,
) -> list[float | None] | None:
    """percentiles reads each ``(quantile, snapshot key)`` of ``wanted`` over the window, in
    milliseconds and in order (quantile 1.0 is the maximum). None when the window answered
    nothing. ``merged``: the window's :func:`merged_histogram`, when the caller has it already.
    Without histograms each figure is the fallback of the module's docstring, None for a key no
    snapshot carries."""
    got = answered(snaps)
    if not got:
        return None
    merged = merged if merged is not None else merged_histogram(got)
    if merged is not None:
        from redline import _engine

        count, values = _engine.histogram_quantiles(merged, [q for q, _ in wanted])
        return [v / 1000.0 for v in values] if count else None
    out: list[float | None] = []
    for q, key in wanted:
        if q >= 1.0:
            tops = [float(s[key]) for s in got if s.get(key) is not None]
            out.append(max(tops) if tops else None)
        else:
            out.append(weighted(got, key))
    return out
