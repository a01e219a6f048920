"""answers: the four answers every load-test report owes, built from a search's steps.

1. steady-state throughput; 2. the steady-state latency distribution; 3. the optimal
operating point (Kleinrock's power among the steps that met every limit); 4. the limit (where
and how it broke). :func:`analyse` adds the models behind them: the USL fit, the knee, the
Little's-law check per step and the leak check on the monitor's series.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from redline.analysis.checks import leak_checks, little_of
from redline.analysis.evidence import Level, floored_se, level_of
from redline.analysis.knee import power
from redline.analysis.sentences import answer_sentences, load_key
from redline.analysis.step import StepResult
from redline.analysis.usl import UslFit, fit_usl

#: LATENCY_KEYS: the answer's percentiles and the StepResult fields they come from.
LATENCY_KEYS = {
    "p50": "p50_ms",
    "p90": "p90_ms",
    "p95": "p95_ms",
    "p99": "p99_ms",
    "p99_9": "p99_9_ms",
}


def optimal_step(steps: Sequence[StepResult]) -> StepResult | None:
    """optimal_step is the good step with the greatest Kleinrock power (throughput ÷
    latency), None if no step met every limit."""
    good = [s for s in steps if s.ok and s.latency_ms > 0]
    return max(good, key=lambda s: power(s.throughput_rps, s.latency_ms), default=None)


def limit_step(steps: Sequence[StepResult]) -> StepResult | None:
    """limit_step is the lightest step where a stop condition fired: after bisection, the
    first bad load."""
    bad = [s for s in steps if not s.ok]
    return min(bad, key=lambda s: (s.load, s.index), default=None)


def capacity(steps: Sequence[StepResult], model: str) -> tuple[float | None, float | None]:
    """capacity is the goodput the service sustains at its best, from the steps of the search
    that did not breach an SLO (unless by its backlog: then it served at capacity while the
    queue grew), were not redline's own limit and did not collapse, with its uncertainty (two
    standard errors). An overloaded step that still served its best (a backlog, refusals)
    measured the capacity itself.

    In the open model it is the most goodput of any such step (a good step's goodput is the
    rate offered to it, so lighter steps say nothing of the capacity); when that step was a
    good one and the first bad load above it did not saturate, the ± also covers half the
    bracket between them. In the closed model every step at the plateau measures the same
    capacity, and the most goodput of several noisy steps is biased up and moves from one
    search to the next (on 2 shared cores the demo's limit moved 15 % between three runs, by
    the step that happened to read high): it is the mean, weighted by precision, of the steps
    that are not significantly under the plateau (:func:`plateau`), the confirmation
    included."""
    pool = _capacity_pool(steps)
    if not pool:
        return None, None
    top = max(pool, key=lambda s: s.throughput_rps)
    refusing = [s for s in pool if "errors" in s.fired and _refusals(s)]
    if refusing:
        # A service that refuses past its limit accepts its limit under sustained overload;
        # a lightly overloaded step also spends the burst a limiter kept (a token bucket's
        # B requests over the step), so the most overloaded refusing step measures it.
        top = max(refusing, key=lambda s: (s.offered_rps or s.load, s.index))
        return top.throughput_rps, 2 * (top.throughput_se or 0.0)
    if model == "closed":
        return plateau(plateau_steps(steps))
    ci = 2 * (top.throughput_se or 0.0)
    if top.ok:
        above = [s for s in steps if not s.ok and s.load > top.load]
        bad = min(above, key=lambda s: s.load, default=None)
        if bad is not None and bad.throughput_rps < 0.98 * top.throughput_rps:
            ci = max(ci, (bad.load - top.load) / 2)
    return top.throughput_rps, ci


def _capacity_pool(steps: Sequence[StepResult]) -> list[StepResult]:
    """_capacity_pool: the search's steps that can read the capacity (see :func:`capacity`)."""
    return [
        s
        for s in steps
        if not set(s.fired) & {"generator", "collapse"}
        and not ("slo" in s.fired and "backlog" not in s.fired)
        and s.phase not in ("recover", "confirm", "soak")
    ]


def plateau_steps(steps: Sequence[StepResult]) -> list[StepResult]:
    """plateau_steps: the closed model's readings of its plateau, before :func:`level_of`
    leaves out those under it: the capacity's pool and the confirmations that held, less any
    step where Little's law fails (no stationary state: a backlog draining through its
    window reads as more than the service sustains)."""
    pool = _capacity_pool(steps) + [s for s in steps if s.phase == "confirm" and s.ok]
    return [s for s in pool if _stationary(s)] or pool


