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

from redline._engine import __version__

# `compare`, `experiment` and `find` are bound after their packages of the same names are
# loaded (by these imports), so each name is the function: a subpackage replaces its parent's
# attribute only when first imported.
from redline.compare.result import CompareResult, compare
from redline.errors import ConfigError, RedlineError, UnreachableError
from redline.experiment.result import ExperimentResult, experiment
from redline.find.result import FindResult, find
from redline.runs.options import IgnoredOption, Stage
from redline.runs.result import Latency, Result, merge_histograms
from redline.runs.run_options import RunOptions
from redline.runs.runner import defaults
from redline.runs.target import Target
from redline.scenario.running import Scenario, ScenarioResult, run
from redline.sockets import SocketResult, websocket

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
