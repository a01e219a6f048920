"""rules: what the capacity search judges a step by. The stop conditions and what each
means, the thresholds behind them (each with the figures it was set from), the SLO bound
grammar (``p99<100ms``), the limits a search is given, and the judgements on one step or
two that the search (:mod:`redline.find.search`) applies: is it saturated or collapsed, did
it leave a queue behind. Whether the generator was the limit is
:mod:`redline.analysis.generator`'s rule (the bottleneck at the limit reads it too)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from redline.analysis.generator import BUSY
from redline.analysis.step import StepResult
from redline.errors import ConfigError
from redline.find.step import MIN_DEFICIT as MIN_DEFICIT  # said once, by the step
from redline.find.step import Step
from redline.scenario.thresholds import SNAPSHOT_KEY, Threshold
from redline.scenario.thresholds import parse as parse_threshold
from redline.window import STREAM_FIGURES

#: CONDITIONS names every stop condition and says what it means, for the output.
CONDITIONS = {
    "errors": "the error rate went over the limit",
    "slo": "a latency percentile went over its SLO bound",
    "backlog": "the service completed less than was offered: a queue grew through the step",
    "collapse": "throughput fell far below what a lighter load got: the service collapsed",
    "plateau": "more load bought no more throughput (two steps in a row, or a run of steps"
    " over twice the load)",
    "retrograde": "throughput fell as the load grew, over two consecutive steps",
    "no-recovery": "after an overload the service did not recover when the load was dropped",
    "knee": "the optimal point was passed and --stop-at-knee asked to stop there",
    "service-cpu": "the service's CPU went over the limit",
    "generator": "redline itself ran out of CPU: the limit found is redline's, not the service's",
    "max-load": "the load reached the search's ceiling without a stop condition",
    "max-time": "the search ran out of time",
    "interrupted": "the search was interrupted (Ctrl-C) before it found a limit",
}

#: PERCENTILES are the latency figures an SLO may bound: the ones each step carries (the
#: thresholds' table, so that ``--slo`` and ``--threshold`` read one grammar).
PERCENTILES = SNAPSHOT_KEY

#: LINEAR: an elasticity at or above this is still linear scaling (keep doubling the load).
LINEAR = 0.9

#: QUEUEING: an open-model step whose mean latency is over this multiple of the service's
#: own (plus 0.5 ms) shows a queue forming; the sweep then grows by near_growth, not x2.
QUEUEING = 1.1

#: COLLAPSED: an overloaded step whose goodput fell under this share of the best lighter
#: step's has collapsed rather than saturated.
COLLAPSED = 0.8

#: KNEE_DROP: with --stop-at-knee, the search stops once a step's power is this much under
#: the best lighter step's (past the optimal point).
KNEE_DROP = 0.05

#: FLAT: a closed-model step is flat when even the upper bound of its gain is under this
#: share of the load it added (proportional scaling would gain all of it).
FLAT = 0.25

#: FLAT_RUN_STEPS and FLAT_RUN_SPAN: a run of steps that agree on one goodput is a plateau
#: (when one fit's elasticity is confidently under FLAT) only with at least this many steps
#: over at least this factor of load: two or three noisy steps near a peak agree as well,
#: and twice the load is where a contention peak's fall shows (with no serial share, the
#: USL falls by a fifth from its peak to twice its users).
FLAT_RUN_STEPS = 4
FLAT_RUN_SPAN = 2.0

#: SATURATED_SE: an overloaded step's goodput stands for the capacity only when its standard
#: error is within this share of it.
SATURATED_SE = 0.02


@dataclass(frozen=True)
class Slo:
    """Slo bounds one latency percentile of every step, e.g. ``p99<100ms``, or one of a
    stream figure's (``--stream``): ``ttft_p99<500ms``, ``itl_p99<50ms``,
    ``first_byte_p99<1s``, ``chunk_gap_p99<100ms`` (:data:`redline.window.STREAM_FIGURES`)."""

    percentile: str
    bound_ms: float
    #: figure: the stream figure bounded, None for the latency.
    figure: str | None = None

    @classmethod
    def parse(cls, text: str) -> Slo:
        """parse reads ``p99<100ms``: a threshold (:mod:`redline.scenario.thresholds`'s
        grammar) that bounds one of the latency figures a step carries from above, the
        latency's or a stream figure's."""
        try:
            t: Threshold | None = parse_threshold(text)
        except ConfigError:
            t = None
        bounded = t is not None and t.name is None and t.op in ("<", "<=")
        if t is None or not bounded or t.metric not in PERCENTILES:
            raise ConfigError(
                f"--slo: expected a latency bound such as 'p99<100ms' ({', '.join(PERCENTILES)};"
                f" us, ms or s), or a stream figure's such as 'ttft_p99<500ms'"
                f" ({', '.join(STREAM_FIGURES)}), got {text!r}"
            )
        return cls(t.metric, t.value, t.figure)

    def breached(self, figure: float) -> bool:
        """breached: a step's figure is over the bound."""
        return figure > self.bound_ms

    def of(self, step: Step) -> float | None:
        """of is the step's figure this SLO bounds (None: the step did not measure it, e.g.
        a snapshot without histograms carries no p95, a step without a token no TTFT)."""
        if self.figure is None:
            got = getattr(step, PERCENTILES[self.percentile])
        else:
            got = (step.stream.get(self.figure) or {}).get(PERCENTILES[self.percentile])
        return None if got is None else float(got)

    @property
    def name(self) -> str:
        """name is what the SLO bounds: ``p99``, ``ttft_p99``."""
        return f"{self.figure}_{self.percentile}" if self.figure else self.percentile

    def __str__(self) -> str:
        return f"{self.name}<{self.bound_ms:g}ms"