def plateau_level(steps: Sequence[StepResult]) -> Level[StepResult] | None:
    """plateau_level is the closed model's plateau (:func:`level_of` of
    :func:`plateau_steps`): its steps, their mean and the mean's standard error; None
    where the service refused past its limit (its capacity is the accepted rate then)."""
    if any("errors" in s.fired and _refusals(s) for s in _capacity_pool(steps)):
        return None
    return level_of(plateau_steps(steps))


def _stationary(s: StepResult) -> bool:
    """_stationary: Little's law holds on the step, or it cannot be judged."""
    c = little_of(s)
    return c is None or c.ok


def plateau(steps: Sequence[StepResult]) -> tuple[float | None, float | None]:
    """plateau is the goodput the steps at the top agree on, with two standard errors
    (:func:`redline.analysis.evidence.level_of`: the precision-weighted mean of the steps not
    significantly under the others; :func:`level_se` for its error)."""
    level = level_of(steps)
    if level is None:
        return None, None
    return level.mean, 2 * level_se(level)


#: SCATTER_MIN: the steps a level needs before their scatter about it is read as its error.
SCATTER_MIN = 3


def level_se(level: Level[StepResult]) -> float:
    """level_se is a level's standard error: the weighted mean's, or, where the steps
    scatter about it more than their own errors allow (what the service got moved between
    the minutes they were read in, on a shared machine), the error that scatter gives
    (sqrt(sum w(x - m)^2 / ((k - 1) sum w)), weights 1/SE^2), from three steps on (two
    readings tell their difference, not a spread)."""
    k = len(level.steps)
    if k < SCATTER_MIN:
        return level.se
    w = [1 / floored_se(s) ** 2 for s in level.steps]
    spread = sum(
        wi * (s.throughput_rps - level.mean) ** 2 for wi, s in zip(w, level.steps, strict=True)
    )
    return max(level.se, math.sqrt(spread / ((k - 1) * sum(w))))


def repeat_drift(steady: StepResult | None, steps: Sequence[StepResult]) -> float | None:
    """repeat_drift is how far the goodput moved between the search's step at the steady
    load and the confirmation of that load later in the same run, as a signed share of the
    step's (negative: the confirmation got less). Closed model only; None without a
    confirmation or a step at its load. It is the part of the uncertainty that the interval
    noise inside one step cannot show: on a machine whose CPUs the service shares (with
    redline, with other work), what it sustains moves with the CPU it is given from one
    minute to the next. In the open model a good step's goodput is the offered rate, so the
    repeat says nothing there."""
    if steady is None or steady.phase != "confirm" or steady.model != "closed":
        return None
    ref = _repeated(steady, steps)
    if not ref:
        return None
    return (steady.throughput_rps - ref) / ref


def _repeated(steady: StepResult, steps: Sequence[StepResult]) -> float:
    """_repeated is the goodput of the latest good search step at the steady load (within
    1 %), 0 if none."""
    same = [
        s
        for s in _measured(steps)
        if s.ok and s.throughput_rps > 0 and abs(s.load - steady.load) <= 0.01 * steady.load
    ]
    return max(same, key=lambda s: s.index).throughput_rps if same else 0.0


def _refusals(s: StepResult) -> bool:
    """_refusals: the step's failures are (almost all) answers refused with an error status."""
    return s.errors > 0 and s.errors_by_class.get("status", 0) >= 0.9 * s.errors


#: QUEUE_SHARE: accepted answers that took this share of the service's own latency longer
#: (and at least MIN_QUEUE_MS) near the limit waited in a queue: a shedding server's.
QUEUE_SHARE = 0.25

#: MIN_QUEUE_MS: a wait under this is never called a queue (sub-millisecond jitter).
MIN_QUEUE_MS = 1.0


