"""sentences: the four answers said in words, from the answers' figures (a find result's
``answers``), so the terminal, the Markdown and the HTML report say them alike, even for a
result written by another version: the throughput and its ±, the latency there, the optimal
point, and the limit by its kind (the word "broke" only where a limit fired).
"""

from __future__ import annotations

from typing import Any


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


def rate_text(x: float | None, ci: float | None, unit: str) -> str:
    """rate_text says a throughput with its uncertainty: '1,250 ± 6 req/s'."""
    if x is None:
        return "n/a"
    if ci is None or ci <= 0:
        return f"{x:,.0f} {unit}"
    digits = 0 if ci >= 1 else 1
    return f"{x:,.{digits}f} ± {ci:,.{digits}f} {unit}"


def answer_sentences(
    answers: dict[str, Any],
    model: str,
    max_load: float | None = None,
) -> dict[str, str]:
    """answer_sentences says the four answers in words: keys ``throughput``, ``latency``,
    ``optimal`` and ``limit``. Optional keys may be missing (answers written by another
    search), so the report can say the answers of any find result."""
    unit = answers.get("unit") or "req/s"
    x = answers.get("steady_state_throughput_rps")
    lat = answers.get("latency_ms") or {}
    if x is None and answers.get("optimal") is not None:
        # Steps met every limit, but the confirmation of the load held after the search broke
        # one, and no lighter step did (redline.find.steady_answer).
        throughput = (
            "No steady state was confirmed: the load held again after the search broke a"
            " limit, and no lighter step met every limit, so there is no steady-state"
            " throughput to report."
        )
        latency = "No steady-state latency either: no step that met every limit was confirmed."
    elif x is None:
        throughput = "No step met every limit, so there is no steady-state throughput to report."
        latency = "No steady-state latency either: every step broke a limit."
    else:
        at = answers.get("steady_state_load")
        ci = answers.get("steady_state_throughput_ci")
        answered = answers.get("steady_state_answered_rps")
        where = [f"at {fmt_load(at, model)}"] if at is not None else []
        if unit != "req/s" and answered is not None:
            # The work counted in its own unit; the HTTP side of the same step beside it.
            where.append(f"{answered:,.0f} req/s answered over HTTP")
        throughput = f"In a steady state the service sustains {rate_text(x, ci, unit)}" + (
            f" ({'; '.join(where)})." if where else "."
        )
        plateau = answers.get("steady_state_plateau")
        if plateau:
            throughput = _on_plateau(answers, plateau, model, where, unit)
        there = "Its latency there"
        if answers.get("steady_state_reached") is False:
            # The step behind the answer still moved at its end: its means, called what they are.
            step = answers.get("steady_state_step")
            which = f"step {step}" if step is not None else "the step"
            throughput = (
                f"No steady state was reached: {which}{' ' + where[0] if where else ''} never"
                f" became steady within its time (its rate or latency still moved), so this is"
                f" its mean, not a steady state: {rate_text(x, ci, unit)}"
                + (f" ({'; '.join(where[1:])})." if where[1:] else ".")
                + " A longer step (--max-step, --confirm) or a quieter machine can judge it."
            )
            there = "Its latency over that step (not a steady state either)"
        latency = (
            f"{there}: p50 {_ms(lat.get('p50'))}, p90 {_ms(lat.get('p90'))}, "
            f"p95 {_ms(lat.get('p95'))}, p99 {_ms(lat.get('p99'))}, "
            f"p99.9 {_ms(lat.get('p99_9'))}."
        )
    opt = answers.get("optimal")
    if not opt:
        optimal = "No optimal operating point: no step met every limit."
    else:
        load = opt.get("users", opt.get("rate"))
        got = rate_text(opt["throughput_rps"], opt.get("throughput_ci"), unit)
        optimal = (
            f"It runs best at {fmt_load(load, model)}: {got} with p99 {_ms(opt.get('p99_ms'))},"
            " the most throughput per unit of latency (Kleinrock's power) among the steps that"
            " met every limit." + _read_high(opt, answers.get("limit") or {}, unit)
        )
        if opt.get("steady") is False:
            optimal += " That step never became steady within its time: read its figures loosely."
    limit = limit_sentence(answers.get("limit") or {}, model, max_load, unit)
    return {
        "throughput": throughput,
        "latency": latency,
        "optimal": optimal,
        "limit": limit + _beside_steady(answers, unit),
    }


