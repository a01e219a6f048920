"""watching: a run's watched parts (``--watch NAME=SPEC`` on ``redline run`` and scenario runs,
``watch=`` of :func:`redline.run`): started before the load, stopped after it, and kept in the
result's ``parts``, each part's samples a second and its figures over the whole run, on the
run's clock (``t_s``: seconds since the load started, as the intervals'); and each
interval's snapshot, and the result's timeseries, carry each part's figures over that
interval (``parts``), which the live page and the report chart on the load's time axis."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from redline.runs.result import Result

if TYPE_CHECKING:
    from redline.service.parts import Parts


def start_parts(watch: Sequence[str]) -> Parts | None:
    """start_parts parses the ``--watch`` specs (a mistake is a ConfigError before any load)
    and starts watching them now, the run's origin; None without any."""
    if not watch:
        return None
    # Imported here: the parts' psutil and monitors are CPU every run's start would pay, and
    # a run without --watch never uses them.
    from redline.service.parts import Parts

    parts = Parts.parse(list(watch))
    return parts.start() if parts is not None else None


def with_parts(result: Result, parts: Parts | None) -> Result:
    """with_parts stops ``parts`` and keeps them in ``result.data["parts"]``: ``specs`` (each
    part's SPECs), ``series`` (each part's samples) and ``over_run`` (each figure's mean over
    the run, the keys a search's steps have)."""
    if parts is None:
        return result
    parts.stop()
    until = time.monotonic() - parts.origin
    rows = result.data.get("timeseries") or []
    ends = [float(r.get("t_s") or 0.0) for r in rows]
    for row, figures in zip(rows, parts.intervals(ends), strict=True):
        row["parts"] = figures
    result.data["parts"] = {
        "specs": parts.specs(),
        "series": parts.series(),
        "over_run": parts.window(0.0, until),
    }
    return result


def interval_parts(parts: Parts, t0: float, t1: float) -> dict[str, dict[str, float]]:
    """interval_parts: each part's figures over the interval (t0, t1] of the run's clock,
    the means of its samples in it; a part with no sample in it (an interval shorter than
    the sampling's) is left out."""
    return parts.intervals([t1], start=t0)[0]


def with_interval_parts(
    parts: Parts | None, progress: Callable[[dict[str, Any]], None] | None
) -> Callable[[dict[str, Any]], None] | None:
    """with_interval_parts is ``progress`` hearing each snapshot with its interval's
    ``parts`` (:func:`interval_parts`); ``progress`` itself without parts."""
    if parts is None or progress is None:
        return progress
    last = [0.0]

    def heard(snap: dict[str, Any]) -> None:
        t1 = float(snap.get("t_s") or 0.0)
        snap["parts"] = interval_parts(parts, last[0], t1)
        last[0] = t1
        progress(snap)

    return heard
