"""step: one held load as the capacity search measured it (:class:`Step`: the analysis'
:class:`~redline.analysis.step.StepResult` plus what the search adds: its judged window, the
generator's and the machine's CPU over it)."""

from __future__ import annotations

from dataclasses import dataclass, field

from redline.analysis.evidence import Z
from redline.analysis.step import StepResult

#: MIN_DEFICIT: a backlog must grow by at least this share of the goodput a second (the
#: open model's deficit rule, :data:`redline.find.rules.MIN_DEFICIT`, says the same of the
#: offered rate).
MIN_DEFICIT = 0.02


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
    #: redline_share: the share of this machine's CPU time redline's whole process took (its
    #: workers, and its Python: the search, the watching, the scenario's steps).
    redline_share: float | None = None
    #: latency_rise_t: the latency rise in standard errors of its trend.
    latency_rise_t: float | None = None
    #: stalled: closed model: "flat" or "fell" when the users added bought no significant
    #: goodput over the best lighter step (two in a row fire plateau or retrograde).
    stalled: str | None = None
    #: parts: each watched part's figures over the step (``--watch``; keys as
    #: :class:`redline.service.monitor.Sample`'s and its ``extra``'s).
    parts: dict[str, dict[str, float]] = field(default_factory=dict)
    #: backlog_mean: the work waiting (``--backlog``'s gauge) over the judged window.
    backlog_mean: float | None = None
    #: backlog_growth_rps: how fast that backlog grew through the window (a least-squares
    #: slope, units a second), and ``backlog_growth_t`` that growth in standard errors.
    backlog_growth_rps: float | None = None
    backlog_growth_t: float | None = None
    #: stream: ``--stream``: each stream figure the step measured (``first_byte``,
    #: ``chunk_gap``, ``ttft``, ``itl``), its percentiles keyed as the latency's
    #: (``p99_ms``), ``mean_ms``, ``max_ms`` and ``count``, from its intervals' merged
    #: histograms; what a stream SLO (``ttft_p99<500ms``) judges.
    stream: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def backlog_growing(self) -> bool:
        """backlog_growing: the work waiting grew through the judged window
        (:func:`backlog_moves`): the service did not keep up with this load."""
        return self._backlog_moves() > 0

    @property
    def backlog_moving(self) -> bool:
        """backlog_moving: the work waiting grew or drained through the judged window: either
        way the work completed is not what this load sustains (a draining queue completes
        the work of the load before)."""
        return self._backlog_moves() != 0

    def _backlog_moves(self) -> int:
        span = self.end_s - (self.judged_from_s if self.judged_from_s is not None else self.start_s)
        return backlog_moves(
            self.backlog_growth_rps, self.backlog_growth_t, self.throughput_rps, span
        )


def backlog_moves(growth_rps: float | None, t: float | None, goodput: float, span_s: float) -> int:
    """backlog_moves: +1 when a backlog grew, -1 when it drained, 0 when it held still (or
    there is none). It moved when its trend is significant (more than Z standard errors) and
    material (more than MIN_DEFICIT of the ``goodput`` a second, and more than one unit over
    ``span_s``): a queue the service does not keep up with, or one the load before left."""
    if growth_rps is None or t is None:
        return 0
    if abs(t) <= Z or abs(growth_rps) <= MIN_DEFICIT * goodput or abs(growth_rps) * span_s <= 1:
        return 0
    return 1 if growth_rps > 0 else -1
