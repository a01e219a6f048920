"""watch: thresholds with ``abort_on_fail``, judged during the run over a sliding window of
interval snapshots: ``p95<500ms;abort=10s`` stops the test once p95 has been over 500 ms in
every interval of the last 10 s ("p95 over 500 ms for 10 s stops the test").

Only run-wide figures are in the snapshots: ``p50 p90 p95 p99 p99.9 mean max``, ``errors``
(failed / (answered + failed) in the interval) and ``rps``; a ``NAME:`` threshold is judged
at the end only.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from redline.errors import ConfigError
from redline.options import parse_duration
from redline.scenario.thresholds import Threshold, parse

_SNAPSHOT_KEY = {
    "p50": "p50_ms",
    "p90": "p90_ms",
    "p95": "p95_ms",
    "p99": "p99_ms",
    "p99.9": "p99_9_ms",
    "mean": "mean_ms",
    "max": "max_ms",
}


@dataclass
class Watch:
    """Watch is one threshold judged live: it fires when it failed in every interval of the
    last ``window_s`` seconds (and at least that much of the run has been seen)."""

    threshold: Threshold
    window_s: float
    failing_since: float | None = None
    seen: deque[float] = field(default_factory=deque)

    def feed(self, snap: dict[str, Any], interval_s: float) -> str | None:
        """feed judges one interval snapshot; returns the abort line once the window fails."""
        if snap.get("warmup"):
            return None
        t = float(snap.get("t_s", 0.0))
        got = value(self.threshold, snap, interval_s)
        if got is None or self.threshold.holds(got):
            self.failing_since = None
            return None
        if self.failing_since is None:
            self.failing_since = t - interval_s
        if t - self.failing_since >= self.window_s - 1e-9:
            return (
                f"threshold {self.threshold.text} failed for {self.window_s:g} s "
                f"(at {t:.1f} s): the run was stopped"
            )
        return None


def value(t: Threshold, snap: dict[str, Any], interval_s: float) -> float | None:
    """value: the figure a threshold judges in one snapshot (None: nothing to judge)."""
    requests, errors = int(snap.get("requests", 0)), int(snap.get("errors", 0))
    if t.metric == "errors":
        n = requests + errors
        return errors / n if n else None
    if t.metric == "rps":
        return requests / interval_s if interval_s > 0 else None
    if requests == 0:
        return None
    key = _SNAPSHOT_KEY.get(t.metric)
    return None if key is None or key not in snap else float(snap[key])


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
    if t.name is not None:
        raise ConfigError(f"bad threshold {spec!r}: abort judges run-wide figures only (no NAME:)")
    if t.metric not in _SNAPSHOT_KEY and t.metric not in ("errors", "rps"):
        raise ConfigError(f"bad threshold {spec!r}: {t.metric} is not in the live snapshots")
    w = parse_duration(window, "abort window")
    if w <= 0:
        raise ConfigError(f"bad threshold {spec!r}: the abort window must be > 0")
    return t, Watch(t, w)
