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


#: STREAM_FIGURES: the streamed answers' timed figures (``--stream``), by the name a bound
#: gives them (``ttft_p99<500ms``), each with where an interval snapshot carries it (under
#: ``stream``) and where a run's report does: ``first_byte`` and ``chunk_gap`` for every
#: stream, ``ttft`` and ``itl`` for streamed completions (docs/protocols.md).
STREAM_FIGURES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "first_byte": (("first_byte",), ("first_byte_ms",)),
    "chunk_gap": (("chunk_gap",), ("chunk_gap_ms",)),
    "ttft": (("completion", "ttft"), ("completion", "ttft_ms")),
    "itl": (("completion", "itl"), ("completion", "itl_ms")),
}


def _dig(d: Any, path: Sequence[str]) -> Any:
    for key in path:
        d = d.get(key) if isinstance(d, dict) else None
    return d


def stream_figure(snaps: Sequence[Snapshot], figure: str) -> list[Snapshot]:
    """stream_figure is one stream figure's part of each snapshot (of :data:`STREAM_FIGURES`),
    shaped as a snapshot of its own: its percentiles, mean, max and histogram under the
    latency's keys, ``requests`` its count of values and ``t_s`` the interval's, so that
    :func:`percentiles` and :func:`weighted` read it as they read the latency. Snapshots
    that carry none of it (no ``--stream``, no token in the interval) are left out."""
    path = ("stream", *STREAM_FIGURES[figure][0])
    out = []
    for s in snaps:
        part = _dig(s, path)
        if isinstance(part, dict):
            out.append({**part, "requests": int(part.get("count") or 0), "t_s": s.get("t_s")})
    return out


def report_figure(data: dict[str, Any], figure: str) -> dict[str, Any] | None:
    """report_figure is a run report's table of one stream figure (``first_byte_ms``,
    ``completion.ttft_ms``, ...), None when the run did not measure it."""
    got = _dig(data, STREAM_FIGURES[figure][1])
    return got if isinstance(got, dict) else None