def limit_kind(limit: StepResult | None, reason: str, steps: Sequence[StepResult]) -> str:
    """limit_kind says how the service fails at the limit step: ``rate-limit`` (it refuses a
    share of requests with an error status while the answers it accepts are as fast as at
    light load: a limiter in front of an idle service), ``shedding`` (refusals once a queue
    is full: the answers accepted near the limit waited, see :func:`accepted_queue_ms`),
    ``saturation`` (open model: a backlog at full goodput), ``collapse``, ``no-recovery``,
    ``errors``, ``slo``, ``plateau``, ``retrograde``, ``generator``, or ``none``."""
    if limit is None or reason in ("max-load", "max-time", "interrupted"):
        return "none"
    if reason in (
        "no-recovery",
        "collapse",
        "generator",
        "plateau",
        "retrograde",
        "slo",
        "knee",
        "service-cpu",
    ):
        return reason
    refused = limit.errors_by_class.get("status", 0)
    if reason == "errors" and limit.errors and refused >= 0.9 * limit.errors:
        base = _base_ms(steps)
        waited = accepted_queue_ms(limit, steps)
        queued = base is not None and waited > max(QUEUE_SHARE * base, MIN_QUEUE_MS)
        return "shedding" if queued or "backlog" in limit.fired else "rate-limit"
    if reason == "backlog":
        return "saturation"
    return reason


def _base_ms(steps: Sequence[StepResult]) -> float | None:
    """_base_ms is the service's own latency: the lowest median of the steps that met every
    limit (the median: a scheduler stall moves the mean of a fast service, not its median)."""
    vals = [s.p50_ms for s in _measured(steps) if s.ok and s.p50_ms > 0]
    return min(vals, default=None)


def _measured(steps: Sequence[StepResult]) -> list[StepResult]:
    return [s for s in steps if s.phase not in ("recover", "confirm", "soak")]


def accepted_queue_ms(limit: StepResult, steps: Sequence[StepResult]) -> float:
    """accepted_queue_ms is how much longer than the service's own latency the answers it
    accepted took near the limit: what separates the two ways of refusing at a flat accepted
    rate. A rate limiter refuses at its rate whatever the concurrency, in front of a service
    that is not busy: what it accepts is as fast as at light load. A shedding server refuses
    when its queue is full: what it accepts waited behind that queue (about Q service times
    over N slots), and in the closed model the users past its slots queue before any is
    refused. Two readings, the larger counts: the median of the heaviest step that met every
    limit below the limit (closed model: users past the slots queue there), and, in the open
    model, the accepted answers' mean at the limit step by Little's law (requests in flight
    ÷ goodput; refusals are answered at once, so they add next to nothing in flight; the
    closed model's users wait on their refusals too, so it has no such reading)."""
    base = _base_ms(steps)
    if base is None:
        return 0.0
    waits = [0.0]
    below = [s for s in _measured(steps) if s.ok and s.load < limit.load and s.p50_ms > 0]
    near = max(below, key=lambda s: s.load, default=None)
    if near is not None:
        waits.append(near.p50_ms - base)
    if limit.model == "open" and limit.inflight_mean and limit.throughput_rps > 0:
        waits.append(1000.0 * limit.inflight_mean / limit.throughput_rps - base)
    return max(waits)


