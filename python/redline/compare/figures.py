"""figures: the figures a comparison judges, and which way each one gets worse."""

from __future__ import annotations

from enum import Enum

from redline.percentiles import BY_NAME, snapshot_key


class Figure(Enum):
    """Figure is one compared figure. Its value is how ``--fail-on`` spells it."""

    RPS = "rps"
    ERRORS = "errors"
    P50 = "p50"
    P90 = "p90"
    P99 = "p99"
    P99_9 = "p99.9"

    @property
    def quantile(self) -> float | None:
        """quantile: the latency quantile (0..1) this figure reads, None for rps and errors."""
        p = BY_NAME.get(self.value)
        return None if p is None else p.quantile

    @property
    def snapshot_key(self) -> str:
        """snapshot_key: the interval snapshot's field of a latency figure (KeyError for rps
        and errors)."""
        return snapshot_key(self.value)

    @property
    def higher_is_better(self) -> bool:
        """higher_is_better: True for throughput; latency and errors improve downwards."""
        return self is Figure.RPS

    @property
    def relative(self) -> bool:
        """relative: the change is a ratio (new / base - 1); the error rate, often 0, changes
        by percentage points instead (0 % -> 0.3 % is no ratio)."""
        return self is not Figure.ERRORS

    @property
    def label(self) -> str:
        """label: the figure as the tables name it."""
        return _LABELS[self]

    @property
    def unit(self) -> str:
        """unit: what the figure's values are in."""
        if self is Figure.RPS:
            return "req/s"
        return "" if self is Figure.ERRORS else "ms"


_LABELS = {
    Figure.RPS: "goodput",
    Figure.ERRORS: "error rate",
    Figure.P50: "p50",
    Figure.P90: "p90",
    Figure.P99: "p99",
    Figure.P99_9: "p99.9",
}

#: LATENCIES are the latency figures, in the order the tables list them.
LATENCIES = (Figure.P50, Figure.P90, Figure.P99, Figure.P99_9)

#: ALL is every figure, in table order.
ALL = (Figure.RPS, Figure.ERRORS, *LATENCIES)


def parse_figure(text: str) -> Figure:
    """parse_figure reads a figure's name (``rps``, ``errors``, ``p50`` … ``p99.9``; ``p999``
    and ``p99_9`` also name p99.9); ValueError names the known ones."""
    t = text.strip().lower()
    t = {"p999": "p99.9", "p99_9": "p99.9", "goodput": "rps", "error_rate": "errors"}.get(t, t)
    for f in Figure:
        if f.value == t:
            return f
    known = ", ".join(f.value for f in Figure)
    raise ValueError(f"unknown figure {text!r} (known: {known})")
