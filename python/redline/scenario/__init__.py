"""redline.scenario: user flows written in Python, compiled once to a plan that the Rust engine
executes with no Python call per request. See docs/scenarios.md.

    from redline.scenario import Scenario, between, json_in, json_eq

    s = Scenario(host="http://127.0.0.1:8000", users=10, duration="30s")

    @s.flow(weight=5)
    def submit(u):
        task = u.post("/tasks/submissions", json={"type": "factorial", "n": 100},
                      name="submit", status=202)
        tid = task.json("$.id")
        u.poll(f"/tasks/submissions/{tid}", name="status", every="1s", timeout="60s",
               until=json_in("$.status", ["SUCCEEDED", "FAILED"]),
               checks=[json_eq("$.status", "SUCCEEDED")])
        u.get(f"/tasks/{tid}", name="result", status=200)

Branches and loops (``with u.when(...)``, ``u.otherwise()``, ``u.repeat(n)``,
``u.until(cond, limit=N)``, ``u.stop_iteration(cond)``) are decided per VU during the run.

A scenario runs itself from a script: ``s.run(users=5, duration="10s")`` merges those over
its profile, runs it and judges its thresholds (a :class:`ScenarioResult`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from redline.exports import lazy_attribute

if TYPE_CHECKING:
    from redline.scenario.checks import (
        Check,
        contains,
        json_eq,
        json_in,
        json_not_in,
        latency_under,
        status,
    )
    from redline.scenario.compiler import Compiled, compile_scenario, load
    from redline.scenario.condition import Condition, all_of, any_of, not_
    from redline.scenario.running import Scenario, ScenarioResult, ThresholdVerdict
    from redline.scenario.template import Var
    from redline.scenario.user import (
        Response,
        ScenarioError,
        Think,
        User,
        between,
        constant,
        exponential,
    )

#: _HOME: the module each public name lives in, imported on first use (PEP 562), so that a
#: plain URL run, which needs none of the compiler, does not pay for it at start.
_HOME = {
    **dict.fromkeys(
        ("Check", "contains", "json_eq", "json_in", "json_not_in", "latency_under", "status"),
        "checks",
    ),
    **dict.fromkeys(("Compiled", "compile_scenario", "load"), "compiler"),
    **dict.fromkeys(("Condition", "all_of", "any_of", "not_"), "condition"),
    **dict.fromkeys(("Scenario", "ScenarioResult", "ThresholdVerdict"), "running"),
    "Var": "template",
    **dict.fromkeys(
        ("Response", "ScenarioError", "Think", "User", "between", "constant", "exponential"),
        "user",
    ),
}


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, _HOME, name)


__all__ = [
    "Scenario",
    "ScenarioResult",
    "ThresholdVerdict",
    "User",
    "Response",
    "Var",
    "Check",
    "Condition",
    "Think",
    "ScenarioError",
    "Compiled",
    "load",
    "compile_scenario",
    "status",
    "json_eq",
    "json_in",
    "json_not_in",
    "contains",
    "latency_under",
    "all_of",
    "any_of",
    "not_",
    "between",
    "constant",
    "exponential",
]
