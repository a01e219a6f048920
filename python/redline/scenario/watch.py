"""watch: thresholds with ``abort_on_fail``, judged during the run over a sliding window of
interval snapshots: ``p95<500ms;abort=10s`` stops the test once the p95 of the last 10 s, taken
as a whole, is over 500 ms ("p95 over 500 ms for 10 s stops the test").

The window is judged as one stretch of run, not interval by interval: a window whose intervals
are half fast and half very slow has a failing p95 although some of its intervals pass, and
judging each interval alone would never stop it. So percentiles come from the merged
histograms of the window's intervals (each snapshot ships its interval's HdrHistogram), the
mean is request-weighted, the max is the largest, ``errors`` is failed outcomes over all
outcomes summed over the window and ``rps`` is the answered requests over the window's length.

Run-wide, the snapshots give ``p50 p90 p95 p99 p99.9 mean max``, ``errors`` and ``rps``. A
scenario's snapshots also carry each request name's counts and histogram, so a ``NAME:``
threshold on a percentile, ``errors`` or ``rps`` is judged live too (``submit:p95<300ms;abort=
10s``); a name the run does not have (a group's name included: groups are judged at the end
only) is a ConfigError at its first interval. ``errors`` is
failed outcomes ÷ all outcomes, each request once (:mod:`redline.analysis.outcome`): an
answer with a bad status or a failed check is in the engine's ``requests`` and its
``errors`` both, and was counted twice.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from redline import window
from redline.errors import ConfigError
from redline.runs.options import parse_duration
from redline.scenario.thresholds import QUANTILE, SNAPSHOT_KEY, Threshold, parse

#: _PER_NAME: what a NAME: threshold can judge live (a name's part of a snapshot has counts
#: and a histogram, no mean or max of its own).
_PER_NAME = (*QUANTILE, "errors", "rps")
_EPS = 1e-9


@dataclass
class Watch:
    """Watch is one threshold judged live over the last ``window_s`` seconds of run: it fires
    once that much non-warm-up run has been seen and the window's figure fails.

    It keeps the window's snapshots (at most window / interval of them, the interval being
    at least 50 ms) and re-merges their histograms when a percentile is judged: HdrHistograms
    add but do not subtract, so the interval leaving the window cannot be taken out of a
    running total."""

    threshold: Threshold
    window_s: float
    start_s: float | None = None
    window: deque[dict[str, Any]] = field(default_factory=deque)

    def feed(self, snap: dict[str, Any], interval_s: float) -> str | None:
        """feed adds one interval snapshot to the window; returns the abort line once the
        full window's figure fails."""
        if snap.get("warmup"):
            return None
        if self.threshold.name is not None:
            snap = self._named(snap)
        t = float(snap.get("t_s", 0.0))
        if self.start_s is None:
            self.start_s = t - interval_s
        self.window.append(snap)
        while self.window and float(self.window[0].get("t_s", 0.0)) <= t - self.window_s + _EPS:
            self.window.popleft()
        if t - self.start_s < self.window_s - _EPS:
            return None
        got = value(self.threshold, list(self.window), self.window_s)
        if got is None or self.threshold.holds(got):
            return None
        return (
            f"threshold {self.threshold.text} failed over the last {self.window_s:g} s "
            f"({self.threshold.judged} {shown(self.threshold.metric, got)} at {t:.1f} s): "
            "the run was stopped"
        )

    def _named(self, snap: dict[str, Any]) -> dict[str, Any]:
        """_named is the threshold's request name's part of a snapshot, as a snapshot of its
        own (its time, counts and histogram)."""
        name = self.threshold.name
        names = snap.get("names")
        if not isinstance(names, dict):
            raise ConfigError(
                f"bad threshold {self.threshold.text!r}: this run's snapshots have no request"
                " names (a URL run, or an engine without per-name figures)"
            )
        part = names.get(name)
        if not isinstance(part, dict):
            known = ", ".join(sorted(names))
            raise ConfigError(
                f"threshold {self.threshold.text!r}: no request name {name!r} (names: {known};"
                " a group is judged at the end only, without ;abort=)"
            )
        return {**part, "t_s": snap.get("t_s", 0.0)}


def value(t: Threshold, snaps: list[dict[str, Any]], window_s: float) -> float | None:
    """value: the figure a threshold judges over the window's snapshots (None: nothing to
    judge, e.g. a latency with no response in the window)."""
    requests = sum(int(s.get("requests", 0)) for s in snaps)
    if t.metric == "errors":
        # Imported here: the analysis package loads numpy and scipy, which the CLI's start-up
        # does without (tests/test_startup.py).
        from redline.analysis.outcome import Outcomes, outcomes

        ends = sum(
            (
                outcomes(s.get("requests", 0), s.get("errors", 0), s.get("errors_by_class"))
                for s in snaps
            ),
            Outcomes(),
        )
        return ends.error_rate if ends.total else None
    if t.metric == "rps":
        return requests / window_s if window_s > 0 else None
    if t.figure is not None:
        # A stream figure's part of each snapshot reads as a snapshot of its own.
        snaps = window.stream_figure(snaps, t.figure)
    got = window.answered(snaps)
    if not got:
        return None
    if t.metric == "max":
        return max(float(s.get("max_ms", 0.0)) for s in got)
    if t.metric == "mean":
        return window.weighted(got, "mean_ms")
    read = window.percentiles(got, [(QUANTILE[t.metric], SNAPSHOT_KEY[t.metric])])
    return read[0] if read else None


def shown(metric: str, got: float) -> str:
    """shown writes a judged figure as the abort line says it."""
    if metric == "errors":
        return f"{got:.2%}"
    if metric == "rps":
        return f"{got:.1f}"
    return f"{got:.1f} ms"


def split(spec: str) -> tuple[Threshold, Watch | None]:
    """split reads ``SPEC`` or ``SPEC;abort=WINDOW`` into the threshold and its live watch."""
    text, sep, opt = spec.partition(";")
    t = parse(text)
    if not sep:
        return t, None
    key, eq, window = opt.partition("=")
    if key.strip() != "abort" or not eq:
        raise ConfigError(
            f"bad threshold {spec!r}: the only option is ;abort=WINDOW, e.g. ;abort=10s"
        )
    if t.name is not None and t.metric not in _PER_NAME:
        raise ConfigError(
            f"bad threshold {spec!r}: a request name's live figures are"
            f" {', '.join(_PER_NAME)}; {t.metric} is judged at the end only"
        )
    if t.metric not in SNAPSHOT_KEY and t.metric not in ("errors", "rps"):
        raise ConfigError(f"bad threshold {spec!r}: {t.metric} is not in the live snapshots")
    w = parse_duration(window, "abort window")
    if w <= 0:
        raise ConfigError(f"bad threshold {spec!r}: the abort window must be > 0")
    return t, Watch(t, w)
