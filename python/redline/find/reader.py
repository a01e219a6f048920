"""reader: how a held load's intervals are read. :class:`Reader` says when a step's
intervals are enough to judge (steady, or plainly bad) and what :class:`Step` they measured:
goodput and its standard error, the warm-up left out (MSER), the latency trend, Little's
law, the offered rate against the ends. :class:`redline.find.search.Search` moves the load
and holds it; this reads what the holding produced.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from redline.analysis.evidence import queue_rise_floor_ms, rate_se, trend, walk_t
from redline.analysis.outcome import Meter
from redline.analysis.steady import little_holds, mser_cut, steady_counts, steady_window
from redline.find.rules import Limits
from redline.find.step import Step, backlog_moves
from redline.find.steps import aggregate_step

#: Sampler gives extra per-step figures: the service's (CPU %, fds, RSS) and the generator's
#: busy ratio, over a time window of the run in seconds.
Sampler = Callable[[float, float], dict[str, Any]]


class Reader:
    """Reader reads the intervals of the search's steps: the ``model`` (closed or open),
    ``min_outcomes`` (the least outcomes a steady step needs), ``limits`` (the error budget,
    the SLOs), ``meter`` (what throughput counts), ``interval_s``, the search's ``steps`` so
    far (the service's own latency is the lowest of the good ones) and ``sample(t0, t1)``
    (the monitor's and the generator's figures for a window)."""

    def __init__(
        self,
        model: str,
        min_outcomes: int,
        limits: Limits,
        meter: Meter,
        interval_s: float,
        steps: Sequence[Step],
        sample: Sampler | None = None,
    ):
        self.model = model
        self.min_outcomes = min_outcomes
        self.limits = limits
        self.meter = meter
        self.interval_s = interval_s
        self.steps = steps
        self.sample = sample
        #: max_step_s and clock: the search's longest step and its clock (set by the search).
        self.max_step_s = math.inf
        self.clock: Callable[[], float] = time.monotonic

    def enough(self, got: list[dict[str, Any]], load: float) -> bool:
        """enough: the step can be judged now: plainly bad, or steady with enough outcomes."""
        used = got[self.cut(got) :]
        ends = self.meter.total(used)
        failures = self.meter.errors.total(used)
        lim = self.limits.max_errors
        if lim is not None and failures.failed >= 20 and failures.error_rate > 2 * lim:
            return True
        if len(used) < self.min_windows():
            return False
        if self.model == "open" and len(used) >= 6:
            rise = self.latency_trend(used)
            if rise.significant() and rise.rise > 4 * self.queue_floor():
                return True
        if ends.total < self.min_outcomes:
            return False
        counts = [float(self.meter.count(s).total) for s in used]
        if not steady_counts(counts):
            return False
        cycle = self.cycle_s(used, load)
        if cycle is not None and len(used) * self.interval_s < cycle:
            # Fewer seconds than one iteration of the users: users who joined at this step
            # have not been through their flow once (a queue inside the service, which
            # their polls hide, has not shown in the rate yet).
            return False
        if not little_holds(used, len(used) * self.interval_s):
            # A backlog of the step before still draining through the window (or one
            # building): the rate is no sustained one yet.
            return False
        if self.backlog_moves(used):
            # The work waiting still grows (the service has not caught up with this load, or
            # cannot) or drains (the load before left it): wait for it to settle, up to the
            # longest step.
            return False
        rise = self.latency_trend(used)
        return not (rise.significant() and rise.rise > self.queue_floor())

    def draining(
        self,
        before: list[dict[str, Any]],
        snap: dict[str, Any],
        settle: float,
        fixed_s: float | None,
        end_by: float | None,
    ) -> bool:
        """draining: a held step (the confirmation, the soak) waits while the work waiting
        (``--backlog``) drains: a queue the load before left would be completed in its window
        and read as what this load sustains. It waits at most the longest step
        (``max_step_s``), and none past what keeps the step inside ``end_by`` (on
        ``clock``); ``before`` keeps the intervals waited."""
        if fixed_s is None or (snap.get("work") or {}).get("backlog") is None:
            return False
        if float(snap["t_s"]) >= settle + self.max_step_s:
            return False
        if end_by is not None and self.clock() + fixed_s >= end_by:
            return False
        before.append(snap)
        return len(before) < 4 or self.backlog_moves(before[-4:]) < 0

    def backlog_trend(self, used: Sequence[dict[str, Any]]) -> Any:
        """backlog_trend: the ``--backlog`` gauge's trend over the intervals that read it (a
        trend of no points without one)."""
        pts = [
            (float(s["t_s"]), float(b))
            for s in used
            if (b := (s.get("work") or {}).get("backlog")) is not None
        ]
        return trend([p[0] for p in pts], [p[1] for p in pts])

    def backlog_moves(self, used: Sequence[dict[str, Any]]) -> int:
        """backlog_moves: +1 the intervals' backlog grew, -1 it drained, 0 it held still or
        there is none (:func:`~redline.find.step.backlog_moves`, against the goodput they
        counted)."""
        got = self._backlog_figures(used)
        if got is None:
            return 0
        span = len(used) * self.interval_s
        good = self.meter.total(used).good / span
        return backlog_moves(got["backlog_growth_rps"], got["backlog_growth_t"], good, span)

    def _backlog_figures(self, used: Sequence[dict[str, Any]]) -> dict[str, float | None] | None:
        """_backlog_figures: the backlog's mean, growth a second and its t over ``used``
        (None without a backlog gauge)."""
        rise = self.backlog_trend(used)
        if rise.points == 0:
            return None
        span = max(float(used[-1]["t_s"]) - float(used[0]["t_s"]), 1e-9)
        t = rise.t if rise.points >= 4 else None
        if t is not None and t > 0 and self.model == "closed":
            # The closed model's users wait for their work: its queue is bounded by them and
            # wanders about its level as they come and go, a walk a line takes for a trend
            # (the demo's confirmation at its plateau, 25-47 waiting: t 4.6, a limit fired).
            # A growth is one as a walk too (a drain still counts by the line: the load
            # before's work completing in this step's window).
            waiting = [
                float(b) for s in used if (b := (s.get("work") or {}).get("backlog")) is not None
            ]
            t = min(t, walk_t(waiting))
        return {
            "backlog_mean": rise.mean,
            "backlog_growth_rps": rise.rise / span if rise.points >= 3 else None,
            "backlog_growth_t": t,
        }

    def cycle_s(self, used: Sequence[dict[str, Any]], users: float) -> float | None:
        """cycle_s is how long one iteration of a scenario's users takes over ``used``
        (Little's law on the users: users ÷ iterations ended a second), in the closed model;
        None for a URL run or the open model (no users cycling through a flow)."""
        if self.model != "closed" or not used:
            return None
        ended = [ends_of(s) for s in used if isinstance(s.get("iterations"), dict)]
        if len(ended) < len(used):
            return None
        rate = sum(ended) / (len(used) * self.interval_s)
        return users / rate if rate > 0 else math.inf

    def min_windows(self) -> int:
        """min_windows: the fewest intervals a step is judged on (at least 2 s of them)."""
        return max(4, math.ceil(2.0 / self.interval_s))

    def cut(self, got: Sequence[dict[str, Any]]) -> int:
        """cut is the warm-up to drop: MSER on the goodput counts and on the mean latency,
        the later of the two (within the first half)."""
        batch = 5 if self.interval_s < 1.0 and len(got) >= 20 else 1
        counts = [float(self.meter.count(s).total) for s in got]
        means = [float(s.get("mean_ms", s.get("p50_ms", 0)) or 0) for s in got]
        cut = max(mser_cut(counts, batch), mser_cut(means, batch))
        return cut if len(got) - cut >= 2 else 0

    def latency_trend(self, used: Sequence[dict[str, Any]]) -> Any:
        """latency_trend: the mean latency's trend over the intervals that had answers."""
        pts = [
            (float(s["t_s"]), float(s.get("mean_ms", s.get("p50_ms", 0)) or 0))
            for s in used
            if int(s.get("requests", 0)) > 0
        ]
        return trend([p[0] for p in pts], [p[1] for p in pts])

    def base_latency(self) -> float | None:
        """base_latency is the service's own latency: the lowest mean of the good steps."""
        vals = [s.latency_ms for s in self.steps if s.ok and s.latency_ms > 0]
        return min(vals, default=None)

    def queue_floor(self) -> float:
        """queue_floor: the least latency rise called a queue (:func:`queue_rise_floor_ms`)."""
        # The latency's own SLOs: a bound on a stream figure (TTFT) says nothing of it.
        slo = min((s.bound_ms for s in self.limits.slos if s.figure is None), default=None)
        return queue_rise_floor_ms(self.base_latency(), slo)

    def measure(self, index: int, phase: str, load: float, got: list[dict[str, Any]]) -> Step:
        """measure is the Step that the intervals ``got`` of a held ``load`` measured (after
        the warm-up :meth:`cut` leaves out), with the monitor's figures for its window."""
        t0 = float(got[0]["t_s"]) - self.interval_s
        t1 = float(got[-1]["t_s"])
        used = got[self.cut(got) :]
        span = max(float(used[-1]["t_s"]) - float(used[0]["t_s"]) + self.interval_s, 1e-9)
        counted = [self.meter.count(s) for s in used]
        good = sum(c.good for c in counted)
        failures = self.meter.errors.total(used)
        failed, refused = failures.failed, failures.refused
        answered = sum(int(s.get("requests", 0)) for s in used)
        offered = [float(s["intended_rate"]) for s in used if s.get("intended_rate") is not None]
        offered_rps = statistics.fmean(offered) if offered else None
        growth = None
        if offered_rps is not None and self.meter.what in ("requests", "iterations"):
            ends = sum(ends_of(s) for s in used)
            growth = offered_rps - ends / span
        figures = self.sample(t0, t1) if self.sample is not None else {}
        counts = [float(c.total) for c in counted]
        rise = self.latency_trend(used)
        backlog = self._backlog_figures(used) or {}
        step = Step(
            index=index,
            model=self.model,
            phase=phase,
            load=load,
            start_s=round(t0, 3),
            end_s=round(t1, 3),
            intervals=len(used),
            judged_from_s=round(float(used[0]["t_s"]) - self.interval_s, 3),
            throughput_rps=good / span,
            throughput_se=rate_se([float(c.good) for c in counted], span),
            answered_rps=answered / span,
            refused_rps=refused / span,
            failed_rps=failed / span,
            offered_rps=offered_rps,
            steady=steady_window(used, counts, span, self.min_windows()),
            latency_rise_ms=rise.rise if rise.points >= 3 else None,
            latency_rise_t=rise.t if rise.points >= 4 else None,
            queue_growth_rps=growth,
            generator_busy=figures.pop("generator_busy", None),
            generator_wait=figures.pop("generator_wait", None),
            machine_busy=figures.pop("machine_busy", None),
            generator_share=figures.pop("generator_share", None),
            redline_share=figures.pop("redline_share", None),
            parts=figures.pop("parts", None) or {},
            service=figures,
            backlog_mean=backlog.get("backlog_mean"),
            backlog_growth_rps=backlog.get("backlog_growth_rps"),
            backlog_growth_t=backlog.get("backlog_growth_t"),
            # Percentiles from the merged histograms, errors by class, mean in-flight.
            **aggregate_step(used, self.meter),
        )
        if step.backlog_moving:
            step.steady = False
        return step


def ends_of(snap: dict[str, Any]) -> float:
    """ends_of is how many scheduled hits ended in the interval: iterations for a scenario (the
    open model schedules iterations), else requests (answers and transport failures)."""
    it = snap.get("iterations")
    if isinstance(it, dict):
        return float(it.get("completed", 0)) + float(it.get("failed", 0))
    by = snap.get("errors_by_class") or {}
    answered_failures = sum(int(by.get(c, 0) or 0) for c in ("status", "check", "grpc"))
    return float(int(snap.get("requests", 0)) + int(snap.get("errors", 0)) - answered_failures)
