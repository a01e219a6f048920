"""steady: has a step settled? MSER-5 cuts the warm-up off a per-interval series, and what is
left must be flat enough (small spread, no drift) before the step is judged.

MSER (White 1997) picks the truncation point that minimises the standard error of the mean
of what remains; MSER-5 runs it on means of batches of five observations, which smooths the
statistic. The search is bounded to the first half of the series because MSER's statistic
shrinks spuriously as the remainder gets short.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: MIN_BATCHES: below this many batch means MSER has nothing to compare; no cut is made.
MIN_BATCHES = 4


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


@dataclass(frozen=True)
class SteadyPolicy:
    """SteadyPolicy: how flat a step must be after its warm-up cut to count as steady.

    ``batch`` is MSER's batch size. Each interval snapshot is already the mean of many
    requests (what MSER-5's batching does for single observations), so steps judged every
    second use 1; use 5 for noisy or sub-second series. ``min_windows`` intervals must remain
    after the cut; throughput's coefficient of variation must stay under ``max_cv`` and its
    drift across the kept windows (Theil-Sen slope x span / mean, robust to a stray interval)
    under ``max_drift``; p99's drift under ``max_p99_drift`` (tail latency is noisier)."""

    batch: int = 1
    min_windows: int = 5
    max_cv: float = 0.15
    max_drift: float = 0.10
    max_p99_drift: float = 0.25


@dataclass(frozen=True)
class Steadiness:
    """Steadiness is the verdict on one step's series: whether it is steady, where the
    warm-up was cut, the figures behind the verdict, and why not when it is not."""

    steady: bool
    cut: int
    cv: float | None = None
    drift: float | None = None
    p99_drift: float | None = None
    why: str = ""


def relative_drift(values: Sequence[float] | np.ndarray) -> float:
    """relative_drift is how much ``values`` move from first to last point along their
    Theil-Sen line, as a fraction of their mean (0 for a flat or zero series)."""
    y = np.asarray(values, dtype=float)
    if len(y) < 2:
        return 0.0
    mean = float(np.mean(y))
    if mean == 0:
        return 0.0
    from scipy import stats  # here, not at the top: scipy.stats takes a second to import

    slope = float(stats.theilslopes(y, np.arange(len(y)))[0])
    return slope * (len(y) - 1) / abs(mean)


def judge_steadiness(
    throughput: Sequence[float],
    p99: Sequence[float] | None = None,
    policy: SteadyPolicy = SteadyPolicy(),
) -> Steadiness:
    """judge_steadiness cuts the warm-up (the later of the throughput and p99 cuts) and
    judges the rest of a step's per-interval throughput (and p99, when given)."""
    if p99 is not None and len(p99) != len(throughput):
        raise ValueError("throughput and p99 must have one value per interval each")
    cut = mser_cut(throughput, policy.batch)
    if p99 is not None:
        cut = max(cut, mser_cut(p99, policy.batch))
    rest = np.asarray(throughput[cut:], dtype=float)
    if len(rest) < policy.min_windows:
        return Steadiness(
            False, cut, why=f"{len(rest)} intervals after the warm-up, need {policy.min_windows}"
        )
    mean = float(rest.mean())
    if mean <= 0:
        # Nothing completes: as steady as it will get; the error checks judge the step.
        return Steadiness(True, cut, cv=0.0, drift=0.0, why="no throughput")
    cv = float(rest.std()) / mean
    drift = relative_drift(rest)
    p99_drift = relative_drift(p99[cut:]) if p99 is not None else None
    why = []
    if cv > policy.max_cv:
        why.append(f"throughput varies {cv:.0%} (limit {policy.max_cv:.0%})")
    if abs(drift) > policy.max_drift:
        why.append(f"throughput drifts {drift:+.0%} (limit {policy.max_drift:.0%})")
    if p99_drift is not None and abs(p99_drift) > policy.max_p99_drift:
        why.append(f"p99 drifts {p99_drift:+.0%} (limit {policy.max_p99_drift:.0%})")
    return Steadiness(not why, cut, cv, drift, p99_drift, "; ".join(why))


def is_steady(
    throughput: Sequence[float],
    p99: Sequence[float] | None = None,
    policy: SteadyPolicy = SteadyPolicy(),
) -> tuple[bool, int]:
    """is_steady is :func:`judge_steadiness` reduced to ``(steady, cut)``, for a search loop
    that asks after every interval."""
    s = judge_steadiness(throughput, p99, policy)
    return s.steady, s.cut
