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

from redline import _engine
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
        """histogram: the answered snapshots' latency histograms merged into one (encoded as
        the engine encodes them), None when one of them has none; merged once, since the
        figures and the bootstrap both read it."""
        hists = [s.get("histogram") for s in self.snapshots if int(s.get("requests") or 0) > 0]
        if not hists or not all(isinstance(h, str) and h for h in hists):
            return None
        return (
            str(hists[0]) if len(hists) == 1 else _engine.merge_histograms([str(h) for h in hists])
        )

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


def _percentiles(window: Window) -> dict[Figure, float | None]:
    """_percentiles reads the latency percentiles from the window's merged histogram;
    snapshots without histograms fall back to the request-weighted mean of their own
    percentiles (an approximation: a percentile of a whole is no average of its parts)."""
    answered = [s for s in window.snapshots if int(s.get("requests") or 0) > 0]
    if not answered:
        return {f: None for f in LATENCIES}
    merged = window.histogram
    if merged is not None:
        qs = [float(f.quantile or 0.0) for f in LATENCIES]
        count, values = _engine.histogram_quantiles(merged, qs)
        if count:
            return {f: v / 1000.0 for f, v in zip(LATENCIES, values, strict=True)}
        return {f: None for f in LATENCIES}
    return {f: _weighted(answered, f.snapshot_key) for f in LATENCIES}


def _weighted(snaps: Sequence[dict[str, Any]], key: str) -> float | None:
    """_weighted is the request-weighted mean of ``key`` over the snapshots that carry it."""
    pairs: list[tuple[int, float]] = []
    for s in snaps:
        v = s.get(key)
        if v is not None and math.isfinite(float(v)):
            pairs.append((int(s.get("requests") or 0), float(v)))
    n = sum(w for w, _ in pairs)
    return sum(w * x for w, x in pairs) / n if n else None
