"""progress: the live view of a run. A rich status line on a terminal, one plain line per
interval otherwise (logs, CI), both fed by the same per-interval snapshots."""

from __future__ import annotations

import sys
from typing import IO, Any

from redline.units import fmt_count, fmt_ms


def describe(s: dict[str, Any]) -> str:
    """describe renders one interval snapshot as a single line."""
    line = (
        f"t={s.get('t_s', 0):6.1f}s  req/s={fmt_count(s.get('achieved_rate') or 0):>7}  "
        f"p50={fmt_ms(s.get('p50_ms', 0)):>8}  p99={fmt_ms(s.get('p99_ms', 0)):>8}  "
        f"max={fmt_ms(s.get('max_ms', 0)):>8}  errors={s.get('errors', 0)}  "
        f"conns={s.get('active_connections', 0)}"
    )
    if s.get("intended_rate"):
        line += (
            f"  intended={fmt_count(s['intended_rate'])}/s lag={fmt_ms(s.get('send_lag_ms', 0))}"
        )
    if s.get("warmup"):
        line += "  (warm-up)"
    return line


class PlainProgress:
    """PlainProgress prints one line per interval to a stream (default stderr)."""

    def __init__(self, stream: IO[str] | None = None):
        self.stream = stream or sys.stderr

    def __call__(self, snapshot: dict[str, Any]) -> None:
        print(describe(snapshot), file=self.stream, flush=True)

    def close(self) -> None:
        """close ends the view (nothing to do for plain lines)."""


class LiveProgress:
    """LiveProgress keeps one updating status line on a terminal (rich)."""

    def __init__(self, stream: IO[str] | None = None):
        from rich.console import Console
        from rich.live import Live

        self._live = Live(
            "starting...",
            console=Console(file=stream or sys.stderr),
            transient=True,
            auto_refresh=False,
        )
        self._live.start()

    def __call__(self, snapshot: dict[str, Any]) -> None:
        self._live.update(describe(snapshot), refresh=True)

    def close(self) -> None:
        """close removes the status line before the summary is printed."""
        self._live.stop()


def for_stream(stream: IO[str] | None = None) -> PlainProgress | LiveProgress:
    """for_stream picks the live view on a TTY and plain lines elsewhere."""
    stream = stream or sys.stderr
    if stream.isatty():
        return LiveProgress(stream)
    return PlainProgress(stream)
