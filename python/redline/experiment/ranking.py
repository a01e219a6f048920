"""ranking: the configurations' results side by side, compared, and the best of them.

The verdicts are :mod:`redline.compare`'s: each configuration against the one before it (in
the order ``--vary`` listed them), and the best against the runner-up, on the results'
interval data (a search's steady-state windows: goodput, errors and latency, and its optimal
and limit steps'; a run's windows after warm-up, and a scenario's request names'). With
``--repeat`` a configuration's repeats are laid end to end into one stretch per answer (or
name), so the test sees every repeat's windows; its figures in the table are the median
repeat's, and ``spread`` says how far the repeats fell apart. What a result's headline is
(the steady state, or the whole run) is the :class:`~redline.experiment.measures.Measure`'s.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Sequence
from typing import Any

from redline.compare import Comparison, Document, Figure, Stretch, Verdict
from redline.compare import compare as compare_documents
from redline.compare import read as read_document
from redline.compare.significance import MIN_EFFECT
from redline.compare.tables import shown
from redline.experiment.measures import Measure

#: UNBOUNDED: the stop conditions of a search that found no limit.
UNBOUNDED = ("max-time", "max-load")


@dataclasses.dataclass
class Ranked:
    """Ranked is one configuration's results: its ``label`` and ``vary`` values, and the
    ``results`` of its repeats (find or run results, as ``measure`` says), in the order they
    ran."""

    label: str
    vary: dict[str, str]
    results: list[dict[str, Any]]
    measure: Measure = Measure.FIND

    @property
    def usable(self) -> list[dict[str, Any]]:
        """usable: the repeats that ran to their end (not interrupted)."""
        return [r for r in self.results if not r.get("interrupted")]

    @property
    def representative(self) -> int | None:
        """representative: the index of the median repeat by headline throughput (the
        lower median of an even count), None when no repeat has one."""
        scored = [
            (x, i)
            for i, r in enumerate(self.results)
            if not r.get("interrupted") and (x := self.measure.throughput(r)) is not None
        ]
        if not scored:
            return None
        scored.sort()
        return scored[(len(scored) - 1) // 2][1]

    @property
    def throughput(self) -> float | None:
        """throughput: the median repeat's headline throughput."""
        i = self.representative
        return None if i is None else self.measure.throughput(self.results[i])

    @property
    def p99(self) -> float | None:
        """p99: the median repeat's headline p99 (ms)."""
        i = self.representative
        return None if i is None else self.measure.p99(self.results[i])

    @property
    def unbounded(self) -> str | None:
        """unbounded: for a search, why its throughput is no capacity: its median repeat
        found no limit (it stopped on its time or its load cap), so its steady state is a
        load it was given, a lower bound of the most it sustains. None when it found one,
        and for a run (a fixed load is compared as the load it is)."""
        i = self.representative
        if self.measure is not Measure.FIND or i is None:
            return None
        r = self.results[i]
        stop = (r.get("stop") or {}).get("condition")
        if stop not in UNBOUNDED:
            return None
        loads = [float(s["load"]) for s in r.get("steps") or [] if s.get("load") is not None]
        unit = "users" if r.get("model", "closed") == "closed" else "req/s offered"
        top = f" at {max(loads):g} {unit}" if loads else ""
        return f"it stopped on {stop}{top}"

    def spread(self) -> dict[str, dict[str, float] | None]:
        """spread: each of the measure's spread figures' min, median and max over the
        usable repeats."""
        out: dict[str, dict[str, float] | None] = {}
        for name, read in self.measure.spread.items():
            xs = [x for r in self.usable if (x := read(r)) is not None]
            out[name] = (
                {"min": min(xs), "median": statistics.median(xs), "max": max(xs)} if xs else None
            )
        return out

    def document(self) -> Document | None:
        """document: the configuration as compare reads a result: the median repeat, with
        each stretch (answer, or request name) laid end to end over every usable repeat."""
        i = self.representative
        if i is None:
            return None
        doc = read_document(self.results[i], self.label.replace("/", "\u2215"))
        parts = [read_document(r, self.label).stretches for r in self.usable]
        pooled = {}
        for group in self.measure.groups(doc):
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
    verdict (the headline stretch's goodput), the throughput ratio, the p99 verdict, a
    sentence, and every row with its 95 % interval."""
    rps = c.row(Figure.RPS, base.measure.headline) if c is not None else None
    p99 = c.row(Figure.P99, base.measure.headline) if c is not None else None
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
                "ci": list(r.ci) if r.ci is not None else None,
                "windows": list(r.evidence.n),
            }
            for r in (c.rows if c is not None else [])
        ],
    }


def sentence(c: Comparison | None, base: Ranked, new: Ranked) -> str:
    """sentence: the comparison in words, e.g. "workers=2: 1.8x the throughput of
    workers=1 (412/s against 229/s) at the same p99, significant (p=0.001)"; at the same
    throughput (a run at a fixed rate), the p99's verdict. A search that found no limit is
    named: its throughput is a load it was given, not its capacity."""
    return _verdict_sentence(c, base, new) + "".join(
        f"; {r.label} found no limit ({r.unbounded}): a lower bound"
        for r in (base, new)
        if r.unbounded
    )


def _verdict_sentence(c: Comparison | None, base: Ranked, new: Ranked) -> str:
    headline = base.measure.headline
    rps = c.row(Figure.RPS, headline) if c is not None else None
    if rps is None or rps.base is None or rps.new is None:
        what = "a run without figures"
        if base.measure is Measure.FIND:
            what = "a search without a steady state"
        return f"{new.label}: not compared with {base.label} ({what})"
    ratio = _ratio(rps.base, rps.new)
    times = f"{ratio:.2g}\u00d7" if ratio is not None else "?"
    figures = f"({shown(Figure.RPS, rps.new)} against {shown(Figure.RPS, rps.base)})"
    if rps.verdict is Verdict.UNKNOWN:
        return (
            f"{new.label}: {times} the throughput of {base.label} {figures}, not judged:"
            " too few windows (confirm longer)"
        )
    p99 = c.row(Figure.P99, headline) if c is not None else None
    if rps.verdict is Verdict.SAME and p99 is not None and p99.verdict in _CHANGED:
        p = f"p={p99.p:.2g}" if p99.p is not None else ""
        return (
            f"{new.label}: the throughput of {base.label} {figures}{_p99_words(c, headline)},"
            f" significant ({p})"
        )
    if rps.verdict is Verdict.SAME:
        return f"{new.label}: no significant change over {base.label} {figures}"
    p = f"p={rps.p:.2g}" if rps.p is not None else ""
    return (
        f"{new.label}: {times} the throughput of {base.label} {figures}"
        f"{_p99_words(c, headline)}, significant ({p})"
    )


_CHANGED = (Verdict.BETTER, Verdict.WORSE)


def _p99_words(c: Comparison | None, headline: str) -> str:
    row = c.row(Figure.P99, headline) if c is not None else None
    if row is None or row.verdict is Verdict.UNKNOWN:
        return ""
    if row.verdict is Verdict.SAME:
        return " at the same p99"
    return (
        f" with p99 {row.verdict.value} ({shown(Figure.P99, row.base)} ->"
        f" {shown(Figure.P99, row.new)})"
    )


def best(ranked: Sequence[Ranked], window_s: float) -> dict[str, Any] | None:
    """best: the configuration with the most headline throughput (a search's answer under
    the SLOs and the error limit; a run's goodput), throughputs within the minimum effect of
    the most (5 %: no change, as compare judges) counting as a tie that the lower p99
    breaks, with the verdict of the comparison against the runner-up. None when no
    configuration has a headline throughput."""
    scored = [r for r in ranked if r.throughput is not None]
    if not scored:
        return None
    most = max(r.throughput or 0.0 for r in scored)
    level = (1.0 - MIN_EFFECT[Figure.RPS]) * most

    def key(r: Ranked) -> tuple[bool, float, float]:
        p99 = r.p99 if r.p99 is not None else float("inf")
        tied = (r.throughput or 0.0) >= level
        return (not tied, p99 if tied else 0.0, -(r.throughput or 0.0))

    order = sorted(scored, key=key)
    top = order[0]
    # A search that found no limit sustains at least its throughput, perhaps far more: the
    # best is known only when every other configuration's throughput is a capacity.
    open_ended = [r for r in order[1:] if r.unbounded]
    out: dict[str, Any] = {
        "configuration": ranked.index(top),
        "label": top.label,
        "vary": top.vary,
        "steady_state_throughput_rps": top.throughput,
        "p99_ms": top.p99,
        "runner_up": None,
        "verdict": None,
        "p99_verdict": None,
        "throughput_ratio": None,
        "text": f"{top.label} runs best: {shown(Figure.RPS, top.throughput)}"
        + (" in a steady state" if top.measure is Measure.FIND else ""),
        "decided": not open_ended,
    }
    if len(order) == 1:
        return out
    second = order[1]
    record = comparison_record(compare(second, top, window_s), second, top)
    out.update(
        runner_up=second.label,
        verdict=record["verdict"],
        p99_verdict=record["p99_verdict"],
        throughput_ratio=record["throughput_ratio"],
    )
    if open_ended:
        other = open_ended[0]
        out.update(verdict=Verdict.UNKNOWN.value, p99_verdict=Verdict.UNKNOWN.value)
        out["text"] = (
            f"best: not decided: the search of {other.label} found no limit ({other.unbounded}),"
            f" so its {shown(Figure.RPS, other.throughput)} is a load it was given, not the most"
            f" it sustains (against {shown(Figure.RPS, top.throughput)} of {top.label}):"
            " search longer (--max-time) or from a higher load (--start)"
        )
        return out
    lower_p99 = record["p99_verdict"] == Verdict.BETTER.value
    if record["verdict"] == Verdict.BETTER.value or (
        record["verdict"] == Verdict.SAME.value and lower_p99
    ):
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