def build_answers(
    steps: Sequence[StepResult],
    *,
    model: str,
    steady: StepResult | None = None,
    latency_ms: dict[str, float | None] | None = None,
    limit: StepResult | None = None,
    reason: str | None = None,
    detail: str | None = None,
    optimal: StepResult | None = None,
    unit: str = "req/s",
    statuses: dict[str, int] | None = None,
    collapse: dict[str, Any] | None = None,
    pick_steady: bool = True,
) -> dict[str, Any]:
    """build_answers returns the ``answers`` object of the result.

    ``steady`` is the step whose figures answer questions 1 and 2 (default: the good step
    with the most throughput; pass the confirmation step when there is one; with
    ``pick_steady=False`` None means there is none, as :func:`redline.find.steady_answer`
    decided: no load at or above a failed confirmation is a steady state); ``latency_ms``
    overrides its percentiles (e.g. read from the confirmation's merged histogram).
    ``optimal`` defaults to :func:`optimal_step`, ``limit`` to :func:`limit_step`, ``reason``
    to the first condition it fired (or "none") and ``detail`` to its ``why``. ``unit`` is
    what throughput counts (``req/s``, ``iterations/s``, ``submit/s``); ``statuses`` the
    run's answers by HTTP status, to name the refusals; ``collapse`` a service that did not
    recover. ``text`` holds one sentence per question.
    """
    good = [s for s in steps if s.ok]
    if steady is None and pick_steady:
        steady = max(good, key=lambda s: s.throughput_rps, default=None)
    latency = _latency_of(steady, latency_ms)
    opt = optimal if optimal is not None else optimal_step(steps)
    if limit is None:
        limit = limit_step(steps)
    if reason is None:
        reason = limit.fired[0] if limit is not None and limit.fired else "none"
    if detail is None:
        detail = limit.why if limit is not None else ""
    cap, cap_ci, drift, steady_ci = _capacity_and_spread(steps, steady, model)
    kind = limit_kind(limit, reason, steps)
    x = steady.throughput_rps if steady else None
    held = _plateau_answer(steps, steady, model)
    if held is not None and held["answer"]:
        # On the plateau, answer 1 is what every step there measured: the capacity.
        x, steady_ci = cap, cap_ci
    answers: dict[str, Any] = {
        "unit": unit,
        "steady_state_throughput_rps": x,
        "steady_state_throughput_ci": steady_ci,
        # The held step's own reading, and the plateau answer 1 is (or is under) the level of.
        "steady_state_step_rps": steady.throughput_rps if steady else None,
        "steady_state_step_ci": 2 * (steady.throughput_se or 0.0) if steady else None,
        "steady_state_plateau": held,
        # A step that never became steady (its rate or latency still moved at its end) has
        # means, not a steady state: the sentences say so instead of calling them one.
        "steady_state_step": steady.index if steady else None,
        "steady_state_reached": None if steady is None else steady.steady is not False,
        "repeat_drift": drift,
        "steady_state_load": steady.load if steady else None,
        "steady_state_answered_rps": steady.answered_rps if steady else None,
        "latency_ms": latency,
        "optimal": _optimal_answer(opt, model),
        "limit": {
            "kind": kind,
            "reason": reason,
            "detail": detail,
            **_limit_figures(limit, cap, cap_ci, statuses),
            "collapse": collapse,
        },
    }
    answers["text"] = answer_sentences(answers, model, max((s.load for s in steps), default=None))
    if not steps:
        none = "No step was measured: the search ended before its first step."
        answers["text"] = {k: none for k in answers["text"]}
    return answers


def _latency_of(
    steady: StepResult | None, latency_ms: dict[str, float | None] | None
) -> dict[str, float | None]:
    """_latency_of: the steady step's percentiles (None without one), ``latency_ms``'s over
    them where it has them."""
    latency: dict[str, float | None] = {k: None for k in LATENCY_KEYS}
    if steady is not None:
        latency = {k: getattr(steady, f) for k, f in LATENCY_KEYS.items()}
    if latency_ms:
        latency.update({k: latency_ms[k] for k in LATENCY_KEYS if latency_ms.get(k) is not None})
    return latency


def _capacity_and_spread(
    steps: Sequence[StepResult], steady: StepResult | None, model: str
) -> tuple[float | None, float | None, float | None, float | None]:
    """_capacity_and_spread: the capacity and its ±, the drift of the repeat at the steady
    load, and the steady throughput's ±, widened to cover that drift."""
    # The confirmation is a reading of the plateau too (find passes the search's steps, and
    # the confirmation as ``steady``).
    cap, cap_ci = capacity(_with_held(steps, steady), model)
    drift = repeat_drift(steady, steps)
    steady_ci = 2 * (steady.throughput_se or 0.0) if steady else None
    if drift is not None and steady is not None:
        # Interval noise within a step cannot show what moves between steps; the repeat at
        # the same load can, and the ± of that one reading must cover it.
        # The ± around the confirmation reaches the search's own reading of that load.
        gap = abs(drift) * _repeated(steady, steps)
        steady_ci = max(steady_ci or 0.0, gap)
        if cap is not None:
            # The capacity is the mean of k readings taken at different minutes: a move of
            # one reading between two minutes (the drift, sqrt(2) of one reading's own)
            # moves their mean by drift / sqrt(2k); the steps' scatter about their level
            # (level_se) shows the same from the plateau's own readings.
            level = plateau_level(_with_held(steps, steady)) if model == "closed" else None
            k = len(level.steps) if level is not None else 1
            cap_ci = max(cap_ci or 0.0, abs(drift) * cap * math.sqrt(2 / max(k, 2)))
    return cap, cap_ci, drift, steady_ci


