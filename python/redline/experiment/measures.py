"""measures: what an experiment does with each configuration's service, and how it reads the
outcome: a search (``redline find --vary``: the four answers, the steady state its headline)
or a run at a fixed load (``redline run --vary``: the run's figures, the whole run after
warm-up its headline, and a scenario's request names compared one by one).

The loop that starts, measures and stops each service (:mod:`runner`) and the ranking
(:mod:`ranking`) are the same for both; only what this module says differs.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import Any

from redline.compare.documents import LIMIT, OPTIMAL, STEADY, WHOLE_RUN, Document
from redline.compare.documents import read as read_document
from redline.compare.figures import ALL, Figure
from redline.compare.windows import whole

#: Reader reads one figure from a result, None where it has none.
Reader = Callable[[dict[str, Any]], float | None]


class Measure(Enum):
    """Measure is what each configuration's service is put through."""

    FIND = "find"
    RUN = "run"

    @property
    def headline(self) -> str:
        """headline: the stretch the verdicts and the ranking are about."""
        return STEADY if self is Measure.FIND else WHOLE_RUN

    @property
    def spread(self) -> dict[str, Reader]:
        """spread: the figures whose spread over repeats the document keeps (by their JSON
        names), each with its reader."""
        if self is Measure.FIND:
            return {
                "steady_state_throughput_rps": lambda r: _answer(r, "steady_state_throughput_rps"),
                "p99_ms": lambda r: _answer(r, "latency_ms", "p99"),
                "limit_throughput_rps": lambda r: _answer(r, "limit", "throughput_rps"),
            }
        return {
            "throughput_rps": lambda r: run_figures(r).get("throughput_rps"),
            "p99_ms": lambda r: run_figures(r).get("p99_ms"),
        }

    def throughput(self, result: dict[str, Any]) -> float | None:
        """throughput: the result's headline throughput (a search's steady state; a run's
        goodput), by which the repeats are ordered and the configurations ranked."""
        key = "steady_state_throughput_rps" if self is Measure.FIND else "throughput_rps"
        return self.spread[key](result)

    def p99(self, result: dict[str, Any]) -> float | None:
        """p99: the result's headline p99 (ms), the ranking's second key."""
        return self.spread["p99_ms"](result)

    def groups(self, doc: Document) -> list[str]:
        """groups: the stretches of a result that repeats are pooled into."""
        if self is Measure.FIND:
            return [g for g in (STEADY, OPTIMAL, LIMIT) if g in doc.stretches]
        return list(doc.stretches)

    def entry(self, result: dict[str, Any] | None) -> dict[str, Any]:
        """entry: what a configuration's JSON entry shows of its representative result: a
        search's ``answers``, ``steps`` and ``stop``; a run's ``figures``."""
        if self is Measure.FIND:
            return {
                "answers": result["answers"] if result is not None else None,
                "steps": result["steps"] if result is not None else [],
                "stop": result.get("stop") if result is not None else None,
            }
        return {"figures": run_figures(result) if result is not None else None}


#: RUN_FIGURES: a run's figures as an experiment's JSON names them.
RUN_FIGURES = {
    Figure.RPS: "throughput_rps",
    Figure.ERRORS: "error_rate",
    Figure.P50: "p50_ms",
    Figure.P90: "p90_ms",
    Figure.P99: "p99_ms",
    Figure.P99_9: "p99_9_ms",
}


def run_figures(result: dict[str, Any]) -> dict[str, float | None]:
    """run_figures: a run's whole-run figures after warm-up, as :mod:`redline.compare`
    counts them (goodput, the error rate over all outcomes, percentiles of the merged
    histograms), so the table and the verdicts show the same numbers."""
    doc = read_document(result, "run")
    figures = whole(doc.stretches[WHOLE_RUN])
    return {RUN_FIGURES[f]: figures.get(f) for f in ALL}


def _answer(result: dict[str, Any], *path: str) -> float | None:
    """_answer: a figure of a find result's answers, by its path (None where absent)."""
    d: Any = result.get("answers")
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
