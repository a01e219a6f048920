"""result: an experiment's outcome, typed (:class:`ExperimentResult`), and :func:`experiment`,
the library's experiment that returns it (``redline find --vary`` and ``redline run --vary``
call it).

    >>> import redline
    >>> result = redline.experiment(
    ...     "http://127.0.0.1:{port}/",
    ...     "redline target --port {port} --capacity {slots} --service-time 10ms",
    ...     {"slots": [2, 8]},
    ...     measure="run", connections=16, duration="3s",
    ... )
    >>> result.best.label, [c.label for c in result.configurations], result.text()

The names are the experiment document's (``docs/schema/experiment.schema.json``); the document
itself is kept whole (:attr:`ExperimentResult.document`, :meth:`ExperimentResult.to_json`).
The loop is :func:`redline.experiment.runner.conduct`; this module imports nothing heavy, so
that ``import redline`` stays light.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from redline.errors import ConfigError
from redline.find.result import FindResult, pick
from redline.output import write_text
from redline.runs.result import Result

if TYPE_CHECKING:
    from redline.experiment.runner import OnResult, OnStart
    from redline.scenario.scenario import Scenario

#: MEASURES: what each configuration's service can be put through: a capacity search
#: (:func:`redline.find`) or a run at a fixed load (:func:`redline.run`).
MEASURES = ("find", "run")


@dataclass(frozen=True)
class Spread:
    """Spread: one figure over a configuration's repeats: its least, median and most."""

    min: float
    median: float
    max: float


@dataclass(frozen=True)
class ConfigurationResult:
    """ConfigurationResult: one configuration (``label``, ``workers=2``; ``vary``, its
    values by name), every repeat's result (a :class:`~redline.FindResult` per search or a
    :class:`~redline.Result` per run, in repeat order), the repeat that stands for it
    (``representative``, the median one; None when none could be read) and the ``spread``
    of its headline figures over the repeats (None: no repeat had that figure)."""

    label: str
    vary: dict[str, str]
    results: tuple[FindResult | Result, ...]
    representative: int | None
    spread: dict[str, Spread | None]

    @property
    def result(self) -> FindResult | Result | None:
        """result: the representative repeat's result."""
        i = self.representative
        return self.results[i] if i is not None else None


@dataclass(frozen=True)
class ComparisonResult:
    """ComparisonResult: configuration ``new`` against the one before it (``base``): the
    verdict on the headline throughput (``better``, ``worse``, ``same`` or ``unknown``), the
    throughput ratio new/base, the p99's verdict, and the sentence that says it."""

    base: str
    new: str
    verdict: str
    throughput_ratio: float | None
    p99_verdict: str
    text: str


@dataclass(frozen=True)
class Best:
    """Best: the configuration that runs best (``label``; ``configuration``, its index),
    with its headline throughput and p99, the ``runner_up`` it was judged against and the
    verdicts of that comparison, the sentence, and whether it is ``decided`` (not when a
    search found no limit: its throughput is a load it was given, not the most it
    sustains)."""

    configuration: int
    label: str
    vary: dict[str, str]
    steady_state_throughput_rps: float | None
    p99_ms: float | None
    text: str
    decided: bool
    runner_up: str | None = None
    verdict: str | None = None
    p99_verdict: str | None = None
    throughput_ratio: float | None = None


@dataclass(frozen=True)
class ExperimentResult:
    """ExperimentResult: an experiment's configurations side by side
    (:class:`ConfigurationResult`), each against the one before it
    (:class:`ComparisonResult`), and the :class:`Best` (None when no configuration had a
    headline throughput). ``measure`` is what each service was put through (``find`` or
    ``run``), ``model`` the load model; ``interrupted`` when Ctrl-C ended it (what ran is
    kept). ``document`` is the whole experiment document."""

    measure: str
    model: str
    configurations: tuple[ConfigurationResult, ...]
    comparisons: tuple[ComparisonResult, ...]
    best: Best | None
    interrupted: bool
    document: dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_document(cls, doc: dict[str, Any]) -> ExperimentResult:
        """from_document reads an experiment document (``redline find --vary --json``)."""
        typed = FindResult.from_document if doc["measure"] == "find" else Result
        return cls(
            measure=doc["measure"],
            model=doc["model"],
            configurations=tuple(
                ConfigurationResult(
                    label=c["label"],
                    vary=dict(c["vary"]),
                    results=tuple(typed(run["result"]) for run in c.get("runs", ())),
                    representative=c.get("representative"),
                    spread={
                        k: Spread(**v) if v is not None else None
                        for k, v in (c.get("spread") or {}).items()
                    },
                )
                for c in doc["configurations"]
            ),
            comparisons=tuple(pick(ComparisonResult, c) for c in doc.get("comparisons", ())),
            best=pick(Best, doc["best"]) if doc.get("best") else None,
            interrupted=bool(doc.get("interrupted", False)),
            document=doc,
        )

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> ExperimentResult:
        """load reads an experiment file written with ``--vary --json``."""
        return cls.from_document(json.loads(Path(path).read_text()))

    def text(self) -> str:
        """text: the table and the verdicts, as the command prints them."""
        from redline.experiment.tables import render_text

        return render_text(self.document)

    def markdown(self) -> str:
        """markdown: the table and the verdicts as GitHub-flavoured Markdown (``--markdown``)."""
        from redline.experiment.tables import render_markdown

        return render_markdown(self.document)

    def html(self) -> str:
        """html: the page with every configuration's curves overlaid (``--report``)."""
        from redline.experiment.tables import render_html

        return render_html(self.document)

    def to_json(self, indent: int | None = 2) -> str:
        """to_json renders the whole document, as ``--vary --json`` writes it."""
        return json.dumps(self.document, indent=indent, default=str)

    def write_json(self, path: str | os.PathLike[str]) -> None:
        """write_json writes the document to ``path`` (``"-"``: stdout)."""
        write_text(path, self.to_json())


