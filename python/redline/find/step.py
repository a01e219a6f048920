"""step: one held load as the capacity search measured it (:class:`Step`: the analysis'
:class:`~redline.analysis.step.StepResult` plus what the search adds: its judged window, the
generator's and the machine's CPU over it)."""

from __future__ import annotations

from dataclasses import dataclass

from redline.analysis.step import StepResult


@dataclass
class Step(StepResult):
    """Step is one held load as the search measured it: :class:`StepResult` plus how many
    intervals it kept after the warm-up cut and the generator's busy share over it."""

    intervals: int = 0
    #: judged_from_s: where the judged window starts, after the transition MSER cut off
    #: (``start_s`` when nothing was cut); the latency chart marks the cut intervals.
    judged_from_s: float | None = None
    generator_busy: float | None = None
    #: generator_wait: the share of the generator workers' time spent runnable without a CPU.
    generator_wait: float | None = None
    #: machine_busy: how busy this machine's CPUs were over the step (a share of their time).
    machine_busy: float | None = None
    #: generator_share: the share of this machine's CPU time redline's workers ran on.
    generator_share: float | None = None
    #: latency_rise_t: the latency rise in standard errors of its trend.
    latency_rise_t: float | None = None
    #: stalled: closed model: "flat" or "fell" when the users added bought no significant
    #: goodput over the best lighter step (two in a row fire plateau or retrograde).
    stalled: str | None = None