@dataclass
class Limits:
    """Limits are the stop conditions' thresholds; None switches a condition off."""

    max_errors: float | None = 0.01
    slos: Sequence[Slo] = ()
    service_cpu: float | None = None
    #: generator_busy: redline's workers runnable this share of the time ran out (the one
    #: generator rule, :func:`redline.analysis.generator.generator_limited`).
    generator_busy: float | None = BUSY


#: JUDGED_ELSEWHERE: phases whose bad steps are not the limit: a recovery check is judged by
#: the recovery (a collapse), a confirmation or a soak by the answers.
JUDGED_ELSEWHERE = ("recover", "confirm", "soak")

#: PRIORITY: which fired condition names a bad step's failure, most telling first.
PRIORITY = (
    "generator",
    "collapse",
    "errors",
    "slo",
    "backlog",
    "service-cpu",
    "retrograde",
    "plateau",
    "knee",
)


def priority(name: str) -> int:
    return PRIORITY.index(name) if name in PRIORITY else len(PRIORITY)


def phase_compares(phase: str) -> bool:
    """phase_compares: steps of this phase take part in the plateau test (the recovery
    checks and the confirmation repeat a load; they are not new evidence of growth)."""
    return phase in ("sweep", "refine", "peak", "optimum")


def power(s: StepResult) -> float:
    return s.throughput_rps / s.latency_ms if s.latency_ms > 0 else 0.0


def saturated(bad: Step, good: Step) -> bool:
    """_saturated: an overloaded open-model step that still got (about) its best goodput:
    a backlog or refusals at capacity (an SLO its queue breached included), not a collapse,
    and a goodput steady enough to be the capacity (its standard error within 2 %; a step
    that stalled part of the way measured a transient, not the capacity)."""
    kinds = set(bad.fired)
    precise = (bad.throughput_se or 0.0) <= SATURATED_SE * bad.throughput_rps
    return (
        bool(kinds & {"backlog", "errors"})
        and not kinds & {"collapse", "generator"}
        and precise
        and bad.throughput_rps >= COLLAPSED * good.throughput_rps
    )


def overloaded(last: Step, good: Step) -> bool:
    """_overloaded: the last step may have left a queue behind (a backlog, a collapse,
    timeouts, or latency far above the good step's), so the next must wait for a drain."""
    if set(last.fired) & {"backlog", "collapse", "slo"}:
        return True
    if last.errors_by_class.get("timeout"):
        return True
    return last.latency_ms > 2 * good.latency_ms + 1.0
