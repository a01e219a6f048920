"""evidence: when does a step's series say something, and when is it noise?

A capacity search judges each step on a handful of interval figures. Two mistakes it must not
make: calling 0.03 ms of jitter on a 0.15 ms service "a queue building up", and calling a
+4 % throughput gain "no gain" because it is under a fixed 5 %. Every verdict here therefore
asks two questions: is the effect *significant* (larger than the interval-to-interval noise
would make it, with counts' Poisson noise as a floor when intervals are few) and is it
*material* (large on the scale that matters: the service's own latency, the user's SLO, the
load that was added).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, NamedTuple, Protocol, TypeVar

#: Z: how many standard errors make an effect significant (about 1 in 1,000 one-sided).
Z = 3.0

#: MIN_QUEUE_RISE_MS: a latency rise under this is never called a queue (sub-millisecond
#: jitter is scheduler noise, not a backlog).
MIN_QUEUE_RISE_MS = 1.0


@dataclass(frozen=True)
class Trend:
    """Trend is a least-squares line through a series against time: the ``rise`` it implies
    over the span (slope × span), its standard error, and the series' mean."""

    rise: float
    se: float
    mean: float
    points: int

    @property
    def t(self) -> float:
        """t: the rise in standard errors (inf for an exact line, 0 for a flat one)."""
        if self.se > 0:
            return self.rise / self.se
        return 0.0 if self.rise == 0 else math.copysign(math.inf, self.rise)

    def significant(self, z: float = Z) -> bool:
        """significant: the rise is more than ``z`` standard errors from zero."""
        return self.points >= 4 and abs(self.t) > z


def trend(t: Sequence[float], y: Sequence[float]) -> Trend:
    """trend fits y = a + b·t by ordinary least squares and returns the rise b·(t_last −
    t_first) with its standard error (from the residuals, n − 2 degrees of freedom)."""
    n = len(y)
    if n != len(t):
        raise ValueError("t and y must have the same length")
    if n == 0:
        return Trend(0.0, 0.0, 0.0, 0)
    mean_y = sum(y) / n
    if n < 3:
        return Trend(0.0, math.inf, mean_y, n)
    mean_t = sum(t) / n
    sxx = sum((x - mean_t) ** 2 for x in t)
    if sxx <= 0:
        return Trend(0.0, math.inf, mean_y, n)
    b = sum((x - mean_t) * (v - mean_y) for x, v in zip(t, y, strict=True)) / sxx
    resid = [v - (mean_y + b * (x - mean_t)) for x, v in zip(t, y, strict=True)]
    s2 = sum(r * r for r in resid) / (n - 2)
    span = max(t) - min(t)
    return Trend(b * span, math.sqrt(s2 / sxx) * span, mean_y, n)


def walk_t(y: Sequence[float]) -> float:
    """walk_t is how many standard errors a series' drift is from none, read as a random
    walk's: the mean of its steps over their standard error (sd/sqrt(n)). A queue's length is
    its arrivals less its departures, summed: a walk, whose readings a least-squares line
    takes for independent, so a queue that wanders about a level reads as a trend (a closed
    model's confirmation at 256 users, 25-47 tasks waiting at 59 tasks/s done: t 4.6 by the
    line, 0.5 as a walk). 0 with fewer than three steps."""
    steps = [b - a for a, b in zip(y, y[1:], strict=False)]
    n = len(steps)
    if n < 3:
        return 0.0
    mean = sum(steps) / n
    sd = math.sqrt(sum((d - mean) ** 2 for d in steps) / (n - 1))
    if sd == 0:
        return 0.0 if mean == 0 else math.copysign(math.inf, mean)
    return mean / (sd / math.sqrt(n))


def rate_se(counts: Sequence[float], seconds: float) -> float:
    """rate_se is the standard error of a rate measured as ``sum(counts) / seconds`` over
    equal intervals, from the interval-to-interval spread (sd/√k of the per-interval rates).
    Counts are whole, so the spread is never taken as under one count per interval; with
    fewer than four intervals, which can look flatter than their counts allow, the Poisson
    error of the total (√N / T) is the floor instead."""
    k = len(counts)
    if k == 0 or seconds <= 0:
        return math.inf
    total = float(sum(counts))
    if k < 4:
        return math.sqrt(max(total, 1.0)) / seconds
    dt = seconds / k
    rates = [c / dt for c in counts]
    mean = sum(rates) / k
    sd = math.sqrt(sum((r - mean) ** 2 for r in rates) / (k - 1))
    return max(sd, 1.0 / dt) / math.sqrt(k)


