"""search: the capacity search. Python decides the next load; the engine only obeys.

One live engine run serves every step (connections stay warm): :class:`Search` sets a target
through the run's control handle, holds it until the step is steady (bounded by a maximum
step time), judges the step against the stop conditions, and picks the next load:

- **sweep**: geometric growth (x2) while throughput scales with the load, smaller steps (x1.25)
  once a step gains less than half of what it added (near the knee), as Triton Model
  Analyzer's sweep and OpenMessaging's RateController grow while there is no backlog;
- **refine**: bisection between the last good and the first bad load until they are within
  ``resolution`` (5 %) of each other, as MLRsearch narrows between a pass and a fail;
- the caller confirms the answer with one full-length step (see :mod:`redline.find`).

A step is *bad* when a stop condition fires; each condition has a name that the output
carries (:data:`CONDITIONS`). Everything here is a pure function of the snapshots the engine
hands out and an injected clock, so the tests drive it with a fake engine.
"""

from __future__ import annotations

import math
import re
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from redline.analysis import SteadyPolicy, judge_steadiness, mser_cut
from redline.analysis.step import StepResult
from redline.errors import ConfigError
from redline.steps import aggregate_step

#: CONDITIONS names every stop condition and says what it means, for the output.
CONDITIONS = {
    "errors": "the error rate went over the limit",
    "slo": "a latency percentile went over its SLO bound",
    "knee": "more load bought under 5 % more throughput while latency rose",
    "backlog": "the service achieved under 95 % of the offered rate (a queue built up)",
    "unsteady": "latency kept rising through the whole step (a queue building up)",
    "service-cpu": "the service's CPU went over the limit",
    "generator": "redline itself ran out of CPU: the limit found is redline's, not the service's",
    "max-load": "the load reached the search's ceiling without a stop condition",
    "max-time": "the search ran out of time",
    "interrupted": "the search was interrupted (Ctrl-C) before it found a limit",
}

#: PERCENTILES are the percentiles an SLO may bound: the ones each interval snapshot carries.
PERCENTILES = {
    "p50": "p50_ms",
    "p90": "p90_ms",
    "p95": "p95_ms",
    "p99": "p99_ms",
    "max": "max_ms",
}

_SLO = re.compile(r"^\s*(p50|p90|p95|p99|max)\s*<\s*([0-9.]+)\s*(us|ms|s)\s*$")


@dataclass(frozen=True)
class Slo:
    """Slo bounds one latency percentile of every step, e.g. ``p99<100ms``."""

    percentile: str
    bound_ms: float

    @classmethod
    def parse(cls, text: str) -> Slo:
        """parse reads ``p99<100ms`` (p50, p90, p95, p99 or max; us, ms or s)."""
        m = _SLO.match(text)
        if not m:
            raise ConfigError(
                f"--slo: expected e.g. 'p99<100ms' (p50, p90, p95, p99 or max), got {text!r}"
            )
        scale = {"us": 1e-3, "ms": 1.0, "s": 1e3}[m.group(3)]
        return cls(m.group(1), float(m.group(2)) * scale)

    def __str__(self) -> str:
        return f"{self.percentile}<{self.bound_ms:g}ms"


@dataclass
class Limits:
    """Limits are the stop conditions' thresholds; None switches a condition off."""

    max_errors: float | None = 0.01
    slos: Sequence[Slo] = ()
    knee_gain: float | None = 0.05
    min_achieved: float | None = 0.95
    service_cpu: float | None = None
    generator_busy: float | None = 0.9


@dataclass
class Plan:
    """Plan is how the search moves: where it starts, how it grows, how long steps last."""

    model: str = "closed"
    start: float = 1.0
    ceiling: float = 1e6
    growth: float = 2.0
    near_growth: float = 1.25
    resolution: float = 0.05
    min_step_s: float = 3.0
    max_step_s: float = 15.0
    ramp_s: float = 0.0
    max_time_s: float = 180.0

    def __post_init__(self) -> None:
        if self.model not in ("closed", "open"):
            raise ConfigError(f"--model: closed or open, got {self.model!r}")
        if not self.start > 0:
            raise ConfigError(f"the starting load must be > 0, got {self.start}")
        if not self.min_step_s <= self.max_step_s:
            raise ConfigError("the minimum step time must not exceed the maximum")


@dataclass
class Step(StepResult):
    """Step is one held load as the search measured it: :class:`StepResult` plus how many
    intervals it kept after the warm-up cut and the generator's busy share over it."""

    intervals: int = 0
    generator_busy: float | None = None


