"""profile: a scenario's load profile (declared in the file, overridden on the command line)
turned into the run options of :func:`redline.run`, plus helpers that write the usual
shapes as stages of the engine's piecewise-linear profile:

    Scenario(users=50, duration="1m")                       closed VUs
    Scenario(stages=[("20s", 350), ("10s", 0)])             ramping VUs (k6 ramping-vus)
    Scenario(rate=20, duration="1m")                        open arrival of iterations
    Scenario(stages=[("1m", 50)], open=True)                ramping arrival rate
    Scenario(stages=step_load(10, 10, "30s", 50))           Locust --step-load
    Scenario(stages=spike(80, 200, 60))                     spike
    Scenario(users=100, ramp_up="25s", loops=100)           JMeter thread group
    Scenario(users=10, iterations=20)                       fixed iterations per VU
"""

from __future__ import annotations

from typing import Any

from redline.runs.options import parse_duration, parse_stages
from redline.scenario.user import ScenarioError

#: HOLD_S: how long the last stage of a JMeter-style or per-VU-iterations run may last at
#: most; the run ends sooner, when every VU has run its iterations.
HOLD_S = 86_400.0

#: SHAPE_KEYS: the options that say how much load; one given on the command line replaces
#: all of the scenario's.
SHAPE_KEYS = ("users", "rate", "stages", "open", "ramp_up")


def step_load(
    start: int, add: int, every: str | float, until: int, ramp: str | float = "1s"
) -> list[tuple[float, float]]:
    """step_load: start ``start`` users, add ``add`` every ``every`` up to ``until`` (each
    step reached over ``ramp``, then held), like Locust's ``--step-load``."""
    every_s, ramp_s = parse_duration(every, "every"), parse_duration(ramp, "ramp")
    if not (start >= 0 and add > 0 and until >= start and every_s > ramp_s > 0):
        raise ValueError("step_load: need start >= 0, add > 0, until >= start, every > ramp > 0")
    stages: list[tuple[float, float]] = [(ramp_s, start), (every_s - ramp_s, start)]
    users = start
    while users < until:
        users = min(users + add, until)
        stages += [(ramp_s, users), (every_s - ramp_s, users)]
    return stages


def spike(
    base: int,
    peak: int,
    after: int,
    *,
    warm: str | float = "30s",
    rise: str | float = "5s",
    hold: str | float = "30s",
    fall: str | float = "5s",
    tail: str | float = "30s",
) -> list[tuple[float, float]]:
    """spike: ``base`` users, a sudden rise to ``peak``, then ``after`` (80 -> 200 -> 60)."""
    d = {
        k: parse_duration(v, k)
        for k, v in {"warm": warm, "rise": rise, "hold": hold, "fall": fall, "tail": tail}.items()
    }
    return [
        (d["rise"], base),
        (d["warm"], base),
        (d["rise"], peak),
        (d["hold"], peak),
        (d["fall"], after),
        (d["tail"], after),
    ]


def merge(declared: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """merge applies the command line's options (``given``, None = not given) over the
    scenario's: a load shape given replaces the declared shape whole."""
    out = dict(declared)
    given = {k: v for k, v in given.items() if v is not None and v is not False}
    if any(k in given for k in SHAPE_KEYS):
        for k in SHAPE_KEYS + ("loops",):
            out.pop(k, None)
    if "duration" in given and "stages" in out:
        out.pop("stages")
    if "stages" in given:
        out.pop("duration", None)  # stages set the duration
    out.update(given)
    return out


def run_options(
    profile: dict[str, Any], file: str | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """run_options: the keyword arguments of :func:`redline.run` and the plan fields
    (``iterations``, ``pacing_s``) a profile stands for."""
    p = dict(profile)
    kw: dict[str, Any] = {}
    plan: dict[str, Any] = {}
    users = p.pop("users", None)
    ramp_up = p.pop("ramp_up", None)
    loops = p.pop("loops", None)
    iterations = p.pop("iterations", None)
    if loops is not None:
        iterations = loops
    if ramp_up is not None:
        if users is None:
            raise ScenarioError("ramp_up needs users (JMeter's thread count)", file)
        ramp_s = parse_duration(ramp_up, "ramp_up")
        kw["stages"] = [(ramp_s, users), (HOLD_S, users)]
        if iterations is None:
            raise ScenarioError("ramp_up needs loops (or iterations) per user", file)
    elif users is not None:
        kw["connections"] = users
    if iterations is not None:
        if not isinstance(iterations, int) or iterations < 1:
            raise ScenarioError(f"iterations must be an integer >= 1, got {iterations!r}", file)
        plan["iterations"] = iterations
        if (
            "stages" not in kw
            and p.get("stages") is None
            and "duration" not in p
            and p.get("rate") is None
        ):
            # Until every VU is done (bounded by HOLD_S).
            kw["stages"] = [(0.001, users or 1), (HOLD_S, users or 1)]
            kw.pop("connections", None)
    if "stages" in p:
        kw["stages"] = [(s.duration_s, s.target) for s in parse_stages(p.pop("stages"))]
    pacing = p.pop("pacing", None)
    if pacing is not None:
        plan["pacing_s"] = parse_duration(pacing, "pacing")
    for key, arg in (
        ("rate", "rate"),
        ("duration", "duration"),
        ("threads", "threads"),
        ("max_connections", "max_connections"),
        ("timeout", "timeout"),
    ):
        if key in p:
            kw[arg] = p.pop(key)
    if p.pop("open", False):
        kw["open_model"] = True
    if p:
        raise ScenarioError(f"unknown profile option {sorted(p)[0]!r}", file)
    return kw, plan
