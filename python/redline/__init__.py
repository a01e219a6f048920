"""redline: HTTP load testing that answers, truthfully, what throughput a service sustains,
how its latency is distributed, where it runs best and how it fails.

The engine is Rust (``redline._engine``); this package is its typed Python face and CLI. The
library is what the CLI calls, each function returning a typed result whose ``to_json()`` is
the command's ``--json`` document:

- :func:`run`: one load run of a URL (:class:`Result`), or of a :class:`Scenario` (as
  ``scenario.run`` does: :class:`ScenarioResult`);
- :class:`Scenario`: user flows that run themselves (``scenario.run(users=5)``: its profile
  with those merged over it, its thresholds judged: :class:`ScenarioResult`);
- :func:`find`: the capacity search of a URL or a scenario (:class:`FindResult`:
  ``result.answers.limit.capacity_rps``);
- :func:`compare`: a result against a baseline, with the gate's rules (:class:`CompareResult`);
- :func:`experiment`: a service started fresh per configuration, each searched or run, then
  compared (:class:`ExperimentResult`: ``result.best.label``);
- :func:`websocket`: one WebSocket run of a ``ws://`` URL (:class:`SocketResult`).
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any

from redline._engine import __version__
from redline.errors import ConfigError, RedlineError, UnreachableError
from redline.exports import lazy_attribute

if TYPE_CHECKING:
    from redline.compare.result import CompareResult, compare
    from redline.experiment.result import ExperimentResult, experiment
    from redline.find.result import FindResult, find
    from redline.runs.options import IgnoredOption, Stage
    from redline.runs.result import Latency, Result, merge_histograms
    from redline.runs.run_options import RunOptions
    from redline.runs.runner import defaults
    from redline.runs.target import Target
    from redline.scenario.running import Scenario, ScenarioResult, run
    from redline.sockets import SocketResult, websocket

#: _HOME: the module each public name lives in, imported when the name is first used (PEP
#: 562). The CLI is inside this package, so whatever this file imports, every command pays for
#: at start: eagerly, ``redline --version`` imported the scenario compiler, compare, find and
#: experiment (~320 M instructions, a quarter of them CPython compiling dataclass methods).
_HOME = {
    **dict.fromkeys(("CompareResult", "compare"), "compare.result"),
    **dict.fromkeys(("ExperimentResult", "experiment"), "experiment.result"),
    **dict.fromkeys(("FindResult", "find"), "find.result"),
    **dict.fromkeys(("IgnoredOption", "Stage"), "runs.options"),
    **dict.fromkeys(("Latency", "Result", "merge_histograms"), "runs.result"),
    "RunOptions": "runs.run_options",
    "defaults": "runs.runner",
    "Target": "runs.target",
    **dict.fromkeys(("Scenario", "ScenarioResult", "run"), "scenario.running"),
    **dict.fromkeys(("SocketResult", "websocket"), "sockets"),
}

#: _SHADOWED: the functions named as the subpackages they live in. Python binds a subpackage
#: to its parent's attribute when it is first imported (``import redline.find.plan`` would set
#: ``redline.find`` to the package); here the name stays the function.
_SHADOWED = frozenset({"compare", "experiment", "find"})


def __getattr__(name: str) -> Any:
    value = lazy_attribute(__name__, _HOME, name)
    globals()[name] = value  # imported once: from now on a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOME})


class _Package(ModuleType):
    """_Package is this module's type: a module whose :data:`_SHADOWED` names are not
    replaced by the subpackages of the same names when those are imported."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _SHADOWED and isinstance(value, ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

__all__ = [
    "RunOptions",
    "__version__",
    "run",
    "find",
    "compare",
    "experiment",
    "defaults",
    "Result",
    "FindResult",
    "CompareResult",
    "ExperimentResult",
    "Scenario",
    "ScenarioResult",
    "Latency",
    "Stage",
    "IgnoredOption",
    "Target",
    "merge_histograms",
    "RedlineError",
    "ConfigError",
    "UnreachableError",
    "websocket",
    "SocketResult",
]
