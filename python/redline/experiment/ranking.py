"""ranking: the configurations' searches side by side, compared, and the best of them.

The verdicts are :mod:`redline.compare`'s: each configuration against the one before it (in
the order ``--vary`` listed them), and the best against the runner-up, on the searches'
interval data (the steady state's windows: goodput, errors and latency; the optimal and limit
steps'). With ``--repeat`` a configuration's repeats are laid end to end into one stretch per
answer, so the test sees every repeat's windows; its figures in the table are the median
repeat's, and ``spread`` says how far the repeats fell apart.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Sequence
from typing import Any

from redline.compare import Comparison, Document, Figure, Stretch, Verdict
from redline.compare import compare as compare_documents
from redline.compare import read as read_document
from redline.compare.documents import LIMIT, OPTIMAL, STEADY
from redline.compare.tables import shown

#: SPREAD: the figures whose spread over repeats the document keeps, and where each is read.
SPREAD = {
    "steady_state_throughput_rps": ("steady_state_throughput_rps",),
    "p99_ms": ("latency_ms", "p99"),
    "limit_throughput_rps": ("limit", "throughput_rps"),
}


@dataclasses.dataclass
class Ranked:
    """Ranked is one configuration's searches: its ``label`` and ``vary`` values, and the
    find ``results`` of its repeats, in the order they ran."""

    label: str
    vary: dict[str, str]
    results: list[dict[str, Any]]

    @property
    def usable(self) -> list[dict[str, Any]]:
        """usable: the repeats that ran to their end (not interrupted)."""
        return [r for r in self.results if not r.get("interrupted")]

    @property
    def representative(self) -> int | None:
        """representative: the index of the median repeat by steady-state throughput (the
        lower median of an even count), None when no repeat has one."""
        scored = [
            (x, i)
            for i, r in enumerate(self.results)
            if not r.get("interrupted")
            and (x := _at(r["answers"], SPREAD["steady_state_throughput_rps"])) is not None
        ]
        if not scored:
            return None
        scored.sort()
        return scored[(len(scored) - 1) // 2][1]

    @property
    def throughput(self) -> float | None:
        """throughput: the median repeat's steady-state throughput."""
        i = self.representative
        if i is None:
            return None
        return _at(self.results[i]["answers"], SPREAD["steady_state_throughput_rps"])

    @property
    def p99(self) -> float | None:
        """p99: the median repeat's steady-state p99 (ms)."""
        i = self.representative
        return None if i is None else _at(self.results[i]["answers"], SPREAD["p99_ms"])

    def spread(self) -> dict[str, dict[str, float] | None]:
        """spread: each SPREAD figure's min, median and max over the usable repeats."""
        out: dict[str, dict[str, float] | None] = {}
        for name, path in SPREAD.items():
            xs = [x for r in self.usable if (x := _at(r["answers"], path)) is not None]
            out[name] = (
                {"min": min(xs), "median": statistics.median(xs), "max": max(xs)} if xs else None
            )
        return out

    def document(self) -> Document | None:
        """document: the configuration as compare reads a find result: the median repeat,
        with each answer's stretch laid end to end over every usable repeat."""
        i = self.representative
        if i is None:
            return None
        doc = read_document(self.results[i], self.label.replace("/", "\u2215"))
        parts = [read_document(r, self.label).stretches for r in self.usable]
        pooled = {}
        for group in (STEADY, OPTIMAL, LIMIT):
            pieces = [p[group] for p in parts if group in p and p[group].snapshots]
            if pieces:
                pooled[group] = end_to_end(pieces)
        return dataclasses.replace(doc, stretches=pooled)


def end_to_end(parts: Sequence[Stretch]) -> Stretch:
    """end_to_end lays stretches of separate runs one after the other on one clock (each
    starts an interval after the last ended), so their windows are cut and tested as one
    sample."""
    if len(parts) == 1:
        return parts[0]
    snaps: list[dict[str, Any]] = []
    for p in parts:
        first = float(p.snapshots[0]["t_s"])
        shift = float(snaps[-1]["t_s"]) + p.interval_s - first if snaps else 0.0
        snaps += [{**s, "t_s": float(s["t_s"]) + shift} for s in p.snapshots]
    return Stretch(snaps)


def compare(base: Ranked, new: Ranked, window_s: float) -> Comparison | None:
    """compare judges ``new`` against ``base`` (None when either has no steady state)."""
    a, b = base.document(), new.document()
    if a is None or b is None:
        return None
    return compare_documents(a, b, window_s)


