"""compiler: a scenario file in, a plan (a JSON-ready dict the engine executes) out.

The file is executed once; its :class:`Scenario`'s flows are traced on symbolic values
(:class:`~redline.scenario.user.User`). Every mistake found here (a syntax error, an unknown
option, a variable used before it is extracted, a JSON path that does not parse, a missing
data file, a run variable not given) is one :class:`ScenarioError` naming the file and line,
raised before any load is sent. The plan format is documented in docs/scenarios.md.
"""

from __future__ import annotations

import os
import runpy
import traceback
from dataclasses import dataclass
from typing import Any

from redline.scenario import divergence
from redline.scenario.scenario import Scenario
from redline.scenario.template import ValueUseError, tracing
from redline.scenario.user import BUILTINS, ScenarioError, User

#: PLAN_VERSION: bumped when the plan format changes incompatibly.
PLAN_VERSION = 1


@dataclass
class Compiled:
    """Compiled is a scenario file's plan, its declared host, profile and thresholds."""

    file: str
    plan: dict[str, Any]
    host: str | None
    profile: dict[str, Any]
    thresholds: list[str]


class _Compiler:
    """_Compiler holds what tracing needs across flows: fresh names, run variables."""

    def __init__(self, scenario: Scenario, run_vars: dict[str, str]) -> None:
        self.run_vars = run_vars
        self.used_vars: dict[str, str] = {}
        self.datasets = scenario.datasets
        #: scenario: whose steps these are (a Python step's key names it).
        self.scenario = scenario
        #: python: the plan's Python step functions ({"name", "key"}; see pystep).
        self.python: list[dict[str, str]] = []
        self._n = 0

    def fresh(self, what: str) -> str:
        self._n += 1
        return f"{what}{self._n}"

    def label(self, name: str) -> str:
        return repr(name)


def load(path: str | os.PathLike[str], run_vars: dict[str, str] | None = None) -> Compiled:
    """load executes the scenario file at ``path`` and compiles its flows."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise ScenarioError("scenario file not found", path)
    try:
        namespace = runpy.run_path(path, run_name="__redline_scenario__")
    except ScenarioError:
        raise
    except SyntaxError as e:
        raise ScenarioError(f"syntax error: {e.msg}", path, e.lineno) from None
    except Exception as e:  # the user's module raised: name its line
        raise ScenarioError(f"{type(e).__name__}: {e}", path, _line_in(e, path)) from None
    found = [v for v in namespace.values() if isinstance(v, Scenario)]
    if len(found) != 1:
        raise ScenarioError(f"expected one Scenario(...) in the file, found {len(found)}", path)
    return compile_scenario(found[0], run_vars or {}, path)


def compile_scenario(
    scenario: Scenario, run_vars: dict[str, str], path: str | None = None
) -> Compiled:
    """compile_scenario traces ``scenario``'s setup and flows into a plan, three times with
    the markers spelt differently (:mod:`~redline.scenario.divergence`): a plan that differs
    between the traces holds a constant Python computed from a run-time value, refused."""
    path = path or scenario.file or "<scenario>"
    if not scenario.flows:
        raise ScenarioError(
            "the scenario declares no flow (use @scenario.flow)", path, scenario.line
        )
    plans = []
    for salt, mark in divergence.TRACES:
        with tracing(salt, mark):
            plans.append(_plan(scenario, run_vars, path))
    divergence.refuse(plans, path)
    return Compiled(
        path, plans[0], scenario.host, dict(scenario.profile), list(scenario.thresholds)
    )


def _plan(scenario: Scenario, run_vars: dict[str, str], path: str) -> dict[str, Any]:
    """_plan traces ``scenario``'s setup and flows once, in the trace under way."""
    comp = _Compiler(scenario, run_vars)
    base: set[str] = set(BUILTINS)
    for ds in scenario.datasets.values():
        base.update(f"data.{ds['name']}.{c}" for c in ds["columns"])
    setup_steps: list[dict[str, Any]] = []
    kept: Any = None
    if scenario.setup_fn is not None:
        u = User(comp, base, in_setup=True)
        kept = _trace(scenario.setup_fn, u, path)
        setup_steps = u.steps
        base = u._defined
    flows = []
    for f in scenario.flows:
        u = User(comp, base)
        u.setup = kept
        _trace(f.fn, u, path)
        if not u.steps:
            raise ScenarioError(f"flow {f.name!r} has no steps", path, f.line)
        flows.append({"name": f.name, "weight": f.weight, "steps": u.steps, "line": f.line})
    plan = {
        "version": PLAN_VERSION,
        "file": path,
        "vars": {f"var.{k}": v for k, v in sorted(comp.used_vars.items())},
        "data": list(scenario.datasets.values()),
        "setup": setup_steps,
        "flows": flows,
    }
    if comp.python:
        plan["python"] = comp.python
    return plan


def _trace(fn: Any, user: User, path: str) -> Any:
    """_trace runs a flow (or setup) function on ``user``; returns what it returned."""
    try:
        return fn(user)
    except ScenarioError:
        raise
    except ValueUseError as e:
        raise ScenarioError(str(e), path, _line_in(e, path)) from None
    except Exception as e:
        raise ScenarioError(f"{type(e).__name__}: {e}", path, _line_in(e, path)) from None


def _line_in(e: BaseException, path: str) -> int | None:
    """_line_in: the deepest line of ``path`` in the traceback of ``e``."""
    line = None
    target = os.path.abspath(path)
    for fs in traceback.extract_tb(e.__traceback__):
        if os.path.abspath(fs.filename) == target:
            line = fs.lineno
    return line
