"""search: the capacity search. Python decides the next load; the engine only obeys.

One live engine run serves every step (connections stay warm): :class:`Search` sets a target
through the run's control handle, ramps to it (new users join at a spawn rate, not in
lockstep), holds it until the step is steady or plainly bad, judges it, and picks the next
load. The search answers two questions, as the seed reports do:

- **where it runs best** (the optimal point, the knee): the step with the most throughput per
  unit of latency, Kleinrock's power, refined around its best step in the closed model;
- **where and how it fails** (the limit): it keeps pushing past the knee until errors pass
  ``max_errors``, an SLO is breached, throughput stops growing or falls over two consecutive
  steps (closed model), or the service completes less than is offered (open model: a backlog).

It moves in three phases: **sweep** (x2 while throughput scales with the load, x1.25 once it
bends or, in the open model, once latency rises with the rate), **refine** (between the last
good and the first bad load; in the open model an overloaded step's goodput is itself the
capacity measured, so the next probe goes just under it) and, in the closed model,
**optimum** (bisecting the gaps around the best power). After an overloaded step it lets the
service **recover** (load dropped to a trickle until nothing is in flight, then 90 % of the
last good load measured) before it measures again; a service that
does not recover is the headline, not a reason for nonsense answers.

Every verdict weighs its evidence against noise (:mod:`redline.analysis.evidence`):
throughput gains against the steps' standard errors, a latency rise against the interval
spread and against the service's own latency and the SLO. Throughput is goodput
(:mod:`redline.analysis.outcome`). Everything here is a pure function of the snapshots the
engine hands out and an injected clock, so the tests drive it with a fake engine.

This module owns the moving and the holding (:class:`Search`); the settings it moves by are
:class:`~redline.find.plan.Plan`'s, and how it ends (:class:`~redline.find.ending.Outcome`, a
collapse, the exceptions that stop it early) is :mod:`redline.find.ending`'s.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from typing import Any, Protocol

from redline.analysis.evidence import (
    Z,
    elasticity,
)
from redline.analysis.outcome import Meter
from redline.find.ending import (
    Collapse,
    Ended,
    Outcome,
    OutOfTime,
    Starved,
    no_recovery_detail,
    spoiled_text,
)
from redline.find.judge import Judge
from redline.find.plan import Plan
from redline.find.reader import Reader, Sampler, ends_of
from redline.find.rules import (
    CONDITIONS,
    JUDGED_ELSEWHERE,
    LINEAR,
    QUEUEING,
    Limits,
    overloaded,
    power,
    priority,
    saturated,
)
from redline.find.step import Step

__all__ = ["Collapse", "Ended", "Engine", "OutOfTime", "Outcome", "Plan", "Search", "Starved"]


class Engine(Protocol):
    """Engine is what the search drives: a live run (see ``redline._engine.start_run``)."""

    def set_target(self, value: float, ramp_s: float = 0.0) -> float: ...

    def next_snapshot(self, timeout_s: float) -> dict[str, Any] | None: ...

    @property
    def done(self) -> bool: ...


class Search:
    """Search steps the load of a live run until a limit shows, refines, and finds the knee.

    ``engine`` is the live run; ``sample(t0, t1)`` returns the monitor's and the generator's
    figures for a window (keys ``service_cpu``, ``generator_busy``, ...); ``on_step`` hears
    each step as it is judged, ``on_snapshot`` each interval as it arrives. ``meter`` says
    what throughput counts (requests, iterations or one request name).
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
        meter: Meter | None = None,
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
        self.meter = meter or Meter()
        self.collapse: Collapse | None = None
        self.reader = Reader(
            plan.model, plan.min_outcomes, limits, self.meter, interval_s, self.steps, sample
        )
        self.reader.max_step_s, self.reader.clock = plan.max_step_s, clock
        self.judge = Judge(
            limits, plan.model, plan.stop_at_knee, self.meter, self.reader.queue_floor
        )
        #: spoiled: the steps a cluster's lost injector cut into (its share of the load went
        #: missing mid-step): not judged, each named in the result; ``_lost_seen`` counts the
        #: losses already taken into account.
        self.spoiled: list[dict[str, Any]] = []
        self._lost_seen = 0

    # -- the loop -------------------------------------------------------------------------

    def run(self) -> Outcome:
        """run sweeps, refines the limit and (closed model) the optimum; it returns the
        outcome once the answers are within their resolution or time is up."""
        try:
            bad = self._sweep()
            if bad is not None and self.collapse is None:
                self._refine(bad)
            if self.plan.model == "closed" and self.collapse is None:
                first = self._first_bad()
                if first is not None and "retrograde" in first.fired:
                    # Throughput peaked and fell: refine the peak itself (its users).
                    self._maximise(lambda s: s.throughput_rps, "peak", allow_flat=True)
                self._maximise(power, "optimum")
            self._recover(self._highest_good())
        except OutOfTime:
            pass  # the steps measured so far are the answer
        except Starved as e:
            return self._outcome("generator", e.step.why, broke=e.step)
        except Ended:
            lost = self.lost()
            if lost:
                # A cluster stopped on an injector lost (--on-injector-loss fail): the load
                # after it was not what was asked, so the search ends where it was, and
                # says which step the loss spoiled.
                said = "; ".join(spoiled_text(x, self.plan.model) for x in self.spoiled)
                return self._outcome("interrupted", f"{lost}; {said}" if said else lost)
            return self._outcome("max-time", "the run ended before the search did")
        return self._outcome()

    def _spoil(
        self, load: float, phase: str, settle: float, t1: float, lost: dict[str, Any] | list[str]
    ) -> float:
        """_spoil records the step that lost injectors cut into (``lost``: the interval that
        named them, or their names): their share of the load went missing part way, so it is
        not judged. A run that goes on without them (continue, rebalance) is given the same
        load again, split over the injectors left, to measure from the returned instant on,
        counting them only; under fail the run is stopping (math.inf: never)."""
        if isinstance(lost, dict):
            lost = list(lost["injectors_lost"][self._lost_seen :])
        self._lost_seen += len(lost)
        share = getattr(self.engine, "lost_share_of", None)
        self.spoiled.append(
            {
                "index": len(self.steps),
                "phase": phase,
                "load": load,
                "from_s": round(max(0.0, settle), 3),
                "to_s": round(t1, 3),
                "lost": "; ".join(lost),
                "lost_share": share(lost) if callable(share) else None,
                "measured_again": not self.lost(),
            }
        )
        if self.lost():
            return math.inf
        return self.engine.set_target(load, self.plan.ramp) + self.plan.ramp

    def lost(self) -> str | None:
        """lost is why a cluster run stopped on an injector it lost (None: it did not, or
        this is no cluster)."""
        failure = getattr(self.engine, "failure", None)
        return str(failure) if failure else None

    def interrupted(self) -> Outcome:
        """interrupted is the outcome of the steps that ran, after a Ctrl-C."""
        return self._outcome("interrupted", CONDITIONS["interrupted"])

    def optimal(self) -> Step | None:
        """optimal is the good step with the most throughput per unit of latency (Kleinrock's
        power): where the service runs best, and where a soak holds the load."""
        good = [s for s in self._good() if s.latency_ms > 0 and s.phase != "recover"]
        return max(good, key=power, default=None)

    def steady_step(self, below: float | None = None) -> Step | None:
        """steady_step is the load whose goodput answers "what does it sustain": in the open
        model the highest good rate; in the closed model the lightest good load that got
        the most goodput (within its noise), since more users past it only queue. ``below``
        leaves out loads from it up (a confirmation there broke a limit)."""
        good = [
            s
            for s in self._good()
            if s.phase != "recover" and (below is None or s.load < below - 1e-9)
        ]
        if not good:
            return None
        if self.plan.model == "open":
            return max(good, key=lambda s: (s.load, s.throughput_rps))
        top = max(good, key=lambda s: s.throughput_rps)
        slack = max(0.01 * top.throughput_rps, 2 * (top.throughput_se or 0.0))
        near = [s for s in good if s.throughput_rps >= top.throughput_rps - slack]
        return min(near, key=lambda s: s.load)

    def steady_load(self, below: float | None = None) -> float | None:
        """steady_load is where the confirmation holds: the steady step's load, but in the open
        model never closer to a measured capacity (an overloaded step's goodput) than the
        resolution: at 100 % of capacity a queue is a random walk, not a steady state.
        ``below``: under that load (where a confirmation broke a limit)."""
        best = self.steady_step(below)
        if best is None:
            return None
        cap = self.measured_capacity()
        if self.plan.model == "open" and cap is not None:
            return min(best.load, self._round(cap * (1 - self.plan.resolution)))
        return best.load

    def measured_capacity(self) -> float | None:
        """measured_capacity is the open model's capacity as an overloaded step measured it:
        the goodput of saturated bad steps (a backlog or refusals at full goodput)."""
        sat = [
            b.throughput_rps
            for b in self.steps
            if not b.ok
            and b.phase in ("sweep", "refine")
            and any(saturated(b, g) for g in self._good() if g.load < b.load)
        ]
        return statistics.fmean(sat) if sat else None

    def _good(self) -> list[Step]:
        return [s for s in self.steps if s.ok]

    def _highest_good(self) -> Step | None:
        return max(self._good(), key=lambda s: s.load, default=None)

    def _first_bad(self) -> Step | None:
        """_first_bad is the lightest step that fired a condition, recovery checks,
        confirmations and soaks aside (they are judged by the recovery and the answers)."""
        bad = [s for s in self.steps if not s.ok and s.phase not in JUDGED_ELSEWHERE]
        return min(bad, key=lambda s: (s.load, s.index), default=None)

    def _outcome(
        self, reason: str | None = None, detail: str | None = None, broke: Step | None = None
    ) -> Outcome:
        broke = broke or self._first_bad()
        if self.collapse is not None:
            broke = self.steps[self.collapse.step]
            reason = reason or "no-recovery"
        if reason is None:
            if broke is not None:
                reason = min(broke.fired, key=priority)
            elif self.clock() >= self.deadline:
                reason = "max-time"
            else:
                reason = "max-load"
        if detail is None:
            if reason == "max-load":
                detail = f"no limit up to {self.plan.ceiling:g}"
            elif reason == "max-time":
                detail = "the search ran out of time"
            elif reason == "no-recovery" and self.collapse is not None:
                detail = no_recovery_detail(self.collapse, self.plan.model, self.meter)
            else:
                detail = broke.why if broke is not None else ""
        return Outcome(
            self.steps,
            self.steady_step(),
            broke,
            reason,
            detail,
            optimal=self.optimal(),
            collapse=self.collapse,
            spoiled=list(self.spoiled),
        )

    # -- phases ---------------------------------------------------------------------------

    def _sweep(self) -> Step | None:
        """_sweep grows the load from the start until a step is bad (returned) or the ceiling
        or the deadline is reached (None)."""
        load = self._round(self.plan.start)
        prev: Step | None = None
        while self.clock() < self.deadline:
            step = self._hold(load, "sweep", prev)
            if not step.ok:
                return step
            growth = self.plan.growth
            if prev is not None:
                e = elasticity(step.load, step.throughput_rps, prev.load, prev.throughput_rps)
                if e is not None and e < LINEAR:
                    growth = self.plan.near_growth
            if step.stalled:
                growth = self.plan.near_growth
            base = self.reader.base_latency()
            if self.plan.model == "open" and base and step.latency_ms > QUEUEING * base + 0.5:
                # Latency rising with the rate is a queue forming: a service that collapses
                # past its peak may never come back, so approach the limit in small steps.
                growth = self.plan.near_growth
            prev = step
            nxt = self._round(min(load * growth, self.plan.ceiling))
            if nxt <= load:
                nxt = load + 1 if self.plan.model == "closed" else nxt
            if nxt <= load or load >= self.plan.ceiling:
                return None
            load = nxt
        return None

    def _refine(self, bad: Step) -> None:
        """_refine narrows the limit between the highest good load under the first bad one and
        that bad load. A saturated overload (the open model's backlog or refusals, goodput
        still at its best) measured the capacity itself: the next probe goes just under it.
        Otherwise it bisects (geometric mean) until the bracket is within the resolution."""
        if set(bad.fired) & {"plateau", "retrograde", "knee", "generator"}:
            return
        while self.clock() < self.deadline:
            bad = self._first_bad() or bad
            below = [s for s in self._good() if s.load < bad.load]
            if not below:
                return
            good = max(below, key=lambda s: s.load)
            rel = self.plan.resolution
            if good.throughput_se and good.throughput_rps > 0:
                rel = max(rel, 2 * good.throughput_se / good.throughput_rps)
            mid = math.sqrt(good.load * bad.load)
            if self.plan.model == "open" and saturated(bad, good):
                capacity = bad.throughput_rps
                if good.load >= capacity * (1 - rel) or good.load >= bad.load * (1 - rel):
                    return
                mid = capacity * (1 - rel / 2)
            elif bad.load - good.load <= max(
                rel * good.load, 1.0 if self.plan.model == "closed" else 0.0
            ):
                return
            mid = self._round(mid)
            if not good.load < mid < bad.load:
                return
            if not self._recover(good):
                return
            self._hold(mid, "refine", good)

    def _maximise(
        self, score: Callable[[Step], float], phase: str, allow_flat: bool = False
    ) -> None:
        """_maximise refines the maximum of ``score`` over the closed model's good steps (a
        unimodal curve of users: power for the optimum, goodput for a peak): it measures the
        midpoint of the wider gap beside the best step until its neighbours are within 12 %
        of it (or two users)."""
        measured: set[float] = set()
        while self.clock() < self.deadline:
            pool = [s for s in self.steps if (s.ok or allow_flat) and s.phase != "recover"]
            pool = [s for s in pool if not (set(s.fired) - {"plateau", "retrograde"})]
            if len(pool) < 2:
                return
            best = max(pool, key=score)
            lower = [s.load for s in pool if s.load < best.load]
            upper = [s.load for s in self.steps if s.load > best.load]
            lo = max(lower, default=None)
            hi = min(upper, default=None)
            if lo is None and hi is None:
                return
            tol = max(2.0, 0.12 * best.load)
            gaps = []
            if lo is not None and best.load - lo > tol / 2 and best.load - lo > 1:
                gaps.append((best.load - lo, (lo + best.load) / 2))
            if hi is not None and hi - best.load > tol / 2 and hi - best.load > 1:
                gaps.append((hi - best.load, (best.load + hi) / 2))
            if not gaps or (lo is not None and hi is not None and hi - lo <= tol):
                return
            mid = self._round(max(gaps)[1])
            if mid in measured or mid == best.load:
                return
            measured.add(mid)
            self._recover(self._highest_good())
            self._hold(mid, phase, None)

    def _recover(self, good: Step | None) -> bool:
        """_recover lets the service drain after an overloaded step before anything is
        measured again: the load drops to a trickle until nothing is left in flight, then 90 %
        of the last good load is measured; the service has recovered when that step is good
        and its mean latency is back within 1.5x (+1 ms) of the good step's or, in the closed
        model, its goodput is back (:meth:`_goodput_back`). A service that
        has not recovered within ``recover_s`` is recorded as a :class:`Collapse` and the
        search stops: no later step would measure anything but the collapse."""
        if self.collapse is not None:
            return False
        last = self.steps[-1] if self.steps else None
        if good is None or last is None or last.ok or not overloaded(last, good):
            return True
        started = self.clock()
        trickle = (
            1.0 if self.plan.model == "closed" else max(min(self.plan.start, good.load) / 10, 1.0)
        )
        while self.clock() < self.deadline:
            at = self.engine.set_target(trickle, 0.0)
            self._drain(at, good, started)
            check = self._hold(self._round(0.9 * good.load), "recover", None)
            mean_ok = (check.mean_ms or check.p50_ms) <= 1.5 * good.latency_ms + 1.0
            if check.ok and (mean_ok or self._goodput_back(check, good)):
                return True
            waited = self.clock() - started
            if waited >= self.plan.recover_s:
                # A recovery judged while redline was out of CPU is redline's, not the
                # service's: the overload's own step or the check named the generator (seen
                # on the immediate answer: "no-recovery" at 64,000 req/s where the overload
                # was the generator's). The search stops there, naming the generator.
                for s in (last, check):
                    if "generator" in s.fired:
                        raise Starved(s)
                self.collapse = Collapse(
                    step=last.index,
                    load=last.load,
                    check_load=check.load,
                    waited_s=round(waited, 1),
                    check_p99_ms=check.p99_ms,
                    check_throughput_rps=check.throughput_rps,
                )
                return False
        return False

    def _goodput_back(self, check: Step, good: Step) -> bool:
        """_goodput_back (closed model): the recovery check got the goodput its users had
        before the overload, within noise (the good step's, scaled to the check's users). A
        metastable failure is goodput that stays down at a load that was fine; a check that
        met every limit with its goodput back has recovered even if its mean latency, on a
        machine whose CPU the service shares, is not yet within 1.5x of the good step's (seen
        in the demo: 349 tasks/s at 900 users against 348 at 1,000 before, p99 91 ms against
        122, mean 20.7 ms against 10.3: called a collapse). In the open model a good step's
        goodput is the offered rate, so only the latency can tell."""
        if self.plan.model != "closed" or good.load <= 0:
            return False
        expected = good.throughput_rps * min(1.0, check.load / good.load)
        noise = Z * math.hypot(check.throughput_se or 0.0, good.throughput_se or 0.0)
        return check.throughput_rps + noise >= expected

    def _drain(self, at: float, good: Step, started: float) -> None:
        """_drain waits, at a trickle, until the requests in flight are back to what the good
        step had and no hit goes out late (at most ``recover_s`` after ``started``)."""
        ceiling = max(2.0, 2 * (good.inflight_mean or 0.0))
        while self.clock() < self.deadline and self.clock() - started < self.plan.recover_s:
            snap = self.engine.next_snapshot(1.0)
            if snap is None:
                if self.engine.done:
                    raise Ended()
                continue
            if self.on_snapshot is not None:
                self.on_snapshot(snap, good.load, "drain")
            # A loss while draining spoils no step: the next one's load is split anew.
            self._lost_seen = max(self._lost_seen, len(snap.get("injectors_lost") or []))
            if float(snap["t_s"]) - self.interval_s < at - 0.001:
                continue
            # Open model: hits that fell due during the overload and were never sent are a
            # backlog in redline itself; they go out late (send lag) until it is gone.
            lag = float(snap.get("send_lag_ms", 0) or 0) if self.plan.model == "open" else 0.0
            # The work waiting inside the service (--backlog) drains too: a queue left by the
            # overload would be completed in the next step and read as its throughput.
            queued = (snap.get("work") or {}).get("backlog")
            drained = queued is None or float(queued) <= max(2.0, 2 * (good.backlog_mean or 0.0))
            if float(snap.get("in_flight", 0) or 0) <= ceiling and lag <= 10.0 and drained:
                return

    def _unit(self) -> float:
        """_unit is the smallest load step: one user (closed model), else none."""
        return 1.0 if self.plan.model == "closed" else 0.0

    def _round(self, load: float) -> float:
        # VUs are whole; rates keep three significant figures.
        if self.plan.model == "closed":
            return float(max(1, round(load)))
        return float(f"{load:.3g}")

    # -- one step -------------------------------------------------------------------------

    def hold(self, load: float, seconds: float, phase: str, end_by: float | None = None) -> Step:
        """hold holds ``load`` for ``seconds`` after its ramp, whatever the steadiness (the
        confirmation and the soak), and judges the step like any other; a scenario's users
        are held from their first iteration on, as long as that still ends the step by
        ``end_by`` (on the search's clock)."""
        return self._hold(load, phase, None, fixed_s=seconds, end_by=end_by)

    # long: the one loop that holds a load, with each reason to skip an interval beside it
    # (the ramp, a lost injector, users not yet cycled, a backlog draining, a partial end).
    def _hold(
        self,
        load: float,
        phase: str,
        prev: Step | None,
        fixed_s: float | None = None,
        end_by: float | None = None,
    ) -> Step:
        """_hold sets the load, waits out the ramp, collects intervals until the step is
        steady (or plainly bad, or the maximum step time passes), and judges it."""
        at = self.engine.set_target(load, self.plan.ramp)
        settle = at + self.plan.ramp
        got: list[dict[str, Any]] = []
        # A held load (the confirmation, the soak) of a scenario's users in the closed model
        # is measured once they have been through their flow once on average (as many
        # iterations ended as there are users): users who joined at it submit in a burst
        # that the service's own queue (which their polls hide) takes that long to show.
        # At most max_step of it, so a service that ends no iteration still gets measured,
        # and none past what keeps the step inside the time it was given (``end_by``).
        cycling = fixed_s is not None and self.plan.model == "closed"
        ended, t1 = 0.0, settle
        before: list[dict[str, Any]] = []  # a held step's intervals before its window
        while True:
            if fixed_s is None and self.clock() >= self.deadline:
                # Out of time: a step with too few intervals to judge is abandoned, not
                # recorded (a one-interval step measures nothing but its noise).
                if len(got) < self.reader.min_windows():
                    raise OutOfTime()
                break
            snap = self.engine.next_snapshot(1.0)
            if snap is None:
                if self.engine.done:
                    # A step cut short by a lost injector measured less load than it says.
                    if got and not self.lost():
                        break
                    if self.lost() and settle < math.inf:  # no interval after the loss came
                        self._spoil(load, phase, settle, t1, [str(self.lost())])
                    raise Ended()
                continue
            t1 = float(snap["t_s"])
            if self.on_snapshot is not None:
                self.on_snapshot(snap, load, phase)
            if len(snap.get("injectors_lost") or []) > self._lost_seen:
                # An injector was lost inside this step: not judged, measured again from the
                # new settle (under fail, never: the run is stopping). See _spoil.
                settle, got, ended = self._spoil(load, phase, settle, t1, snap), [], 0.0
                continue
            if _short(snap):
                continue
            if not got and t1 - self.interval_s < settle - 0.001:
                # An interval that began before the new load settled measures the ramp.
                continue
            if (
                cycling
                and not got
                and isinstance(snap.get("iterations"), dict)
                and ended < load
                and t1 < settle + self.plan.max_step_s
                and (end_by is None or self.clock() + (fixed_s or 0.0) < end_by)
            ):
                ended += ends_of(snap)
                continue
            if not got and self.reader.draining(before, snap, settle, fixed_s, end_by):
                continue
            if got and t1 - float(got[-1]["t_s"]) < 0.9 * self.interval_s:
                # The run's last, partial interval (cut short by its end) is no rate sample.
                continue
            got.append(snap)
            span = t1 - (float(got[0]["t_s"]) - self.interval_s)
            if fixed_s is not None:
                if span >= fixed_s - 1e-6:
                    break
                continue
            if span >= self.plan.max_step_s:
                break
            if span >= self.plan.min_step_s and self.reader.enough(got, load):
                break
        step = self.reader.measure(len(self.steps), phase, load, got)
        self.judge(step, prev, self.steps)
        self.steps.append(step)
        if self.on_step is not None:
            self.on_step(step)
        return step


def _short(snap: dict[str, Any]) -> bool:
    """_short: an interval that an injector still running did not report carries less load
    than the step's: no sample of it (the run is stopping on a loss, or a report is late)."""
    lost = len(snap.get("injectors_lost") or [])
    return int(snap.get("injectors_reported") or 1) < int(snap.get("injectors") or 1) - lost