def _on_plateau(
    answers: dict[str, Any], plateau: dict[str, Any], model: str, where: list[str], unit: str
) -> str:
    """_on_plateau: answer 1 in the closed model, where the steps agree on a plateau: its
    level, with the held step's own reading beside it (answer 1 is the level), or the held
    load said to be under it."""
    x, ci = answers.get("steady_state_throughput_rps"), answers.get("steady_state_throughput_ci")
    span = (
        f"{plateau['steps']} steps from {fmt_load(plateau['from_load'], model)} to"
        f" {fmt_load(plateau['to_load'], model)}"
    )
    if not plateau.get("answer"):
        cap = (answers.get("limit") or {}).get("capacity_rps")
        cap_ci = (answers.get("limit") or {}).get("capacity_ci")
        return (
            f"In a steady state the service sustains {rate_text(x, ci, unit)}"
            + (f" ({'; '.join(where)})." if where else ".")
            + f" That load is under its plateau: {span} agree on"
            f" {rate_text(cap, cap_ci, unit)}, what it sustains at its best."
        )
    step_x, step_ci = answers.get("steady_state_step_rps"), answers.get("steady_state_step_ci")
    held = f"held at {where[0].removeprefix('at ')}, " if where else ""
    under = ""
    if x is not None and step_x is not None and step_x < x - (ci or 0.0):
        under = ", under that level: a load at the plateau's edge"
    return (
        f"In a steady state the service sustains {rate_text(x, ci, unit)}, the level its"
        f" plateau's {span} agree on; {held}its step read {rate_text(step_x, step_ci, unit)}"
        + (f" ({'; '.join(where[1:])})" if where[1:] else "")
        + under
        + "."
    )


def _beside_steady(answers: dict[str, Any], unit: str) -> str:
    """_beside_steady: a sentence when answer 1's throughput reads above the capacity the
    limit sentence says the service sustained "at its best" (one step's reading against the
    steps at the top weighed together: on a short or disturbed search they can part), so the
    two figures are not left to contradict each other; else ''."""
    x, ci = answers.get("steady_state_throughput_rps"), answers.get("steady_state_throughput_ci")
    lim = answers.get("limit") or {}
    cap, cap_ci = lim.get("capacity_rps"), lim.get("capacity_ci")
    # Under half a unit or half a percent apart, the two read the same as printed.
    if x is None or cap is None or x - cap < max(0.5, 0.005 * cap):
        return ""
    one = f" Answer 1's step alone read {rate_text(x, ci, unit)}, more than that"
    if x - cap <= (ci or 0.0) + (cap_ci or 0.0):
        return one + ": the two readings are within each other's noise."
    return (
        one + ", beyond both readings' noise: what the service got moved during the search"
        " (another load on the machine?); search again on a quieter machine before planning"
        " on either figure."
    )


def _read_high(opt: dict[str, Any], lim: dict[str, Any], unit: str) -> str:
    """_read_high: a sentence when the optimal step read above the capacity even with its ±
    (the most power of several steps is likely one that read high: by noise, or by a
    backlog draining through its window), else ''."""
    cap, cap_ci = lim.get("capacity_rps"), lim.get("capacity_ci") or 0.0
    low = opt["throughput_rps"] - (opt.get("throughput_ci") or 0.0)
    if cap is None or low <= cap + cap_ci:
        return ""
    return (
        f" That step read more than the {rate_text(cap, lim.get('capacity_ci'), unit)} the"
        " service sustains at its best: it has the most power for reading high (the noise of"
        " a short step, or a backlog draining through it), not as a rate to plan on."
    )


