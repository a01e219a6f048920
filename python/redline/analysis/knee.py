"""knee: where more load stops buying throughput, and the best operating point before it.

The knee is located with kneed's Kneedle (Satopää et al. 2011) on throughput against load: the
point of a concave increasing curve farthest from the line joining its ends. The operating
point is Kleinrock's: the step that maximises power, throughput ÷ latency, which is where
added load starts buying queueing instead of throughput.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Knee:
    """Knee is the load at the knee of throughput against load and the throughput there;
    both None when the curve has no knee (still linear, or too few points)."""

    load: float | None
    throughput_rps: float | None

    def to_dict(self) -> dict[str, Any]:
        """to_dict is the knee as the JSON result carries it."""
        return asdict(self)


def find_knee(load: Sequence[float], throughput: Sequence[float], sensitivity: float = 1.0) -> Knee:
    """find_knee locates the knee of ``throughput`` against ``load`` (at least three distinct
    loads; repeated loads are averaged). ``sensitivity`` is Kneedle's S: higher is more
    conservative."""
    from kneed import KneeLocator

    n = np.asarray(load, dtype=float)
    x = np.asarray(throughput, dtype=float)
    if n.shape != x.shape:
        raise ValueError("load and throughput must have the same length")
    levels = np.unique(n)
    if len(levels) < 3:
        return Knee(None, None)
    means = np.array([x[n == lv].mean() for lv in levels])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # kneed warns when there is no knee; None says it
        k = KneeLocator(
            levels, means, S=sensitivity, curve="concave", direction="increasing", online=True
        )
    if k.knee is None:
        return Knee(None, None)
    at = float(k.knee)
    return Knee(at, float(means[levels == at][0]))


def power(throughput_rps: float, latency_ms: float) -> float:
    """power is Kleinrock's power, throughput ÷ latency (req/s per ms); 0 without latency."""
    if latency_ms <= 0:
        return 0.0
    return throughput_rps / latency_ms


def best_power(throughput: Sequence[float], latency_ms: Sequence[float]) -> int | None:
    """best_power is the index of the point with the greatest power, None if there is none
    with a latency."""
    scores = [power(x, r) for x, r in zip(throughput, latency_ms, strict=True)]
    if not scores or max(scores) <= 0:
        return None
    return int(np.argmax(scores))