def _plateau_answer(
    steps: Sequence[StepResult], steady: StepResult | None, model: str
) -> dict[str, Any] | None:
    """_plateau_answer is ``answers.steady_state_plateau``: the closed model's plateau (its
    steps and the loads they span) and whether answer 1 is its level
    (:func:`steady_on_plateau`); None without a plateau of two loads or more, or without a
    steady step."""
    if model != "closed" or steady is None:
        return None
    level = plateau_level(_with_held(steps, steady))
    if level is None or len({s.load for s in level.steps}) < 2:
        return None
    loads = [s.load for s in level.steps]
    return {
        "steps": len(level.steps),
        "from_load": min(loads),
        "to_load": max(loads),
        "answer": steady_on_plateau(steps, steady, model) is not None,
    }


def _with_held(steps: Sequence[StepResult], steady: StepResult | None) -> list[StepResult]:
    """_with_held: the steps and the confirmation behind the steady answer, once."""
    held = [steady] if steady is not None and steady.phase == "confirm" else []
    return [*steps, *(s for s in held if all(s is not o for o in steps))]


def steady_on_plateau(
    steps: Sequence[StepResult], steady: StepResult | None, model: str
) -> Level[StepResult] | None:
    """steady_on_plateau is the closed model's plateau when answer 1 is its level: the
    steady step became steady and was held at a load on the plateau (one of the plateau's
    steps, or a load at least the lightest of them that read under it: at the plateau's
    edge, where users come and go around the knee). What the service sustains there is what
    every step on the plateau measured, not one step's reading: one reading put answer 1
    at 62 ± 3 tasks/s beside "stops growing at 58.8 ± 0.9", a steady state above its own
    limit. None otherwise (the open model, a plateau of one step, refusals)."""
    if model != "closed" or steady is None or steady.steady is False:
        return None
    level = plateau_level(_with_held(steps, steady))
    if level is None or len({s.load for s in level.steps}) < 2:
        return None
    if any(s is steady for s in level.steps) or steady.load >= min(s.load for s in level.steps):
        return level
    return None


def _optimal_answer(opt: StepResult | None, model: str) -> dict[str, Any] | None:
    """_optimal_answer: the optimal step's load, figures and power (None without one); its
    throughput with two standard errors of the step's intervals (the most power of several
    noisy steps tends to be a step that read high, as in the demo's 317 ± 63 tasks/s where
    the steps at the plateau agreed on 279 ± 19)."""
    if opt is None:
        return None
    return {
        load_key(model): opt.load,
        "throughput_rps": opt.throughput_rps,
        "throughput_ci": None if opt.throughput_se is None else 2 * opt.throughput_se,
        "p99_ms": opt.p99_ms,
        "mean_ms": opt.latency_ms,
        "power": power(opt.throughput_rps, opt.latency_ms),
        "step": opt.index,
        "steady": opt.steady is not False,
    }


def _limit_figures(
    limit: StepResult | None,
    cap: float | None,
    cap_ci: float | None,
    statuses: dict[str, int] | None,
) -> dict[str, Any]:
    """_limit_figures: the limit step's figures (None or empty without one), the capacity and
    its ±, and the run's refusals by HTTP status (``statuses``: every answer by status)."""
    refused = {
        k: int(v)
        for k, v in (statuses or {}).items()
        if str(k).isdigit() and int(k) >= 400 and int(v) > 0
    }
    return {
        "load": limit.load if limit else None,
        "step": limit.index if limit else None,
        "capacity_rps": cap,
        "capacity_ci": cap_ci,
        "throughput_rps": limit.throughput_rps if limit else None,
        "offered_rps": limit.offered_rps if limit else None,
        "errors_by_class": dict(limit.errors_by_class) if limit else {},
        "error_rate": limit.error_rate if limit else None,
        "refused_share": _refused_share(limit),
        "refused_statuses": refused,
        "p99_ms": limit.p99_ms if limit else None,
        "service": dict(limit.service) if limit else {},
    }


def _refused_share(limit: StepResult | None) -> float | None:
    """_refused_share: refused answers (an error status) as a share of all outcomes."""
    if limit is None:
        return None
    outcomes = limit.requests + limit.errors - limit.errors_by_class.get("status", 0)
    outcomes -= limit.errors_by_class.get("check", 0)
    if outcomes <= 0:
        return None
    return limit.errors_by_class.get("status", 0) / outcomes


