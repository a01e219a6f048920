"""judge: the stop conditions that hold for one step of the search, each named with its
figures (errors, an SLO, the generator's CPU, the service's CPU, a backlog or a collapse in
the open model, a plateau or a fall in the closed one, the knee under ``--stop-at-knee``).
The thresholds and the one-step rules are :mod:`redline.find.rules`'; this is where they are
applied to a step against the steps before it. :class:`redline.find.search.Search` measures
the steps and decides the next load.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from redline.analysis.evidence import Level, Z, elasticity_fit, gain, level_of
from redline.analysis.generator import (
    generator_explains,
    generator_ran_out,
    latency_failed,
    starved_by_others,
)
from redline.analysis.outcome import Meter
from redline.find.rules import (
    COLLAPSED,
    FLAT,
    FLAT_RUN_SPAN,
    FLAT_RUN_STEPS,
    KNEE_DROP,
    MIN_DEFICIT,
    Limits,
    phase_compares,
    power,
)
from redline.find.step import Step


class Judge:
    """Judge fires what holds for a step (``judge(step, prev, steps)``, ``steps`` being the
    search's steps so far): the step's ``fired``, ``why``, ``stalled`` and ``steady`` are
    set in place."""

    def __init__(
        self,
        limits: Limits,
        model: str,
        stop_at_knee: bool,
        meter: Meter,
        queue_floor: Callable[[], float],
    ):
        self.limits = limits
        self.model = model
        self.stop_at_knee = stop_at_knee
        self.meter = meter
        #: queue_floor: the latency rise that is material now (it moves with the base latency
        #: the search has measured; :func:`redline.analysis.evidence.queue_rise_floor_ms`).
        self.queue_floor = queue_floor

    def __call__(self, step: Step, prev: Step | None, steps: Sequence[Step]) -> None:
        """__call__ fires the stop conditions that hold for ``step``, naming each with its
        figures; in the closed model it also compares the step with the best lighter one
        (a plateau or a fall fires on the second such step in a row)."""
        lim = self.limits
        why: list[str] = []
        unit = self.meter.unit

        def fire(name: str, text: str) -> None:
            step.fired.append(name)
            why.append(text)

        # The generator's rule is redline.analysis.generator's, the one the bottleneck at the
        # limit reads too: the page's stop condition and its bottleneck cannot disagree.
        if lim.generator_busy is not None:
            ran_out = generator_ran_out(step, lim.generator_busy)
            if ran_out is not None:
                fire("generator", ran_out.evidence)
        if lim.max_errors is not None and step.error_rate > lim.max_errors and step.errors >= 3:
            fire(
                "errors",
                f"{step.error_rate:.1%} of requests failed (limit {lim.max_errors:.1%})",
            )
        for slo in lim.slos:
            figure = slo.of(step)
            if figure is None:
                continue  # not measured: no p95 without histograms, no TTFT without a token
            if slo.breached(figure):
                fire("slo", f"{slo.name} was {figure:.1f} ms (SLO {slo})")
        if self.model == "open":
            self._backlog(step, fire, steps)
        if step.backlog_growing and "backlog" not in step.fired:
            fire(
                "backlog",
                f"the work waiting (--backlog) grew {step.backlog_growth_rps:.1f}/s through"
                f" the step, to {step.backlog_mean:.0f} on average, at"
                f" {step.throughput_rps:.0f} {unit} completed",
            )
        if lim.service_cpu is not None and step.service.get("cpu_percent", 0) > lim.service_cpu:
            fire(
                "service-cpu",
                f"the service used {step.service['cpu_percent']:.0f} % CPU"
                f" (limit {lim.service_cpu:g} %)",
            )
        if self.model == "closed" and phase_compares(step.phase):
            self._growth(step, fire, why, unit, steps)
        self._starvation(step, fire, why)
        if self.stop_at_knee and not step.fired and phase_compares(step.phase):
            lighter = [s for s in steps if s.ok and s.load < step.load and s.latency_ms > 0]
            top = max(lighter, key=power, default=None)
            if top is not None and power(step) < (1 - KNEE_DROP) * power(top):
                fire(
                    "knee",
                    f"throughput per unit of latency fell from {power(top):.3g} at"
                    f" {top.load:g} to {power(step):.3g}: past the optimal point",
                )
        if step.fired:
            step.steady = step.steady and "backlog" not in step.fired
        step.why = "; ".join(why)

    def _starvation(self, step: Step, fire: Callable[[str, str], None], why: list[str]) -> None:
        """_starvation names the generator on a step that failed on latency while redline's
        workers were nearly saturated, starved of CPU, or took a saturated machine's CPU
        (:func:`redline.analysis.generator.generator_explains`); a generator starved by
        another tenant is said in the step's why, not fired."""
        if (
            self.limits.generator_busy is None
            or not latency_failed(step.fired)
            or "generator" in step.fired
        ):
            return
        starved = generator_explains(step)
        tenant = starved_by_others(step)
        if starved is not None:
            fire("generator", starved.evidence)
        elif tenant is not None:
            why.append(tenant)

    def _backlog(self, step: Step, fire: Callable[[str, str], None], steps: Sequence[Step]) -> None:
        """_backlog (open model): requests were offered faster than they ended by more
        than noise and 2 %, or latency rose through the step by more than its noise and more
        than is material (:func:`queue_rise_floor_ms`): a queue growing without bound. An
        overloaded step whose goodput fell far under the best lighter step's also fires
        ``collapse``."""
        if step.offered_rps is None:
            return
        growth = step.queue_growth_rps
        noise = Z * max(step.throughput_se or 0.0, 0.0) + MIN_DEFICIT * step.offered_rps
        rise = step.latency_rise_ms
        floor = self.queue_floor()
        reasons = []
        if growth is not None and growth > noise:
            reasons.append(
                f"offered {step.offered_rps:.0f}/s, {growth:.0f}/s more than ended"
                f" ({step.throughput_rps:.0f} {self.meter.unit} good)"
            )
        if rise is not None and rise > floor and (step.latency_rise_t or 0.0) > Z:
            reasons.append(f"mean latency rose {rise:.1f} ms through the step")
        if not reasons:
            return
        fire("backlog", "; ".join(reasons))
        best = max(
            (s for s in steps if s.ok and s.load < step.load),
            key=lambda s: s.throughput_rps,
            default=None,
        )
        if best is not None and step.throughput_rps < COLLAPSED * best.throughput_rps:
            fire(
                "collapse",
                f"goodput fell to {step.throughput_rps:.0f} {self.meter.unit} from"
                f" {best.throughput_rps:.0f} at {best.load:g}/s offered",
            )

    def _flat_run(
        self, step: Step, fire: Callable[[str, str], None], unit: str, steps: Sequence[Step]
    ) -> None:
        """_flat_run (closed model) fires ``plateau`` when the step ends a run of steps that
        agree on one goodput over at least :data:`FLAT_RUN_SPAN` times the load: no step of
        the run significantly under the others (:func:`level_of` keeps them all), at least
        :data:`FLAT_RUN_STEPS` of them, and the elasticity of one fit through them confidently
        under :data:`FLAT` (its upper bound, Z standard errors up). This is the plateau that
        step-by-step comparison cannot show when each step is noisy: a task queue's
        completions, counted by the polls that saw them, read 244-324 tasks/s from 1,024 to
        6,102 users with standard errors of 24-130, and against any one lighter step no
        single gain was confidently small, so the demo ran out of time on its plateau
        (bench/results/demo.md, 2026-11-27 08:24). A contention peak is left to the
        step-by-step test: over twice the load, its fall shows before a run this long
        agrees."""
        ordered = sorted(steps, key=lambda s: s.load)
        if ordered[-1] is not step:
            return
        # The runs ending at this step whose steps agree, each one step longer; the longest
        # that is long and wide enough and flat wins. Not only the longest that agrees: a
        # step still on the rise can agree with the plateau within its noise and tilt the
        # fit, while the run without it is flat.
        agreeing: list[Level[Step]] = []
        run: list[Step] = []
        for s in reversed(ordered):
            trial = [s, *run]
            level = level_of(trial)
            if level is None or len(level.steps) < len(trial):
                break
            run = trial
            agreeing.append(level)
        found = None
        for level in reversed(agreeing):
            run = level.steps
            if len(run) < FLAT_RUN_STEPS or run[-1].load < FLAT_RUN_SPAN * run[0].load:
                continue
            fit = elasticity_fit(run)
            if fit is not None and fit[0] + Z * fit[1] < FLAT:
                found = level, fit
                break
        if found is None:
            return
        level, (e, e_se) = found
        run = level.steps
        fire(
            "plateau",
            f"the {len(run)} steps from {run[0].load:g} to {run[-1].load:g} users agree on"
            f" {level.mean:.0f} {unit} (± {2 * level.se:.0f}): elasticity {e:+.2f}"
            f" (at most {e + Z * e_se:.2f}), no gain from {run[-1].load / run[0].load:.1f}"
            " times the users",
        )

    def _growth(
        self,
        step: Step,
        fire: Callable[[str, str], None],
        why: list[str],
        unit: str,
        steps: Sequence[Step],
    ) -> None:
        """_growth (closed model): did the users added buy throughput? Compared with the
        best lighter step, a gain whose upper confidence bound is under a quarter of the users
        added is ``flat`` and a significant loss ``fell``; anything else grew, or was too
        noisy to tell (not a stall). The second such
        step in a row (by load) fires ``plateau``, or ``retrograde`` if it fell below the
        first."""
        lighter = [s for s in steps if s.load < step.load and s.ok and phase_compares(s.phase)]
        best = max(lighter, key=lambda s: s.throughput_rps, default=None)
        if best is None or step.fired:
            return
        rel, sig = gain(
            step.throughput_rps,
            step.throughput_se or 0.0,
            best.throughput_rps,
            best.throughput_se or 0.0,
        )
        added = step.load / best.load - 1
        # Absence of evidence of growth is not evidence of a plateau: the gain must be
        # confidently small (its upper bound under a quarter of proportional scaling) to
        # be flat, and confidently negative to be a fall. Noisy steps are inconclusive.
        se_rel = math.hypot(step.throughput_se or 0.0, best.throughput_se or 0.0) / max(
            best.throughput_rps, 1e-9
        )
        upper = rel + Z * se_rel
        if sig and rel < 0:
            step.stalled = "fell"
        elif upper < FLAT * added:
            step.stalled = "flat"
        else:
            self._flat_run(step, fire, unit, [*lighter, step])
            return
        text = (
            f"{step.load:g} users got {rel:+.1%} {unit} against {best.load:g} users"
            f" ({step.throughput_rps:.0f} vs {best.throughput_rps:.0f})"
        )
        below = [
            s
            for s in steps
            if best.load < s.load < step.load and phase_compares(s.phase) and s.stalled
        ]
        if below:
            last = max(below, key=lambda s: s.load)
            fell = step.stalled == "fell" and step.throughput_rps < last.throughput_rps
            kind = "retrograde" if fell else "plateau"
            fire(kind, f"{text}; {last.why}")
        else:
            why.append(text)