def comparison_record(c: Comparison | None, base: Ranked, new: Ranked) -> dict[str, Any]:
    """comparison_record: a comparison as the JSON's ``comparisons`` keeps it: the headline
    verdict (steady-state goodput), the throughput ratio, the p99 verdict, a sentence, and
    every row."""
    rps = c.row(Figure.RPS, STEADY) if c is not None else None
    p99 = c.row(Figure.P99, STEADY) if c is not None else None
    return {
        "base": base.label,
        "new": new.label,
        "verdict": rps.verdict.value if rps is not None else Verdict.UNKNOWN.value,
        "throughput_ratio": _ratio(rps.base, rps.new) if rps is not None else None,
        "p99_verdict": p99.verdict.value if p99 is not None else Verdict.UNKNOWN.value,
        "text": sentence(c, base, new),
        "rows": [
            {
                "group": r.group,
                "figure": r.figure.value,
                "base": r.base,
                "new": r.new,
                "change": r.change,
                "p": r.p,
                "verdict": r.verdict.value,
                "windows": list(r.evidence.n),
            }
            for r in (c.rows if c is not None else [])
        ],
    }


def sentence(c: Comparison | None, base: Ranked, new: Ranked) -> str:
    """sentence: the comparison in words, e.g. "workers=2: 1.8x the throughput of
    workers=1 (412/s against 229/s) at the same p99, significant (p=0.001)"."""
    rps = c.row(Figure.RPS, STEADY) if c is not None else None
    if rps is None or rps.base is None or rps.new is None:
        return f"{new.label}: not compared with {base.label} (a search without a steady state)"
    ratio = _ratio(rps.base, rps.new)
    times = f"{ratio:.2g}\u00d7" if ratio is not None else "?"
    figures = f"({shown(Figure.RPS, rps.new)} against {shown(Figure.RPS, rps.base)})"
    if rps.verdict is Verdict.UNKNOWN:
        return (
            f"{new.label}: {times} the throughput of {base.label} {figures}, not judged:"
            " too few windows (confirm longer)"
        )
    if rps.verdict is Verdict.SAME:
        return f"{new.label}: no significant change over {base.label} {figures}"
    p = f"p={rps.p:.2g}" if rps.p is not None else ""
    return (
        f"{new.label}: {times} the throughput of {base.label} {figures}{_p99_words(c)},"
        f" significant ({p})"
    )


def _p99_words(c: Comparison | None) -> str:
    row = c.row(Figure.P99, STEADY) if c is not None else None
    if row is None or row.verdict is Verdict.UNKNOWN:
        return ""
    if row.verdict is Verdict.SAME:
        return " at the same p99"
    return (
        f" with p99 {row.verdict.value} ({shown(Figure.P99, row.base)} ->"
        f" {shown(Figure.P99, row.new)})"
    )


def best(ranked: Sequence[Ranked], window_s: float) -> dict[str, Any] | None:
    """best: the configuration with the most steady-state throughput (the search's answer
    under the SLOs and the error limit; ties go to the lower p99), with the verdict of the
    comparison against the runner-up. None when no configuration has a steady state."""
    order = sorted(
        (r for r in ranked if r.throughput is not None),
        key=lambda r: (-(r.throughput or 0.0), r.p99 if r.p99 is not None else float("inf")),
    )
    if not order:
        return None
    top = order[0]
    out: dict[str, Any] = {
        "configuration": ranked.index(top),
        "label": top.label,
        "vary": top.vary,
        "steady_state_throughput_rps": top.throughput,
        "p99_ms": top.p99,
        "runner_up": None,
        "verdict": None,
        "throughput_ratio": None,
        "text": f"{top.label} runs best: {shown(Figure.RPS, top.throughput)} in a steady state",
    }
    if len(order) == 1:
        return out
    second = order[1]
    record = comparison_record(compare(second, top, window_s), second, top)
    out.update(
        runner_up=second.label,
        verdict=record["verdict"],
        throughput_ratio=record["throughput_ratio"],
    )
    if record["verdict"] == Verdict.BETTER.value:
        out["text"] = f"best: {record['text']}"
    elif record["verdict"] == Verdict.SAME.value:
        out["text"] = (
            f"best: {top.label} and {second.label} are within noise of each other"
            f" ({shown(Figure.RPS, top.throughput)} against"
            f" {shown(Figure.RPS, second.throughput)}, no significant change): either runs best"
        )
    else:
        out["text"] = f"best: {top.label}, not judged against {second.label}: {record['text']}"
    return out


def _ratio(base: float | None, new: float | None) -> float | None:
    if base is None or new is None or base <= 0:
        return None
    return new / base


def _at(d: Any, path: Sequence[str]) -> float | None:
    for key in path:
        if not isinstance(d, dict):
            return None
        d = d.get(key)
    if d is None or isinstance(d, bool):
        return None
    try:
        return float(d)
    except (TypeError, ValueError):
        return None
