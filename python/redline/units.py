"""Human formatting of times, sizes and rates, wrk style (``1.23ms``, ``4.28MB``, ``1.44k``)."""

from __future__ import annotations

import math


def fmt_ms(ms: float) -> str:
    """fmt_ms renders a latency given in milliseconds with a fitting unit."""
    if ms is None or math.isnan(ms):
        return "-"
    if ms < 1.0:
        return f"{ms * 1000:.0f}us"
    if ms < 1000.0:
        return f"{ms:.2f}ms"
    if ms < 60_000.0:
        return f"{ms / 1000:.2f}s"
    return f"{ms / 60_000:.2f}m"


def fmt_bytes(n: float) -> str:
    """fmt_bytes renders a byte count in B, KB, MB or GB (binary multiples, as wrk does)."""
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1024.0 or unit == "GB":
            return f"{n:.2f}{unit}" if unit != "B" else f"{n:.0f}B"
        n /= 1024.0
    return f"{n:.2f}TB"  # pragma: no cover


def fmt_count(n: float) -> str:
    """fmt_count renders a rate or count compactly (``980``, ``1.44k``, ``2.10M``)."""
    if abs(n) < 1000:
        return f"{n:.2f}".rstrip("0").rstrip(".") if n != int(n) else f"{int(n)}"
    if abs(n) < 1_000_000:
        return f"{n / 1000:.2f}k"
    return f"{n / 1_000_000:.2f}M"
