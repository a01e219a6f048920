"""steps: a capacity-search step's figures from the engine's interval snapshots.

A step's percentiles must come from the merged latency histogram of its intervals: the median
(or any average) of per-interval p99s is not the step's p99, and it hides a tail that a few
intervals carry. Each snapshot ships its interval's histogram (``histogram``, base64
HdrHistogram V2), so the step merges them and reads its percentiles once. The mean needs no
histogram: the request-weighted mean of the intervals' means is exact. Errors add up by class;
the in-flight count (sampled at each interval's end) is averaged, Little's law's L. The
stream figures (``--stream``: first byte, gaps, TTFT, ITL) are read the same way from their
own histograms in each snapshot's ``stream``, so ``--slo 'ttft_p99<500ms'`` judges a step's
TTFT p99, not an average of its intervals'.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from redline import window
from redline.analysis.outcome import Meter
from redline.analysis.steady import inflight_mean
from redline.percentiles import IN_SNAPSHOTS, snapshot_key

#: QUANTILES are the step percentiles read from the merged histogram: field -> quantile.
QUANTILES = {**{snapshot_key(p.name): p.quantile for p in IN_SNAPSHOTS}, "max_ms": 1.0}


def aggregate_step(
    snapshots: Sequence[dict[str, Any]], meter: Meter | None = None
) -> dict[str, Any]:
    """aggregate_step is the figures of the step made of ``snapshots`` (its steady intervals,
    warm-up already cut), keyed like :class:`redline.analysis.step.StepResult`'s fields:
    ``requests``, ``errors``, ``errors_by_class``, ``error_rate``, ``p50_ms`` ... ``p99_9_ms``,
    ``max_ms``, ``mean_ms`` and ``inflight_mean``; ``good`` and ``error_rate`` in ``meter``'s
    unit (failed outcomes ÷ all outcomes, each request once). With no response the
    percentiles are 0, as in an empty interval's snapshot (so a step that only failed is
    judged, not crashed on), and the mean None; snapshots without histograms (an older
    engine) fall back as :mod:`redline.window` says, and lack what they never carried."""
    requests = sum(int(s.get("requests", 0)) for s in snapshots)
    errors = sum(int(s.get("errors", 0)) for s in snapshots)
    meter = meter or Meter()
    counted = meter.total(snapshots)
    out: dict[str, Any] = {
        "requests": requests,
        "errors": errors,
        "good": counted.good,
        "errors_by_class": _errors_by_class(snapshots),
        "error_rate": meter.errors.total(snapshots).error_rate,
        "mean_ms": _mean(snapshots),
        "inflight_mean": inflight_mean(snapshots),
    }
    out.update(_percentiles(snapshots))
    out["stream"] = _stream(snapshots)
    return out


def _stream(snapshots: Sequence[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """_stream is each stream figure the step measured (:data:`redline.window.STREAM_FIGURES`:
    none without ``--stream``, no TTFT or ITL without a token): its percentiles from the
    merged histograms (keyed as the step's latency ones), its exact mean, and ``count``."""
    out: dict[str, dict[str, float]] = {}
    for name in window.STREAM_FIGURES:
        parts = window.answered(window.stream_figure(snapshots, name))
        got = window.percentiles(parts, [(q, k) for k, q in QUANTILES.items()])
        if got is None:
            continue
        figure = {k: v for k, v in zip(QUANTILES, got, strict=True) if v is not None}
        mean = window.weighted(parts, "mean_ms")
        if mean is not None:
            figure["mean_ms"] = mean
        figure["count"] = float(sum(int(p["requests"]) for p in parts))
        out[name] = figure
    return out


def _percentiles(snapshots: Sequence[dict[str, Any]]) -> dict[str, float | None]:
    """_percentiles reads every step percentile over the step's intervals
    (:func:`redline.window.percentiles`); with no response they are 0, as in an empty
    interval's snapshot."""
    got = window.percentiles(snapshots, [(q, k) for k, q in QUANTILES.items()])
    if got is None:
        return {k: 0.0 for k in QUANTILES}
    out = dict(zip(QUANTILES, got, strict=True))
    # Every snapshot has carried these four (0 when empty); p95 and p99.9 came later.
    for key in ("p50_ms", "p90_ms", "p99_ms", "max_ms"):
        out[key] = out[key] or 0.0
    return out


def _mean(snapshots: Sequence[dict[str, Any]]) -> float | None:
    """_mean is the request-weighted mean of the intervals' mean latency (exact: each
    interval's mean is over its responses, which its ``requests`` counts)."""
    return window.weighted(window.answered(snapshots), "mean_ms")


def _errors_by_class(snapshots: Sequence[dict[str, Any]]) -> dict[str, int]:
    """_errors_by_class sums the intervals' failures by class, leaving out the zeros."""
    total: dict[str, int] = {}
    for s in snapshots:
        for k, v in (s.get("errors_by_class") or {}).items():
            total[k] = total.get(k, 0) + int(v)
    return {k: v for k, v in total.items() if v}