def experiment(
    target: str | os.PathLike[str] | Scenario,
    command: str,
    vary: Mapping[str, Sequence[Any]] | Sequence[str],
    *,
    measure: str = "find",
    host: str | None = None,
    vars: dict[str, str] | None = None,
    repeat: int = 1,
    window_s: float | None = None,
    listen_timeout_s: float | None = None,
    on_start: OnStart | None = None,
    on_result: OnResult | None = None,
    **options: Any,
) -> ExperimentResult:
    """experiment starts the service ``command`` fresh for each configuration of ``vary``
    (``repeat`` times each, round-robin), measures it, stops it, and returns the
    configurations side by side with the verdicts between them and the best
    (:class:`ExperimentResult`).

    ``measure="find"`` searches each (:func:`redline.find`; ``options`` are its: ``max_time``,
    ``slos``, ``model`` …); ``measure="run"`` runs each at a fixed load (:func:`redline.run`;
    ``options`` are its: ``connections``, ``rate``, ``duration`` …). ``target`` is a URL, a
    :class:`~redline.Scenario` or a scenario file (compiled with ``vars``; its flows run
    against ``host``, default its own; with ``measure="run"`` its profile with the profile
    keys among ``options`` merged over it). ``vary`` is ``{"workers": [1, 2, 4]}`` or the
    ``--vary`` specs ``["workers=1,2,4"]``; every name must be a ``{placeholder}`` of
    ``command``; ``{port}`` (in the command and in the URL or host) is a free port, ``{dir}``
    an empty directory, fresh for each service. ``on_start`` hears each service that is up,
    ``on_result`` each result document as it ends. Ctrl-C ends the measurement that runs,
    stops its service and returns what ran, ``interrupted`` true."""
    from redline.experiment import runner

    if measure not in MEASURES:
        raise ConfigError(f"measure: 'find' or 'run', got {measure!r}")
    url, options = _target(target, measure, host, vars, options)
    conduct = runner.experiment if measure == "find" else runner.run_experiment
    loop: dict[str, Any] = {"repeat": repeat, "window_s": window_s}
    if listen_timeout_s is not None:
        loop["listen_timeout_s"] = listen_timeout_s
    doc = conduct(url, command, vary, on_start=on_start, on_result=on_result, **loop, **options)
    return ExperimentResult.from_document(doc)


def _target(
    target: str | os.PathLike[str] | Scenario,
    measure: str,
    host: str | None,
    vars: dict[str, str] | None,
    options: dict[str, Any],
) -> tuple[str, dict[str, Any]]:
    """_target: the URL template and the options of each measurement: a URL's as given; a
    scenario's host, with its plan (and for a run its profile merged into the run options)."""
    if isinstance(target, str) and not target.endswith(".py"):
        return target, options
    from redline.scenario.compiler import compile_scenario, load

    if isinstance(target, (str, os.PathLike)):
        compiled = load(target, vars)
    else:
        compiled = compile_scenario(target, dict(vars or {}))
    if measure == "find":
        url = host or compiled.host
        if not url:
            raise ConfigError(f"{compiled.file}: no host: give host=URL or Scenario(host=...)")
        return url, {**options, "plan": compiled.plan, "scenario": compiled.file}
    from redline.scenario.running import scenario_options

    url, run_options = scenario_options(compiled, host, options)
    return url, run_options
