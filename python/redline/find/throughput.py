"""throughput: what ``--throughput`` counts in a search (a :class:`~redline.analysis.outcome.Meter`:
requests, a scenario's iterations, one request name, one value of its tally, or the service's
own counter of completed work), checked against the scenario's compiled plan before any load;
and the probe that reads the service's counter and ``--backlog`` gauge each interval."""

from __future__ import annotations

from typing import Any

from redline.analysis.outcome import Meter
from redline.errors import ConfigError


def search_meter(throughput: str, plan: dict[str, Any] | None) -> Meter:
    """search_meter checks what ``--throughput`` counts: requests, a scenario's iterations,
    one of its request names, the answers of a tallied name that said one value, or the
    service's own counter of completed work (``prometheus:URL#SERIES``), optionally
    labelled (``submit=tasks`` and ``status:SUCCEEDED=tasks`` answer in tasks/s)."""
    try:
        meter = Meter.parse(throughput)
    except ValueError as e:
        raise ConfigError(f"--throughput {e}") from None
    if meter.what == "requests":
        return meter
    if meter.what == "work":
        from redline.service.work import Series

        Series.parse(meter.spec, "--throughput")
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


def work_probe(meter: Meter, backlog: str | None, interval_s: float) -> Any:
    """work_probe is the :class:`~redline.service.work.WorkProbe` that reads the service's
    own counter (a work meter's) and ``backlog`` gauge into each snapshot, primed (its
    first reading taken, its series checked) and scraping; None when neither is asked for.
    The live run stops it (:meth:`LiveRun.finish`)."""
    if meter.what != "work" and backlog is None:
        return None
    from redline.service.work import Series, WorkProbe

    done = Series.parse(meter.spec, "--throughput") if meter.what == "work" else None
    waiting = Series.parse(backlog, "--backlog") if backlog is not None else None
    # Scraped in a thread of its own, twice an interval: a service the search overloads
    # answers its /metrics late, and the search reads the latest reading without waiting.
    probe = WorkProbe(done, waiting, timeout_s=max(2.0, 4 * interval_s))
    probe.prime()
    return probe.start(interval_s / 2)