def concurrency(step: StepResult, model: str) -> float | None:
    """concurrency is a step's N for the USL: the users in the closed model; in the open model
    the mean in-flight requests, measured or else from Little's law (throughput x latency)."""
    if model == "closed":
        return step.load
    if step.inflight_mean is not None:
        return step.inflight_mean
    if step.latency_ms > 0:
        return step.throughput_rps * step.latency_ms / 1000.0
    return None


def fit_steps(steps: Sequence[StepResult], model: str) -> UslFit:
    """fit_steps fits the USL to the steps' throughput against their concurrency."""
    ns: list[float] = []
    xs: list[float] = []
    for s in steps:
        n = concurrency(s, model)
        if n is not None and n > 0:
            ns.append(n)
            xs.append(s.throughput_rps)
    return fit_usl(ns, xs)


def analyse(
    steps: Sequence[StepResult],
    *,
    model: str,
    soak_samples: Sequence[dict[str, Any]] = (),
    **answer_options: Any,
) -> dict[str, Any]:
    """analyse returns the analysis keys of the find result: ``answers`` (see
    :func:`build_answers`, which gets ``answer_options``), ``usl`` (the fit plus ``x``, what
    N is, ``curve`` and ``agrees``: whether its predicted peak is consistent with the steps),
    ``knee`` (the optimal point: the same step as ``answers.optimal``, one definition, the
    most throughput per unit of latency), and ``checks`` with ``little`` (one entry per
    steady step with an in-flight figure) and ``leaks``: the leak check per resource over
    ``soak_samples`` (monitor samples taken while the load held still: a soak or the
    confirmation; over a stepped search fds and connections rise with the load, no leak)."""
    measured = [s for s in steps if s.phase != "recover"]
    usl = fit_steps(measured, model)
    usl_d = usl.to_dict()
    usl_d["x"] = "users" if model == "closed" else "in-flight"
    ns = [n for n in (concurrency(s, model) for s in measured) if n is not None]
    usl_d["curve"] = usl.curve(max(max(ns, default=1.0), usl.peak_n or 0.0) * 1.1) if usl.ok else []
    usl_d["agrees"] = _usl_agrees(usl, measured, model)
    answers = build_answers(steps, model=model, **answer_options)
    opt = answers["optimal"]
    knee = {
        "load": None if opt is None else opt.get(load_key(model)),
        "throughput_rps": None if opt is None else opt["throughput_rps"],
        "definition": "the most throughput per unit of latency (Kleinrock's power)",
    }
    little = []
    for s in steps:
        # Little's law holds for a stationary system only: a step that never became steady
        # (already said so in the report) or whose queue grew through it is not judged by it.
        if s.steady is False or set(s.fired) & NOT_STATIONARY:
            continue
        c = little_of(s)
        if c is not None:
            little.append({"step": s.index, **c.to_dict()})
    leaks = {k: t.to_dict() for k, t in leak_checks(soak_samples).items()} if soak_samples else {}
    return {
        "answers": answers,
        "usl": usl_d,
        "knee": knee,
        "checks": {"little": little, "leaks": leaks},
    }


#: NOT_STATIONARY: the conditions of a step whose queue grew through it, which Little's law
#: does not judge (``generator``: the open model's hits queued in a generator that fell
#: behind).
NOT_STATIONARY = frozenset({"backlog", "slo", "collapse", "plateau", "retrograde", "generator"})


def _usl_agrees(usl: UslFit, steps: Sequence[StepResult], model: str) -> bool | None:
    """_usl_agrees: a fitted USL's peak is consistent with what was measured: no step got
    more than 5 % over the predicted peak, and where the fit predicts a peak inside the
    measured range, the steps beyond it did not keep growing. None without a fit."""
    if not usl.ok:
        return None
    pts = [(concurrency(s, model), s.throughput_rps) for s in steps]
    pts2 = [(n, x) for n, x in pts if n is not None]
    if usl.peak_n is None or usl.peak_throughput_rps is None:
        return (usl.r2 or 0) >= 0.9
    if any(x > 1.05 * usl.peak_throughput_rps for _, x in pts2):
        return False
    beyond = sorted((n, x) for n, x in pts2 if n > 1.2 * usl.peak_n)
    if len(beyond) >= 2 and beyond[-1][1] > 1.05 * beyond[0][1]:
        return False
    return (usl.r2 or 0) >= 0.9
