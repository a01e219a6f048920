"""steady: has a step settled? The one home of the steadiness rules the capacity search
judges its steps by (``find/reader.py`` asks them; ``docs/find.md``, "Steadiness", says them
in words): the warm-up cut, then whether what is left holds level.

- :func:`mser_cut`: the warm-up to leave out. MSER (White 1997) picks the truncation point
  that minimises the standard error of the mean of what remains; MSER-5 runs it on means of
  batches of five observations, which smooths the statistic. The search is bounded to the
  first half of the series because MSER's statistic shrinks spuriously as the remainder gets
  short.
- :func:`steady_counts`: the per-interval outcome counts hold level, within the Poisson noise
  of that many events;
- :func:`level`: the requests in flight hold level (a queue growing or draining is no steady
  state);
- :func:`little_holds`: Little's law holds over the window (a backlog of the step before
  draining through it breaks it);
- :func:`steady_window`: the verdict on a judged window, all of the above.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from redline import window
from redline.analysis.checks import little_check
from redline.analysis.evidence import Z, trend

#: MIN_BATCHES: below this many batch means MSER has nothing to compare; no cut is made.
MIN_BATCHES = 4

#: MAX_DRIFT: a significant trend of the counts, or of the requests in flight, over this
#: share of their mean is no steady state.
MAX_DRIFT = 0.10

#: SPREAD: the counts' standard deviation a steady window allows beyond Poisson noise, as a
#: share of their mean.
SPREAD = 0.15


def mser_cut(series: Sequence[float], batch: int = 5) -> int:
    """mser_cut returns how many leading points of ``series`` to drop as warm-up (MSER-m with
    batches of ``batch``; MSER-5 by default). The cut is a multiple of ``batch``, in the first
    half of the series, and 0 when there are fewer than four batches."""
    if batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")
    values = np.asarray(series, dtype=float)
    k = len(values) // batch
    if k < MIN_BATCHES:
        return 0
    means = values[: k * batch].reshape(k, batch).mean(axis=1)
    best, cut = np.inf, 0
    for d in range(k // 2 + 1):
        rest = means[d:]
        stat = float(np.sum((rest - rest.mean()) ** 2)) / len(rest) ** 2
        # Strict '<' keeps the earliest of equal minima: never cut more than needed.
        if stat < best * (1 - 1e-9):
            best, cut = stat, d
    return cut * batch


def mser5_cut(series: Sequence[float]) -> int:
    """mser5_cut is :func:`mser_cut` with batches of five (the classic MSER-5)."""
    return mser_cut(series, 5)


def steady_counts(counts: Sequence[float], max_drift: float = MAX_DRIFT, z: float = Z) -> bool:
    """steady_counts: per-interval counts hold level: their trend is not both significant and
    over ``max_drift`` of the mean, and their spread is within what Poisson noise of that
    many events (√mean per interval) and a :data:`SPREAD` allowance leave."""
    k = len(counts)
    if k < 3:
        return False
    mean = sum(counts) / k
    if mean <= 0:
        return True
    tr = trend(list(range(k)), list(counts))
    drift = abs(tr.rise) / mean
    if drift > max_drift and tr.significant(z):
        return False
    sd = math.sqrt(sum((c - mean) ** 2 for c in counts) / (k - 1))
    allowed = max(SPREAD * mean, z * math.sqrt(mean))
    return sd <= allowed


def level(series: Sequence[float]) -> bool:
    """level: the requests in flight held level through the step (no significant trend of
    over :data:`MAX_DRIFT` of their mean): a queue growing or draining is no steady state, and
    Little's law, which the analysis checks on steady steps, holds only for a stationary one."""
    if len(series) < 4:
        return True
    tr = trend([float(i) for i in range(len(series))], list(series))
    return not (tr.significant() and abs(tr.rise) > MAX_DRIFT * max(tr.mean, 1.0))


def inflight_mean(snapshots: Sequence[dict[str, Any]]) -> float | None:
    """inflight_mean is the mean number of requests in flight over the intervals (Little's
    L): the mean of the engine's time averages (``in_flight_mean``), else of the
    end-of-interval samples."""
    key = "in_flight_mean" if all(s.get("in_flight_mean") is not None for s in snapshots) else None
    vals = [
        float(s[key or "in_flight"]) for s in snapshots if s.get(key or "in_flight") is not None
    ]
    return sum(vals) / len(vals) if vals else None


def inflight_series(snapshots: Sequence[dict[str, Any]]) -> list[float]:
    """inflight_series is each interval's in-flight figure (time average where given)."""
    return [float(s.get("in_flight_mean", s.get("in_flight", 0.0)) or 0.0) for s in snapshots]


def little_holds(snapshots: Sequence[dict[str, Any]], span_s: float) -> bool:
    """little_holds is Little's law on a window of intervals, as
    :func:`redline.analysis.checks.little_of` judges a step: the mean in flight against
    every answer a second times their mean latency. True when it cannot be judged."""
    inflight = inflight_mean(snapshots)
    mean = window.weighted(window.answered(snapshots), "mean_ms")
    if inflight is None or mean is None or span_s <= 0:
        return True
    rate = sum(int(s.get("requests", 0)) for s in snapshots) / span_s
    return little_check(inflight, rate, mean).ok


def steady_window(
    snapshots: Sequence[dict[str, Any]], counts: Sequence[float], span_s: float, min_windows: int
) -> bool:
    """steady_window is the verdict on a step's judged window (its warm-up already cut):
    at least ``min_windows`` intervals whose outcome ``counts`` hold level
    (:func:`steady_counts`), whose requests in flight hold level (:func:`level`) and over
    which Little's law holds (:func:`little_holds`, over ``span_s``)."""
    return (
        len(snapshots) >= min_windows
        and steady_counts(counts)
        and level(inflight_series(snapshots))
        and little_holds(snapshots, span_s)
    )