def limit_sentence(
    lim: dict[str, Any],
    model: str,
    max_load: float | None,
    unit: str = "req/s",
) -> str:
    """limit_sentence says where and how the service fails, by the kind of failure, with
    the figures: the word "broke" only where a limit fired (errors, an SLO, a collapse)."""
    reason = lim.get("reason") or "none"
    kind = lim.get("kind") or ("none" if lim.get("load") is None else reason)
    if kind == "none" or lim.get("load") is None:
        upto = f" up to {fmt_load(max_load, model)}" if max_load is not None else ""
        head = f"No limit was found{upto}; the search stopped on '{reason}'."
        if lim.get("capacity_rps") is not None:
            cap = rate_text(lim.get("capacity_rps"), lim.get("capacity_ci"), unit)
            head += f" At its best it sustained {cap}."
        return head
    head = _limit_head(lim, kind, reason, model, unit)
    parts = [head if head.endswith(".") else head + "."]
    detail = lim.get("detail") or ""
    errors = {k: v for k, v in (lim.get("errors_by_class") or {}).items() if v}
    if errors and kind not in ("rate-limit",):
        listed = ", ".join(f"{v} {k}" for k, v in sorted(errors.items(), key=lambda kv: -kv[1]))
        parts.append(f"Errors by class: {listed} ({(lim.get('error_rate') or 0):.1%}).")
    if lim.get("p99_ms") is not None and kind != "shedding" and "p99 was" not in detail:
        parts.append(f"p99 was {_ms(lim['p99_ms'])}.")
    figures = _service_figures(lim.get("service") or {})
    if figures:
        parts.append("The service: " + ", ".join(figures) + ".")
    return " ".join(parts)


def _limit_head(lim: dict[str, Any], kind: str, reason: str, model: str, unit: str) -> str:
    """_limit_head: the limit sentence's first part, one case for each kind of limit."""
    cap = rate_text(lim.get("capacity_rps"), lim.get("capacity_ci"), unit)
    at = fmt_load(lim.get("load"), model)
    detail = lim.get("detail") or ""
    refused = lim.get("refused_statuses") or {}
    codes = "/".join(f"HTTP {k}" for k in sorted(refused)) or "an error status"
    share = lim.get("refused_share")
    offered = lim.get("offered_rps")
    got = lim.get("throughput_rps")
    if kind == "rate-limit" and model == "closed":
        head = (
            f"It is rate-limited: at {at} it refused {share or 0:.1%} of requests with {codes}"
            f" while accepting {cap}. A closed model cannot load it past its limiter (each user"
            " only gets refused faster); search with --model open to find the accepted rate."
        )
    elif kind == "rate-limit":
        head = (
            f"It is rate-limited at {cap}: offered {offered or 0:,.0f} req/s, it refused"
            f" {share or 0:.1%} with {codes} and accepted {got or 0:,.0f} {unit}."
        )
    elif kind == "shedding":
        head = (
            f"It sheds load past {cap}: at {at} it refused {share or 0:.1%} of requests with"
            f" {codes} while the answers it gave slowed (p99 {_ms(lim.get('p99_ms'))})."
        )
    elif kind == "saturation":
        head = f"Its capacity is {cap}: at {at} it fell behind ({detail})."
    elif kind == "plateau":
        head = f"Throughput stops growing at {cap}: more load only queues ({detail})."
    elif kind == "retrograde":
        head = f"Throughput peaks at {cap} and falls as load grows past it ({detail})."
    elif kind == "collapse":
        head = f"It broke at {at}: it collapsed ({detail}); it recovered when the load dropped."
        head += f" Before, at its best, it sustained {cap}."
    elif kind == "no-recovery":
        head = (
            f"It broke at {at} and did not recover: {detail}. A service that stays down after"
            f" the overload ends is a metastable failure. Before, at its best, it sustained {cap}."
        )
    elif kind == "generator":
        head = (
            f"No limit of the service was found: redline ran out of CPU (or waited for one)"
            f" at {at} ({detail});"
            f" at its best the service sustained {cap}."
        )
    elif kind == "knee":
        head = f"Not searched past the optimal point (--stop-at-knee): stopped at {at}."
    elif kind == "service-cpu":
        head = f"It reached the CPU limit set for the service at {at} ({detail})."
        head += f" Within it, at its best, it sustained {cap}."
    elif kind == "slo":
        head = f"It broke its SLO at {at}: {detail}."
        head += f" Within the SLO, at its best, it sustained {cap}."
    else:
        head = f"It broke at {at}: '{reason}' fired" + (f" ({detail})." if detail else ".")
    return head


def _service_figures(svc: dict[str, Any]) -> list[str]:
    """_service_figures: the monitored service's figures at the limit, as words."""
    figures = []
    if svc.get("cpu_percent") is not None:
        figures.append(f"CPU {svc['cpu_percent']:.0f} %")
    if svc.get("load1") is not None:
        figures.append(f"load average {svc['load1']:.2f}")
    if svc.get("fds") is not None:
        figures.append(f"{svc['fds']:.0f} open fds")
    if svc.get("rss_bytes") is not None:
        figures.append(f"RSS {svc['rss_bytes'] / 2**20:.0f} MiB")
    return figures
