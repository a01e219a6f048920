"""windows: a stretch of run cut into windows, and each window's figures.

Requests within a run are autocorrelated (a GC pause or a noisy neighbour slows many in a row),
so single requests are not independent samples. Windows of several seconds are nearly so: each
is a sample of the figure (its goodput, error rate, percentiles), and the comparison tests two
runs' window samples against each other. A window's percentiles come from the merged
HdrHistograms of its intervals (an average of interval p99s is not the window's p99).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from redline import window
from redline.compare.counting import outcomes
from redline.compare.figures import LATENCIES, Figure

#: WINDOW_S is the window length aimed at, in seconds.
WINDOW_S = 5.0

#: WANTED_WINDOWS: a stretch too short for this many windows of WINDOW_S gets shorter ones
#: (down to one interval), since the test needs samples more than it needs long windows.
WANTED_WINDOWS = 8


@dataclass
class Stretch:
    """Stretch is one measured part of a result (a whole run after warm-up, a search step):
    its interval ``snapshots`` in time order (the engine's, see result.schema.json), and the
    ``totals`` to show when there are no snapshots to judge (a request name, whose figures
    the engine keeps for the whole run only): figure -> value."""

    snapshots: list[dict[str, Any]] = field(default_factory=list)
    totals: dict[Figure, float | None] = field(default_factory=dict)

    @cached_property
    def interval_s(self) -> float:
        """interval_s: the snapshots' interval, the median gap between them (the last one of
        a run is often short); worked out once, the snapshots being fixed."""
        ts = [float(s["t_s"]) for s in self.snapshots]
        gaps = [b - a for a, b in zip(ts, ts[1:], strict=False) if b > a]
        return statistics.median(gaps) if gaps else 1.0

    @property
    def span_s(self) -> float:
        """span_s: the wall time the snapshots cover."""
        if not self.snapshots:
            return 0.0
        first, last = float(self.snapshots[0]["t_s"]), float(self.snapshots[-1]["t_s"])
        return last - first + self.interval_s


def window_length(a: Stretch, b: Stretch, target_s: float = WINDOW_S) -> float:
    """window_length is the window both stretches are cut into: a whole number of intervals
    near ``target_s``, fewer so the shorter stretch gives WANTED_WINDOWS, at least one."""
    interval = max(a.interval_s, b.interval_s)
    span = min(a.span_s, b.span_s)
    k = max(1, math.floor(min(target_s, span / WANTED_WINDOWS) / interval + 1e-9))
    return k * interval


@dataclass
class Window:
    """Window is a run of consecutive snapshots and the ``seconds`` they cover: a window of a
    stretch, or a whole stretch taken as one."""

    snapshots: Sequence[dict[str, Any]]
    seconds: float

    @cached_property
    def histogram(self) -> str | None:
        """histogram: the window's merged latency histogram
        (:func:`redline.window.merged_histogram`), merged once, since the figures and the
        bootstrap both read it."""
        return window.merged_histogram(self.snapshots)

    def figures(self) -> dict[Figure, float | None]:
        """figures: goodput, error rate and latency percentiles (None when nothing was
        answered)."""
        o = outcomes(self.snapshots, self.seconds)
        out: dict[Figure, float | None] = {Figure.RPS: o.goodput, Figure.ERRORS: o.error_rate}
        out.update(_percentiles(self))
        return out


def figures(snapshots: Sequence[dict[str, Any]], seconds: float) -> dict[Figure, float | None]:
    """figures: goodput, error rate and latency percentiles of snapshots covering
    ``seconds`` (percentiles None when nothing was answered)."""
    return Window(snapshots, seconds).figures()


def cut(stretch: Stretch, window_s: float) -> list[Window]:
    """cut cuts the stretch into consecutive whole windows of about ``window_s`` (a whole
    number of intervals); a short tail is left out."""
    k = max(1, round(window_s / stretch.interval_s))
    snaps = stretch.snapshots
    out = []
    for i in range(0, len(snaps) - k + 1, k):
        part = snaps[i : i + k]
        start = float(snaps[i - 1]["t_s"]) if i > 0 else float(part[0]["t_s"]) - stretch.interval_s
        seconds = float(part[-1]["t_s"]) - start
        if seconds < 0.5 * k * stretch.interval_s:
            continue  # a run's last, cut-short interval
        out.append(Window(part, seconds))
    return out


def windows(stretch: Stretch, window_s: float) -> list[dict[Figure, float | None]]:
    """windows: the figures of each of the stretch's windows (:func:`cut`)."""
    return [w.figures() for w in cut(stretch, window_s)]


def whole(stretch: Stretch) -> dict[Figure, float | None]:
    """whole: the stretch's figures taken as one (its totals when it has no snapshots)."""
    if not stretch.snapshots:
        return dict(stretch.totals)
    return figures(stretch.snapshots, stretch.span_s)


def _percentiles(w: Window) -> dict[Figure, float | None]:
    """_percentiles reads the latency percentiles over the window
    (:func:`redline.window.percentiles`); None when nothing was answered."""
    wanted = [(float(f.quantile or 0.0), f.snapshot_key) for f in LATENCIES]
    got = window.percentiles(w.snapshots, wanted, w.histogram)
    return dict(zip(LATENCIES, got or [None] * len(LATENCIES), strict=True))
