"""result: a capacity search's answers, typed (:class:`FindResult`), and :func:`find`, the
library's search that returns them.

    >>> from redline import find
    >>> result = find("http://127.0.0.1:8080/", max_time=60)
    >>> result.answers.limit.capacity_rps, result.answers.optimal

The names are the result document's (``docs/schema/find.schema.json``); the document itself
is kept whole (:attr:`FindResult.document`, :meth:`FindResult.to_json`), so nothing a field
here leaves out is lost. The search is :func:`redline.find.finder.find`, which returns the
document as a dict (the command's, and the experiments'); this module imports nothing heavy,
so that ``import redline`` stays light.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from redline.errors import ConfigError
from redline.output import write_text

if TYPE_CHECKING:
    from redline.scenario.scenario import Scenario


@dataclass(frozen=True)
class LatencyMs:
    """LatencyMs: the steady answer's latency percentiles in milliseconds (None: no step
    had one)."""

    p50: float | None
    p90: float | None
    p95: float | None
    p99: float | None
    p99_9: float | None


@dataclass(frozen=True)
class Optimal:
    """Optimal: the load where the service ran best, the most throughput per unit of
    latency (``power``): ``users`` in the closed model, ``rate`` in the open one."""

    throughput_rps: float
    p99_ms: float | None
    users: float | None = None
    rate: float | None = None
    throughput_ci: float | None = None
    power: float | None = None
    step: int | None = None


@dataclass(frozen=True)
class Limit:
    """Limit: where the service broke: the load and goodput of the limit step, the
    condition that stopped the search (``reason``) and how the service fails (``kind``),
    and its ``capacity_rps`` ± ``capacity_ci`` (the schema says how each is read)."""

    throughput_rps: float | None
    load: float | None
    reason: str
    kind: str | None = None
    detail: str | None = None
    step: int | None = None
    capacity_rps: float | None = None
    capacity_ci: float | None = None
    error_rate: float | None = None
    p99_ms: float | None = None
    offered_rps: float | None = None
    refused_share: float | None = None


@dataclass(frozen=True)
class Answers:
    """Answers: the four answers: the steady-state throughput and the load it held, its
    latency, the optimal point (None: none found) and the limit."""

    steady_state_throughput_rps: float | None
    steady_state_load: float | None
    latency_ms: LatencyMs
    optimal: Optimal | None
    limit: Limit


@dataclass(frozen=True)
class Stop:
    """Stop: the condition that ended the search, what it means and its detail."""

    condition: str
    meaning: str | None = None
    detail: str | None = None


@dataclass(frozen=True)
class FindResult:
    """FindResult: a capacity search's answers (:class:`Answers`), how it ended
    (:class:`Stop`), its ``model`` (``closed``: the load is users; ``open``: req/s), its
    steps (the document's dicts), whether the limit was redline's own CPU
    (``generator_limited``) or the search was interrupted, and the whole ``document``."""

    model: str
    answers: Answers
    stop: Stop | None
    steps: tuple[dict[str, Any], ...]
    generator_limited: bool
    interrupted: bool
    url: str | None
    scenario: str | None
    document: dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_document(cls, doc: dict[str, Any]) -> FindResult:
        """from_document reads a search's result document (``redline find --json``)."""
        a = doc["answers"]
        stop = doc.get("stop")
        return cls(
            model=doc["model"],
            answers=Answers(
                steady_state_throughput_rps=a.get("steady_state_throughput_rps"),
                steady_state_load=a.get("steady_state_load"),
                latency_ms=pick(LatencyMs, a.get("latency_ms") or {}),
                optimal=pick(Optimal, a["optimal"]) if a.get("optimal") else None,
                limit=pick(Limit, a["limit"]),
            ),
            stop=pick(Stop, stop) if stop else None,
            steps=tuple(doc.get("steps", ())),
            generator_limited=bool(doc.get("generator_limited", False)),
            interrupted=bool(doc.get("interrupted", False)),
            url=doc.get("url"),
            scenario=doc.get("scenario"),
            document=doc,
        )

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> FindResult:
        """load reads a result file written by ``redline find --json``."""
        return cls.from_document(json.loads(Path(path).read_text()))

    def to_json(self, indent: int | None = 2) -> str:
        """to_json renders the whole document, as ``redline find --json`` writes it."""
        return json.dumps(self.document, indent=indent, default=str)

    def write_json(self, path: str | os.PathLike[str]) -> None:
        """write_json writes the document to ``path`` (``"-"``: stdout)."""
        write_text(path, self.to_json())


def pick(cls: Any, d: dict[str, Any]) -> Any:
    """pick builds the dataclass ``cls`` from the document's object ``d``, taking its
    fields by name (the document's other keys stay in the document)."""
    return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


def find(
    target: str | os.PathLike[str] | Scenario,
    *,
    host: str | None = None,
    vars: dict[str, str] | None = None,
    **options: Any,
) -> FindResult:
    """find searches for the load where ``target`` runs best and where it breaks, and
    returns the four answers (:class:`FindResult`). ``target`` is a URL, a scenario
    (a :class:`~redline.scenario.Scenario`, or the path of a scenario file, compiled with
    the run variables ``vars``), whose flows each step then runs against ``host`` (default:
    its own). ``options`` are :func:`redline.find.finder.find`'s (``model``, ``slos``,
    ``max_errors``, ``max_time``, ``max_step``, ``stop_at_knee``, ``throughput``, and the
    run options of each step: ``timeout``, ``threads``, ``http2`` …), with its defaults."""
    from redline.find.finder import find as search

    if isinstance(target, str) and not target.endswith(".py"):
        return FindResult.from_document(search(target, **options))
    from redline.scenario.compiler import compile_scenario, load

    if isinstance(target, (str, os.PathLike)):
        compiled = load(target, vars)
    else:
        compiled = compile_scenario(target, dict(vars or {}))
    url = host or compiled.host
    if not url:
        raise ConfigError(f"{compiled.file}: no host: give host=URL or Scenario(host=...)")
    doc = search(url, plan=compiled.plan, scenario=compiled.file, **options)
    return FindResult.from_document(doc)
