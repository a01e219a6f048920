"""intervals: the run's interval snapshots as newline-delimited JSON, one line an interval as
it ends (k6's ``--out json=FILE``), for a log shipper, ``jq`` or a plot of one's own. A line is
the snapshot the live view gets (docs/schema/result.schema.json, ``timeseries`` items)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import IO, Any

from redline.errors import ConfigError


def parse_out(spec: str) -> str:
    """parse_out reads ``--out json=FILE`` (``-``: stdout) and returns FILE."""
    kind, sep, path = spec.partition("=")
    if kind != "json" or not sep or not path:
        raise ConfigError(
            f"--out: expected json=FILE (NDJSON of the intervals; - for stdout), got {spec!r}"
        )
    return path


class IntervalLog:
    """IntervalLog writes each snapshot it is given as one JSON line, flushed at once."""

    def __init__(self, path: str):
        self._own = path != "-"
        try:
            self._stream: IO[str] = open(path, "w") if self._own else sys.stdout  # noqa: SIM115
        except OSError as e:
            raise ConfigError(f"--out: cannot write {path!r}: {e.strerror or e}") from None

    def __call__(self, snapshot: dict[str, Any]) -> None:
        self._stream.write(json.dumps(snapshot, separators=(",", ":")) + "\n")
        self._stream.flush()

    def close(self) -> None:
        """close closes the file (not stdout)."""
        if self._own:
            self._stream.close()


def tee(
    first: Callable[[dict[str, Any]], None] | None, log: IntervalLog | None
) -> Callable[[dict[str, Any]], None] | None:
    """tee: a progress callback that feeds ``first`` (if any) and then ``log`` (if any)."""
    if log is None:
        return first
    if first is None:
        return log

    def both(snapshot: dict[str, Any]) -> None:
        first(snapshot)
        log(snapshot)

    return both