def gain(x1: float, se1: float, x0: float, se0: float, z: float = Z) -> tuple[float, bool]:
    """gain is the relative change from x0 to x1 and whether it is significant: the
    difference is more than ``z`` combined standard errors."""
    if x0 <= 0:
        return (math.inf if x1 > 0 else 0.0), x1 > z * se1
    rel = x1 / x0 - 1
    se = math.hypot(se1, se0)
    return rel, abs(x1 - x0) > z * se


#: SE_FLOOR: a step's standard error is taken as at least this share of its goodput when
#: steps are weighed (a step whose intervals happened to agree is not infinitely precise).
SE_FLOOR = 0.005


class Measured(Protocol):
    """Measured: a step's load, goodput and the goodput's standard error."""

    @property
    def load(self) -> float: ...

    @property
    def throughput_rps(self) -> float: ...

    @property
    def throughput_se(self) -> float | None: ...


M = TypeVar("M", bound=Measured)


def floored_se(s: Measured) -> float:
    """floored_se is a step's goodput standard error, at least :data:`SE_FLOOR` of it."""
    return max(s.throughput_se or 0.0, SE_FLOOR * s.throughput_rps)


class Level(NamedTuple, Generic[M]):
    """Level is the goodput several steps agree on: the ``steps`` kept, their ``mean``
    weighted by 1/SE² and that mean's standard error ``se``."""

    steps: list[M]
    mean: float
    se: float


def level_of(steps: Sequence[M]) -> Level[M] | None:
    """level_of is the goodput the steps at the top agree on (:class:`Level`), after leaving
    out, one at a time and the farthest first, every step significantly under the mean
    of the others (by more than two standard errors of the difference): those were
    lighter loads, under the plateau (or past a peak). A lone high reading of a noisy
    step stays in with the little weight its noise earns it, so it moves the answer by
    little (taking the most moves it by all of it). None without a step that got any
    goodput."""
    level = [s for s in steps if s.throughput_rps > 0]
    if not level:
        return None

    def mean(group: Sequence[M]) -> tuple[float, float]:
        weights = [1 / floored_se(s) ** 2 for s in group]
        total = sum(weights)
        m = sum(w * s.throughput_rps for w, s in zip(weights, group, strict=True)) / total
        return m, 1 / math.sqrt(total)

    def under(s: M, group: Sequence[M]) -> float:
        """under: how many standard errors s reads under the mean of the rest of group."""
        m, m_se = mean([o for o in group if o is not s])
        return (m - s.throughput_rps) / math.hypot(floored_se(s), m_se)

    while len(level) > 1:
        low = max(level, key=lambda s: under(s, level))
        if under(low, level) <= 2:
            break
        level = [s for s in level if s is not low]
    m, m_se = mean(level)
    return Level(level, m, m_se)


def elasticity_fit(steps: Sequence[Measured]) -> tuple[float, float] | None:
    """elasticity_fit is the elasticity of goodput to load over ``steps`` and its standard
    error, from one weighted least-squares line of goodput against log(load) (weights
    1/SE²): the slope over the weighted mean goodput, d ln x / d ln load. None with fewer
    than two loads."""
    pts = [(math.log(s.load), s.throughput_rps, 1 / floored_se(s) ** 2) for s in steps]
    total = sum(w for _, _, w in pts)
    if len({u for u, _, _ in pts}) < 2 or total <= 0:
        return None
    u_bar = sum(w * u for u, _, w in pts) / total
    x_bar = sum(w * x for _, x, w in pts) / total
    sxx = sum(w * (u - u_bar) ** 2 for u, _, w in pts)
    slope = sum(w * (u - u_bar) * (x - x_bar) for u, x, w in pts) / sxx
    if x_bar <= 0:
        return None
    return slope / x_bar, 1 / math.sqrt(sxx) / x_bar


def elasticity(load1: float, x1: float, load0: float, x0: float) -> float | None:
    """elasticity is the throughput gained per load added, both relative: 1 where throughput
    scales with the load, 0 on a plateau, negative past a peak (None without a change)."""
    if load0 <= 0 or x0 <= 0 or load1 == load0:
        return None
    return (x1 / x0 - 1) / (load1 / load0 - 1)


def queue_rise_floor_ms(base_latency_ms: float | None, slo_bound_ms: float | None) -> float:
    """queue_rise_floor_ms is how much latency must rise through a step before the rise is
    material: half the service's own latency at light load (a queue that grows by half a
    service time in one step is real), or a tenth of the tightest SLO bound if that is
    smaller (it matters to the user sooner), and never under :data:`MIN_QUEUE_RISE_MS`."""
    floor = 0.5 * base_latency_ms if base_latency_ms is not None and base_latency_ms > 0 else 0
    if slo_bound_ms is not None and slo_bound_ms > 0:
        floor = min(floor, 0.1 * slo_bound_ms) if floor > 0 else 0.1 * slo_bound_ms
    return max(floor, MIN_QUEUE_RISE_MS)
