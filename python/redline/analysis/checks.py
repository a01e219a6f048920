"""checks: tests of the measurements themselves. Little's law must hold for any stable
system, so a step where it does not points at the measurement (a generator that fell behind,
requests lost from the count) rather than at the service. A resource series that keeps
climbing while the load holds steady is a suspected leak.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

#: LITTLE_TOLERANCE: the relative gap between L and λW beyond which a step is flagged.
LITTLE_TOLERANCE = 0.2

#: LITTLE_SLACK: an absolute allowance, in requests, under which L and λW cannot be told apart
#: (in flight is a count sampled at interval ends: 0.3 against 0.14 is no measurement problem).
LITTLE_SLACK = 1.0


@dataclass(frozen=True)
class LittleCheck:
    """LittleCheck compares the measured mean in-flight requests L with λW (throughput x
    mean latency). ``ratio`` is L ÷ λW; ``ok`` is False when it is off by more than the
    tolerance, which makes the step's figures suspect."""

    inflight: float
    expected: float
    ratio: float | None
    ok: bool

    def to_dict(self) -> dict[str, Any]:
        """to_dict is the check as the JSON result carries it."""
        return asdict(self)


def little_check(
    inflight: float,
    throughput_rps: float,
    mean_latency_ms: float,
    tolerance: float = LITTLE_TOLERANCE,
) -> LittleCheck:
    """little_check tests L ≈ λW for one step, within ``tolerance`` of λW or
    :data:`LITTLE_SLACK` requests, whichever is wider. With nothing completing (λW = 0) it holds
    only if nothing was in flight either."""
    expected = throughput_rps * mean_latency_ms / 1000.0
    if expected <= 0:
        return LittleCheck(inflight, expected, None, inflight <= 0)
    ratio = inflight / expected
    ok = abs(inflight - expected) <= max(tolerance * expected, LITTLE_SLACK)
    return LittleCheck(inflight, expected, ratio, ok)


def little_of(step: Any) -> LittleCheck | None:
    """little_of is :func:`little_check` on a step's own figures (a
    :class:`~redline.analysis.step.StepResult`, or anything with its ``inflight_mean``,
    ``answered_rps``, ``throughput_rps`` and ``mean_ms``): λ is every answer a second (the
    requests in flight are every request), W their mean latency. None when the step lacks
    the figures. A step where it fails was no stationary state over its window: a backlog
    built in the step before draining through it (its answers' latencies are longer than
    the in-flight count over the window can hold), or one building; its rate is no rate the
    service sustains."""
    if step.inflight_mean is None or step.mean_ms is None:
        return None
    rate = step.answered_rps if step.answered_rps is not None else step.throughput_rps
    return little_check(step.inflight_mean, rate, step.mean_ms)


@dataclass(frozen=True)
class Trend:
    """Trend is a least-squares line through a resource series: slope per second, its
    p-value, the rise it implies over the window, and whether that is a suspected leak."""

    points: int
    slope_per_s: float | None = None
    p_value: float | None = None
    rise: float | None = None
    suspected: bool = False

    def to_dict(self) -> dict[str, Any]:
        """to_dict is the trend as the JSON result carries it."""
        return asdict(self)


def leak_check(
    t_s: Sequence[float],
    values: Sequence[float | None],
    *,
    min_rise: float,
    min_relative: float = 0.1,
    alpha: float = 0.01,
    min_points: int = 10,
) -> Trend:
    """leak_check fits a line to ``values`` against ``t_s`` (missing values skipped) with
    ``scipy.stats.linregress``. A leak is suspected when the slope is positive and
    significant (p < ``alpha``) and the rise over the window is at least ``min_rise`` and at
    least ``min_relative`` of the series' mean: noise and a few allocator pages are not a leak.
    """
    pairs = [(float(t), float(v)) for t, v in zip(t_s, values, strict=True) if v is not None]
    if len(pairs) < min_points:
        return Trend(len(pairs))
    t = np.array([p[0] for p in pairs])
    y = np.array([p[1] for p in pairs])
    if np.ptp(t) == 0:
        return Trend(len(pairs))
    if np.ptp(y) == 0:
        return Trend(len(pairs), 0.0, 1.0, 0.0, False)
    from scipy import stats  # here, not at the top: scipy.stats takes a second to import

    fit = stats.linregress(t, y)
    rise = float(fit.slope) * float(np.ptp(t))
    suspected = bool(
        fit.slope > 0
        and fit.pvalue < alpha
        and rise >= min_rise
        and rise >= min_relative * abs(float(y.mean()))
    )
    return Trend(len(pairs), float(fit.slope), float(fit.pvalue), rise, suspected)


#: LEAK_MIN_RISE: the smallest rise over a window that counts, per resource.
LEAK_MIN_RISE = {"fds": 10.0, "rss_bytes": 16 * 2**20, "threads": 5.0, "connections": 10.0}


def leak_checks(samples: Sequence[dict[str, Any]]) -> dict[str, Trend]:
    """leak_checks runs :func:`leak_check` on each resource of monitor samples (dicts with
    ``t_s`` and the :data:`LEAK_MIN_RISE` keys), e.g. over a soak at the optimum."""
    t = [float(s["t_s"]) for s in samples]
    return {
        key: leak_check(t, [s.get(key) for s in samples], min_rise=rise)
        for key, rise in LEAK_MIN_RISE.items()
    }