class Engine(Protocol):
    """Engine is what the search drives: a live run (see ``redline._engine.start_run``)."""

    def set_target(self, value: float, ramp_s: float = 0.0) -> float: ...

    def next_snapshot(self, timeout_s: float) -> dict[str, Any] | None: ...

    @property
    def done(self) -> bool: ...


class Ended(Exception):
    """Ended: the engine run ended before the search did (max time, or stopped)."""


@dataclass
class Outcome:
    """Outcome is the search's result: every step, the best good one, and what stopped it."""

    steps: list[Step]
    best: Step | None
    broke: Step | None
    reason: str
    detail: str

    @property
    def good(self) -> list[Step]:
        """good: the steps where no stop condition fired."""
        return [s for s in self.steps if s.ok]


#: Sampler gives extra per-step figures: the service's (CPU %, fds, RSS) and the generator's
#: busy ratio, over a time window of the run in seconds.
Sampler = Callable[[float, float], dict[str, float]]


class Search:
    """Search steps the load of a live run until a stop condition fires, then refines.

    ``engine`` is the live run; ``sample(t0, t1)`` returns the monitor's and the generator's
    figures for a window (keys ``service_cpu``, ``generator_busy``, ...); ``on_step`` hears
    each step as it is judged, ``on_snapshot`` each interval as it arrives.
    """

    def __init__(
        self,
        engine: Engine,
        plan: Plan,
        limits: Limits,
        *,
        sample: Sampler | None = None,
        on_step: Callable[[Step], None] | None = None,
        on_snapshot: Callable[[dict[str, Any], float, str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        interval_s: float = 1.0,
    ):
        self.engine = engine
        self.plan = plan
        self.limits = limits
        self.sample = sample
        self.on_step = on_step
        self.on_snapshot = on_snapshot
        self.clock = clock
        self.deadline = clock() + plan.max_time_s
        self.steps: list[Step] = []
        self.interval_s = interval_s

    # -- the loop -------------------------------------------------------------------------

    def run(self) -> Outcome:
        """run sweeps, then refines; it returns when the answer is within the resolution."""
        try:
            good, bad = self._sweep()
            if good is not None and bad is not None:
                good, bad = self._refine(good, bad)
            # Leave the service as the confirmation step should find it: without a queue.
            self._recover(good)
        except Ended:
            good = max(self._good(), key=lambda s: s.load, default=None)
            bad = None
            return self._outcome(good, bad, "max-time", "the run ended before the search did")
        if bad is None:
            if self.clock() >= self.deadline:
                return self._outcome(good, None, "max-time", "the search ran out of time")
            return self._outcome(good, None, "max-load", f"no limit up to {self.plan.ceiling:g}")
        return self._outcome(good, bad, bad.fired[0], bad.why)

    def interrupted(self) -> Outcome:
        """interrupted is the outcome of the steps that ran, after a Ctrl-C."""
        good = max(self._good(), key=lambda s: s.load, default=None)
        bad = min((s for s in self.steps if not s.ok), key=lambda s: s.load, default=None)
        return self._outcome(good, bad, "interrupted", CONDITIONS["interrupted"])

    def optimal(self) -> Step | None:
        """optimal is the good step with the most throughput per unit of latency (Kleinrock's
        power): where a soak holds the load."""
        good = [s for s in self._good() if s.latency_ms > 0]
        return max(good, key=lambda s: s.throughput_rps / s.latency_ms, default=None)

    def _good(self) -> list[Step]:
        return [s for s in self.steps if s.ok]

    def _outcome(self, good: Step | None, bad: Step | None, reason: str, why: str) -> Outcome:
        best = max(self._good(), key=lambda s: s.throughput_rps, default=None)
        return Outcome(self.steps, best or good, bad, reason, why)

    def _sweep(self) -> tuple[Step | None, Step | None]:
        load = self._round(self.plan.start)
        prev: Step | None = None
        while self.clock() < self.deadline:
            step = self._hold(load, "sweep", prev)
            if not step.ok:
                return prev, step
            growth = self.plan.growth
            if prev is not None and step.load > prev.load and prev.throughput_rps > 0:
                added = step.load / prev.load - 1
                gained = step.throughput_rps / prev.throughput_rps - 1
                if gained < added / 2:
                    growth = self.plan.near_growth
            prev = step
            nxt = self._round(min(load * growth, self.plan.ceiling))
            if nxt <= load:
                return prev, None
            load = nxt
        return prev, None

    def _refine(self, good: Step, bad: Step) -> tuple[Step, Step]:
        while self.clock() < self.deadline:
            if bad.load - good.load <= self.plan.resolution * good.load:
                break
            mid = self._round(math.sqrt(good.load * bad.load))
            if mid <= good.load or mid >= bad.load:
                break
            self._recover(good)
            step = self._hold(mid, "refine", good)
            if step.ok:
                good = step
            else:
                bad = step
        return good, bad

    def _recover(self, good: Step | None) -> None:
        """_recover lets a queue drain after an overloaded step: past capacity the open model
        leaves a backlog that never drains while the offered rate stays above capacity, and it
        would be charged to the next step. It holds half the last good load until the median
        latency is back within 1.5x of that step's (bounded by the maximum step time)."""
        last = self.steps[-1] if self.steps else None
        if good is None or last is None or last.ok or last.p50_ms <= 1.5 * good.p50_ms:
            return
        load = self._round(max(good.load / 2, self.plan.start))
        at = self.engine.set_target(load, 0.0)
        while self.clock() < self.deadline:
            snap = self.engine.next_snapshot(1.0)
            if snap is None:
                if self.engine.done:
                    raise Ended()
                continue
            if self.on_snapshot is not None:
                self.on_snapshot(snap, load, "drain")
            t1 = float(snap["t_s"])
            if t1 - self.interval_s < at - 0.001:
                continue
            if float(snap.get("p50_ms", 0)) <= 1.5 * good.p50_ms or t1 >= at + self.plan.max_step_s:
                return

    def _round(self, load: float) -> float:
        # VUs are whole; rates keep three significant figures.
        if self.plan.model == "closed":
            return float(max(1, math.ceil(load - 1e-9)))
        return float(f"{load:.3g}")

    # -- one step -------------------------------------------------------------------------

    def _hold(self, load: float, phase: str, prev: Step | None) -> Step:
        """_hold sets the load, waits out the ramp, collects intervals until the step is steady
        (or the maximum step time passes, or it is plainly bad), and judges it."""
        at = self.engine.set_target(load, self.plan.ramp_s)
        settle = at + self.plan.ramp_s
        got: list[dict[str, Any]] = []
        while True:
            if self.clock() >= self.deadline and got:
                break
            snap = self.engine.next_snapshot(1.0)
            if snap is None:
                if self.engine.done:
                    raise Ended()
                continue
            t1 = float(snap["t_s"])
            if self.on_snapshot is not None:
                self.on_snapshot(snap, load, phase)
            if not got and t1 - self.interval_s < settle - 0.001:
                # An interval that began before the new load settled measures the old one.
                continue
            got.append(snap)
            span = t1 - (float(got[0]["t_s"]) - self.interval_s)
            if span >= self.plan.max_step_s:
                break
            if span >= self.plan.min_step_s and (self._steady(got) or self._plainly_bad(got)):
                break
        step = self._measure(len(self.steps), phase, load, got)
        self._judge(step, prev, got)
        self.steps.append(step)
        if self.on_step is not None:
            self.on_step(step)
        return step

    def _policy(self) -> SteadyPolicy:
        # Sub-second intervals are noisy: batch them (MSER-5) below 1 s; keep >= 2.5 s.
        batch = 5 if self.interval_s < 1.0 else 1
        return SteadyPolicy(batch=batch, min_windows=max(3, math.ceil(2.5 / self.interval_s)))

    def _steady(self, got: list[dict[str, Any]]) -> bool:
        """_steady: the step's throughput and p99 are flat after MSER's warm-up cut."""
        tput = [float(s.get("requests", 0)) for s in got]
        p99 = [float(s.get("p99_ms", 0)) for s in got]
        return judge_steadiness(tput, p99, self._policy()).steady

    def _plainly_bad(self, got: list[dict[str, Any]]) -> bool:
        """_plainly_bad: errors far over the limit, or (open model) latency that doubles
        through the step, need no steadiness to be judged."""
        lim = self.limits.max_errors
        req = sum(int(s.get("requests", 0)) for s in got)
        err = sum(int(s.get("errors", 0)) for s in got)
        if lim is not None and err > 2 * lim * max(req + err, 1) and err >= 20:
            return True
        p50 = [float(s.get("p50_ms", 0)) for s in got]
        return self.plan.model == "open" and len(p50) >= 6 and _trend(p50) > 1.0

    def _measure(self, index: int, phase: str, load: float, got: list[dict[str, Any]]) -> Step:
        t0 = float(got[0]["t_s"]) - self.interval_s
        t1 = float(got[-1]["t_s"])
        # The steady part: MSER cuts the warm-up of the step's throughput series.
        policy = self._policy()
        tput = [float(s.get("requests", 0)) for s in got]
        cut = mser_cut(tput, policy.batch)
        used = got[cut:] if len(got) - cut >= 2 else got
        span = max(float(used[-1]["t_s"]) - float(used[0]["t_s"]) + self.interval_s, 1e-9)
        req = sum(int(s.get("requests", 0)) for s in used)
        offered = [float(s["intended_rate"]) for s in used if s.get("intended_rate") is not None]
        figures = self.sample(t0, t1) if self.sample is not None else {}
        return Step(
            index=index,
            model=self.plan.model,
            phase=phase,
            load=load,
            start_s=round(t0, 3),
            end_s=round(t1, 3),
            intervals=len(used),
            throughput_rps=req / span,
            offered_rps=statistics.fmean(offered) if offered else None,
            steady=judge_steadiness(tput, None, policy).steady,
            generator_busy=figures.pop("generator_busy", None),
            service=figures,
            # Percentiles from the merged histograms, errors by class, mean in-flight.
            **aggregate_step(used),
        )

    def _judge(self, step: Step, prev: Step | None, got: list[dict[str, Any]]) -> None:
        """_judge fires the stop conditions that hold for `step` (against the last good
        step `prev`), naming each with its figures."""
        lim = self.limits
        why: list[str] = []
        if lim.generator_busy is not None and (step.generator_busy or 0) > lim.generator_busy:
            step.fired.append("generator")
            why.append(
                f"redline's worker threads ran or waited for a CPU {step.generator_busy:.0%}"
                " of the time"
            )
        if lim.max_errors is not None and step.error_rate > lim.max_errors:
            step.fired.append("errors")
            why.append(f"{step.error_rate:.1%} of requests failed (limit {lim.max_errors:.1%})")
        for slo in lim.slos:
            figure = getattr(step, PERCENTILES[slo.percentile])
            if figure is None:
                continue  # snapshots without histograms carry no p95
            value = float(figure)
            if value > slo.bound_ms:
                step.fired.append("slo")
                why.append(f"{slo.percentile} was {value:.1f} ms (SLO {slo})")
        if (
            lim.min_achieved is not None
            and step.offered_rps
            and step.throughput_rps < lim.min_achieved * step.offered_rps
        ):
            step.fired.append("backlog")
            why.append(f"achieved {step.throughput_rps:.0f}/s of {step.offered_rps:.0f}/s offered")
        if lim.service_cpu is not None and step.service.get("cpu_percent", 0) > lim.service_cpu:
            step.fired.append("service-cpu")
            why.append(
                f"the service used {step.service['cpu_percent']:.0f} % CPU"
                f" (limit {lim.service_cpu:g} %)"
            )
        if (
            lim.knee_gain is not None
            and prev is not None
            and step.load > prev.load
            and prev.throughput_rps > 0
        ):
            gain = step.throughput_rps / prev.throughput_rps - 1
            if gain < lim.knee_gain and step.p50_ms > prev.p50_ms:
                step.fired.append("knee")
                why.append(
                    f"{step.load / prev.load - 1:+.0%} load bought {gain:+.1%} throughput"
                    f" while p50 rose {prev.p50_ms:.1f} -> {step.p50_ms:.1f} ms"
                )
        if self.plan.model == "open" and rising(got):
            step.fired.append("unsteady")
            why.append("latency kept rising through the step")
        step.why = "; ".join(why)


def rising(got: Sequence[dict[str, Any]]) -> bool:
    """rising: median latency climbs through the step by more than 20 % of its mean: the
    signature of a queue that keeps growing (an open-model load past capacity)."""
    return len(got) >= 6 and _trend([float(s.get("p50_ms", 0)) for s in got]) > 0.2


def _trend(vals: list[float]) -> float:
    """_trend is the least-squares rise over the series as a share of its mean."""
    mean = statistics.fmean(vals)
    if len(vals) < 2 or mean <= 0 or len(set(vals)) == 1:
        return 0.0
    slope = statistics.linear_regression(range(len(vals)), vals).slope
    return slope * (len(vals) - 1) / mean
