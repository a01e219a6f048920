"""watched: the deployment's watched parts in a search's result document (``parts``: how
each was watched and its samples, the generator's among them) and the part that owns the
``--backlog`` gauge, which the bottleneck names when the backlog is what ran out."""

from __future__ import annotations

from typing import Any

from redline.find.live_run import LiveRun
from redline.service.parts import Parts


def watched_document(parts: Parts | None, live: LiveRun, backlog: str | None) -> dict[str, Any]:
    """watched_document is the result's ``parts``: ``specs`` (each part's ``--watch`` specs),
    ``series`` (each part's samples a second, and the generator's busy and waiting shares per
    interval) and ``backlog_part`` (the watched part whose exporter serves ``backlog``)."""
    specs = parts.specs() if parts is not None else {}
    series = parts.series() if parts is not None else {}
    series["generator"] = live.generator_series()
    owner = None
    if backlog is not None:
        url = backlog.removeprefix("prometheus:").partition("#")[0]
        owner = next((name for name, given in specs.items() if f"prometheus:{url}" in given), None)
    return {"specs": specs, "series": series, "backlog_part": owner}
