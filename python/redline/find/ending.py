"""ending: how a capacity search ends: its :class:`Outcome` (the steps, the steady, optimal
and breaking ones, the condition that stopped it), a :class:`Collapse` when the service did
not recover, and the exceptions that end a search early (:class:`Ended`, :class:`OutOfTime`,
:class:`Starved`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from redline.analysis.outcome import Meter
from redline.find.step import Step


class Ended(Exception):
    """Ended: the engine run ended before the search did (max time, or stopped)."""


class OutOfTime(Exception):
    """OutOfTime: the search's deadline passed before a step had enough intervals."""


class Starved(Exception):
    """Starved: a recovery could not be judged because redline itself was out of CPU, in the
    overload or in the check after it; ``step`` is the step that named the generator."""

    def __init__(self, step: Step) -> None:
        super().__init__(step.why)
        self.step = step


@dataclass
class Collapse:
    """Collapse records a service that did not recover: the overloaded step, the load it was
    dropped to, and for how long it was watched."""

    step: int
    load: float
    check_load: float
    waited_s: float
    check_p99_ms: float | None = None
    check_throughput_rps: float | None = None


@dataclass
class Outcome:
    """Outcome is the search's result: every step, the steady-state step (``best``: the
    lightest load that got the most goodput in the closed model, the highest good rate in
    the open one), the optimal step, the step where it failed (``broke``), which condition
    stopped the search and why, and a :class:`Collapse` when the service did not recover."""

    steps: list[Step]
    best: Step | None
    broke: Step | None
    reason: str
    detail: str
    optimal: Step | None = None
    collapse: Collapse | None = None
    notes: list[str] = field(default_factory=list)
    #: spoiled: the steps a lost injector cut into, not judged (see Search.spoiled).
    spoiled: list[dict[str, Any]] = field(default_factory=list)

    @property
    def good(self) -> list[Step]:
        """good: the steps where no stop condition fired."""
        return [s for s in self.steps if s.ok]


def no_recovery_detail(c: Collapse, model: str, meter: Meter) -> str:
    """no_recovery_detail says where the service collapsed, how long it was watched at which
    load, and what it still got there."""
    unit = "users" if model == "closed" else "req/s"
    if not c.check_throughput_rps:
        got = " (no answer passed)"
    elif c.check_p99_ms is not None:
        got = f" (it got {c.check_throughput_rps:.0f} {meter.unit}, p99 {c.check_p99_ms:.0f} ms)"
    else:
        got = ""
    return (
        f"collapsed at {c.load:g} {unit} and did not recover within {c.waited_s:.0f} s"
        f" at {c.check_load:g} {unit}{got}"
    )


def spoiled_text(spoiled: dict[str, Any], model: str) -> str:
    """spoiled_text says which step a lost injector spoiled and what became of it."""
    unit = "users" if model == "closed" else "req/s"
    then = (
        "measured again on the injectors left"
        if spoiled["measured_again"]
        else "the run stopped on it (--on-injector-loss fail)"
    )
    return (
        f"the {spoiled['phase']} step at {spoiled['load']:g} {unit} ({spoiled['from_s']:.1f}"
        f"-{spoiled['to_s']:.1f} s) was spoiled by a lost injector ({spoiled['lost']}),"
        f" carrying {100 * spoiled['lost_share']:.0f} % of its load: not judged; {then}"
        if spoiled.get("lost_share") is not None
        else f"the {spoiled['phase']} step at {spoiled['load']:g} {unit}"
        f" ({spoiled['from_s']:.1f}-{spoiled['to_s']:.1f} s) was spoiled by a lost injector"
        f" ({spoiled['lost']}): not judged; {then}"
    )
