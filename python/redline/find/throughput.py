"""throughput: what ``--throughput`` counts in a search (a :class:`~redline.analysis.outcome.Meter`:
requests, a scenario's iterations, one request name, or one value of its tally), checked
against the scenario's compiled plan before any load."""

from __future__ import annotations

from typing import Any

from redline.analysis.outcome import Meter
from redline.errors import ConfigError


def search_meter(throughput: str, plan: dict[str, Any] | None) -> Meter:
    """_meter checks what ``--throughput`` counts: requests, a scenario's iterations, one of
    its request names, or the answers of a tallied name that said one value, optionally
    labelled (``submit=tasks`` and ``status:SUCCEEDED=tasks`` answer in tasks/s)."""
    try:
        meter = Meter.parse(throughput)
    except ValueError as e:
        raise ConfigError(f"--throughput {e}") from None
    if meter.what == "requests":
        return meter
    if plan is None:
        raise ConfigError(
            f"--throughput {throughput}: only a scenario has iterations, names or tallies"
        )
    if meter.what == "iterations":
        return meter
    names = plan_names(plan)
    if meter.what not in names:
        listed = ", ".join(sorted(names)) or "none"
        raise ConfigError(
            f"--throughput {meter.what}: not a request name of the scenario (names: {listed})"
        )
    if meter.value is not None and meter.what not in plan_names(plan, tallied=True):
        raise ConfigError(
            f"--throughput {throughput}: the scenario's '{meter.what}' requests have no"
            f' tally (write tally="$.status" on them)'
        )
    return meter


def plan_names(plan: dict[str, Any], tallied: bool = False) -> set[str]:
    """_plan_names are the request names a compiled plan records under (``tallied``: only
    those of requests that tally a value)."""
    out: set[str] = set()

    def walk(v: Any) -> None:
        if isinstance(v, dict):
            name = v.get("name")
            request = "method" in v or "path" in v or "url" in v
            if isinstance(name, str) and request and (v.get("tally") or not tallied):
                out.add(name)
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(plan)
    return out
