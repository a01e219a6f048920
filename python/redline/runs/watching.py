"""watching: a run's watched parts (``--watch NAME=SPEC`` on ``redline run`` and scenario runs,
``watch=`` of :func:`redline.run`): started before the load, stopped after it, and kept in the
result's ``parts``, each part's samples a second and its figures over the whole run, on the
run's clock (``t_s``: seconds since the load started, as the intervals')."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

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
    result.data["parts"] = {
        "specs": parts.specs(),
        "series": parts.series(),
        "over_run": parts.window(0.0, until),
    }
    return result
