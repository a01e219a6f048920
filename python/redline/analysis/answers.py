"""answers: the four answers every load-test report owes, built from a search's steps.

1. steady-state throughput; 2. the steady-state latency distribution; 3. the optimal
operating point (Kleinrock's power among the steps that met every limit); 4. the limit (where
and how it broke). :func:`analyse` adds the models behind them: the USL fit, the knee, the
Little's-law check per step and the leak check on the monitor's series.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from redline.analysis.checks import leak_checks, little_check
from redline.analysis.knee import find_knee, power
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


def load_key(model: str) -> str:
    """load_key is what the load is called in the answers: ``users`` (closed) or ``rate``."""
    return "users" if model == "closed" else "rate"


def fmt_load(load: float | None, model: str) -> str:
    """fmt_load says a load with its unit: '40 users' or '120 req/s offered'."""
    if load is None:
        return "n/a"
    if model == "closed":
        return f"{load:.0f} users"
    return f"{load:.4g} req/s offered"


def _ms(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3g} ms" if v < 100 else f"{v:.0f} ms"


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


def build_answers(
    steps: Sequence[StepResult],
    *,
    model: str,
    steady: StepResult | None = None,
    latency_ms: dict[str, float | None] | None = None,
    limit: StepResult | None = None,
    reason: str | None = None,
    detail: str | None = None,
) -> dict[str, Any]:
    """build_answers returns the ``answers`` object of the result.

    ``steady`` is the step whose figures answer questions 1 and 2 (default: the good step
    with the most throughput; pass the confirmation step when there is one); ``latency_ms``
    overrides its percentiles (e.g. read from the confirmation run's histogram). ``limit``
    defaults to :func:`limit_step`, ``reason`` to the first condition it fired (or "none")
    and ``detail`` to its ``why``. ``text`` holds one sentence per question.
    """
    good = [s for s in steps if s.ok]
    if steady is None:
        steady = max(good, key=lambda s: s.throughput_rps, default=None)
    latency: dict[str, float | None] = {k: None for k in LATENCY_KEYS}
    if steady is not None:
        latency = {k: getattr(steady, f) for k, f in LATENCY_KEYS.items()}
    if latency_ms:
        latency.update({k: latency_ms[k] for k in LATENCY_KEYS if latency_ms.get(k) is not None})
    opt = optimal_step(steps)
    if limit is None:
        limit = limit_step(steps)
    if reason is None:
        reason = limit.fired[0] if limit is not None and limit.fired else "none"
    if detail is None:
        detail = limit.why if limit is not None else ""
    key = load_key(model)
    answers: dict[str, Any] = {
        "steady_state_throughput_rps": steady.throughput_rps if steady else None,
        "steady_state_load": steady.load if steady else None,
        "latency_ms": latency,
        "optimal": None
        if opt is None
        else {
            key: opt.load,
            "throughput_rps": opt.throughput_rps,
            "p99_ms": opt.p99_ms,
            "power": power(opt.throughput_rps, opt.latency_ms),
            "step": opt.index,
        },
        "limit": {
            "throughput_rps": limit.throughput_rps if limit else None,
            "load": limit.load if limit else None,
            "reason": reason,
            "detail": detail,
            "step": limit.index if limit else None,
            "errors_by_class": dict(limit.errors_by_class) if limit else {},
            "error_rate": limit.error_rate if limit else None,
            "p99_ms": limit.p99_ms if limit else None,
            "service": dict(limit.service) if limit else {},
        },
    }
    answers["text"] = answer_sentences(answers, model, max((s.load for s in steps), default=None))
    if not steps:
        none = "No step was measured: the search ended before its first step."
        answers["text"] = {k: none for k in answers["text"]}
    return answers


def answer_sentences(
    answers: dict[str, Any], model: str, max_load: float | None = None
) -> dict[str, str]:
    """answer_sentences says the four answers in words: keys ``throughput``, ``latency``,
    ``optimal`` and ``limit``. Optional keys may be missing (answers written by another
    search), so the report can say the answers of any find result."""
    x = answers.get("steady_state_throughput_rps")
    lat = answers.get("latency_ms") or {}
    if x is None:
        throughput = "No step met every limit, so there is no steady-state throughput to report."
        latency = "No steady-state latency either: every step broke a limit."
    else:
        at = answers.get("steady_state_load")
        throughput = f"In a steady state the service sustains {x:.0f} req/s" + (
            f" (at {fmt_load(at, model)})." if at is not None else "."
        )
        latency = (
            f"Its latency there: p50 {_ms(lat.get('p50'))}, p90 {_ms(lat.get('p90'))}, "
            f"p95 {_ms(lat.get('p95'))}, p99 {_ms(lat.get('p99'))}, "
            f"p99.9 {_ms(lat.get('p99_9'))}."
        )
    opt = answers.get("optimal")
    if not opt:
        optimal = "No optimal operating point: no step met every limit."
    else:
        load = opt.get("users", opt.get("rate"))
        optimal = (
            f"It runs best at {fmt_load(load, model)}: "
            f"{opt['throughput_rps']:.0f} req/s with p99 {_ms(opt.get('p99_ms'))}, the most "
            "throughput per unit of latency (Kleinrock's power) among the steps that met "
            "every limit."
        )
    return {
        "throughput": throughput,
        "latency": latency,
        "optimal": optimal,
        "limit": _limit_sentence(answers.get("limit") or {}, model, max_load),
    }


def _limit_sentence(lim: dict[str, Any], model: str, max_load: float | None) -> str:
    reason = lim.get("reason") or "none"
    if lim.get("load") is None:
        upto = f" up to {fmt_load(max_load, model)}" if max_load is not None else ""
        return f"No limit was found{upto}; the search stopped on '{reason}'."
    x = lim.get("throughput_rps")
    rate = f" ({x:.0f} req/s)" if x is not None else ""
    detail = lim.get("detail")
    parts = [
        f"It broke at {fmt_load(lim['load'], model)}{rate}: '{reason}' fired"
        + (f" ({detail})." if detail else ".")
    ]
    errors = {k: v for k, v in (lim.get("errors_by_class") or {}).items() if v}
    if errors:
        listed = ", ".join(f"{v} {k}" for k, v in sorted(errors.items(), key=lambda kv: -kv[1]))
        parts.append(f"Errors by class: {listed} ({(lim.get('error_rate') or 0):.1%}).")
    if lim.get("p99_ms") is not None:
        parts.append(f"p99 was {_ms(lim['p99_ms'])}.")
    svc = lim.get("service") or {}
    figures = []
    if svc.get("cpu_percent") is not None:
        figures.append(f"CPU {svc['cpu_percent']:.0f} %")
    if svc.get("load1") is not None:
        figures.append(f"load average {svc['load1']:.2f}")
    if svc.get("fds") is not None:
        figures.append(f"{svc['fds']:.0f} open fds")
    if svc.get("rss_bytes") is not None:
        figures.append(f"RSS {svc['rss_bytes'] / 2**20:.0f} MiB")
    if figures:
        parts.append("The service: " + ", ".join(figures) + ".")
    return " ".join(parts)


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
    N is, and ``curve``), ``knee``, and ``checks`` with ``little`` (one entry per step with
    an in-flight figure) and ``leaks``: the leak check per resource over ``soak_samples``
    (monitor sample dicts taken while the load held still: a soak or the confirmation step;
    over a stepped search fds and connections rise with the load, which is no leak)."""
    usl = fit_steps(steps, model)
    usl_d = usl.to_dict()
    usl_d["x"] = "users" if model == "closed" else "in-flight"
    ns = [n for n in (concurrency(s, model) for s in steps) if n is not None]
    usl_d["curve"] = usl.curve(max(max(ns, default=1.0), usl.peak_n or 0.0) * 1.1) if usl.ok else []
    knee = find_knee([s.load for s in steps], [s.throughput_rps for s in steps])
    little = []
    for s in steps:
        # Little's law holds for a stationary system only: a step that never became steady
        # (already said so in the report) is not judged by it.
        if s.steady is False:
            continue
        if s.inflight_mean is not None and s.mean_ms is not None:
            c = little_check(s.inflight_mean, s.throughput_rps, s.mean_ms)
            little.append({"step": s.index, **c.to_dict()})
    leaks = {k: t.to_dict() for k, t in leak_checks(soak_samples).items()} if soak_samples else {}
    return {
        "answers": build_answers(steps, model=model, **answer_options),
        "usl": usl_d,
        "knee": knee.to_dict(),
        "checks": {"little": little, "leaks": leaks},
    }
