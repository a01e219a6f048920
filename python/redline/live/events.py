"""events: what the live page is sent, built from the same data and chart code as the report.

Event types (server-sent events, JSON data):

- ``state``: first on every stream, the whole picture so far (so a browser that joins late,
  or reconnects, misses nothing): ``kind``, ``title``, ``model``, ``status``, ``last``
  (the latest ``interval``'s fields), ``steps`` and every chart in full.
- ``interval``: one per interval snapshot: the snapshot's figures (``t_s``, ``warmup``,
  ``requests``, ``errors``, ``errors_by_class``, ``p50_ms`` ... ``max_ms``,
  ``achieved_rate``, ``intended_rate``, ``active_connections``, ``in_flight`` ...), the
  run's ``totals`` so far (the exporter's books), the search's ``phase`` and ``load`` (find),
  the monitored service's latest ``service`` reading, ``names``: the per-name table (rows of
  ``name``, ``requests``, ``errors``, ``errors_by_class``, ``p50_ms``, ``p95_ms``,
  ``p99_ms``, the run so far; :meth:`redline.live.metrics.Ledger.table`), and ``charts``:
  patches.
- ``step``: a search step as judged (``index``, ``phase``, ``load``, ``throughput_rps``,
  ``p50_ms``, ``p99_ms``, ``error_rate``, ``ok``, ``fired``, ``why`` ...).
- ``status``: ``{"status": "stopping"}`` once the stop button was pressed.
- ``done``: the run ended: ``status`` (``done``, ``stopped``, or ``failed`` with its
  one-line ``error``: a run ``redline ui`` could not start), the final ``totals``,
  ``names`` (the per-name table with the report's own figures, :func:`final_names`) and
  ``report`` (the final report's URL, or None).

A chart patch is ``{"id", "start", "cols"}``: the chart's columns from row ``start`` on
(earlier rows unchanged), plus ``spec`` (the chart without its data, as
:meth:`redline.report.charts.Chart.to_dict` gives it) when the chart is new or its series
changed. The charts are :func:`redline.report.charts.run_charts` /
:func:`~redline.report.charts.find_charts` of the run so far, exactly as the report draws
them; patches keep each event small however long the run (a whole chart each interval would
make a 20-minute search's stream grow quadratically).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from redline.report.charts import Chart, Column

#: Snapshot fields the page is not sent as they are: the encoded histograms are for the
#: exporter, and ``names`` is sent as the ledger's table.
_UNSENT = ("histogram", "names")


def figures(snap: dict[str, Any]) -> dict[str, Any]:
    """figures is a snapshot as the page is sent it."""
    return {k: v for k, v in snap.items() if k not in _UNSENT}


def final_names(run: dict[str, Any], live: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """final_names is the per-name table at the end: the report's ``per_name`` figures
    (requests, errors, p50/p95/p99, tally), in the live table's order, with the live table's
    ``errors_by_class`` (the report has no classes per name). Without a ``per_name``
    (a run that never started), the live table as it stands."""
    per_name = run.get("per_name")
    if not isinstance(per_name, dict) or not per_name:
        return list(live)
    classes = {row["name"]: row.get("errors_by_class", {}) for row in live}
    order = [row["name"] for row in live if row["name"] in per_name]
    order += [n for n in per_name if n not in order]
    rows = []
    for name in order:
        figures_ = per_name[name]
        lat = figures_.get("latency_ms") or {}
        rows.append(
            {
                "name": name,
                "requests": figures_.get("requests", 0),
                "errors": figures_.get("errors", 0),
                "errors_by_class": classes.get(name, {}),
                "p50_ms": lat.get("p50"),
                "p95_ms": lat.get("p95"),
                "p99_ms": lat.get("p99"),
                "tally": figures_.get("tally") or {},
            }
        )
    return rows


def step_fields(step: Any) -> dict[str, Any]:
    """step_fields is a judged step (a search Step, or its dict) as the page is sent it."""
    d: dict[str, Any] = step.to_dict() if hasattr(step, "to_dict") else dict(step)
    return d


class ChartBook:
    """ChartBook remembers each chart as last sent, to send only what changed."""

    def __init__(self) -> None:
        self._sent: dict[str, tuple[dict[str, Any], list[Column]]] = {}

    def patch(self, charts: Sequence[Chart]) -> list[dict[str, Any]]:
        """patch is the patches that bring the sent charts to ``charts``, and remembers them."""
        out = []
        for chart in charts:
            spec = chart.to_dict()
            data: list[Column] = spec.pop("data")
            prev = self._sent.get(chart.id)
            if prev is None or prev[0] != spec:
                out.append({"id": chart.id, "spec": spec, "start": 0, "cols": data})
            else:
                start = first_change(prev[1], data)
                if start is not None:
                    out.append({"id": chart.id, "start": start, "cols": [c[start:] for c in data]})
            self._sent[chart.id] = (spec, data)
        return out

    def full(self) -> list[dict[str, Any]]:
        """full is every chart as sent so far, whole (for a new watcher)."""
        return [
            {"id": cid, "spec": spec, "start": 0, "cols": data}
            for cid, (spec, data) in self._sent.items()
        ]


def first_change(old: Sequence[Column], new: Sequence[Column]) -> int | None:
    """first_change is the first row where ``new``'s columns differ from ``old``'s (None
    when equal); the usual case, rows appended, costs one list comparison a column."""
    n_old = len(old[0]) if old else 0
    n_new = len(new[0]) if new else 0
    if len(old) == len(new) and all(o == c[:n_old] for o, c in zip(old, new, strict=True)):
        return None if n_new == n_old else n_old
    if len(old) != len(new):
        return 0
    for i in range(min(n_old, n_new)):
        if any(o[i] != c[i] for o, c in zip(old, new, strict=True)):
            return i
    return min(n_old, n_new)
