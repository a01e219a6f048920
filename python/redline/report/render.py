"""render: a result as a document people read. One self-contained HTML file (charts drawn by
uPlot, vendored under ``redline/assets`` and inlined, so it opens offline) and a Markdown
summary with the table the seed authors typed by hand.

A *find result* is the dict ``redline find --json`` writes (``docs/schema/find.schema.json``):
``answers``, ``steps``, ``timeseries``, and optionally ``usl``, ``knee``, ``checks``,
``monitor``, ``stop``, ``config``. A *run result* is ``redline run --json``'s document
(``docs/schema/result.schema.json``). The renderers only read; missing optional figures show
as a dash.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from redline.analysis import answer_sentences
from redline.errors import RedlineError
from redline.report.charts import find_charts, monitor_samples, num, run_charts
from redline.report.page import page, sanitise
from redline.report.run_parts import errors_sentence, lag_sentence, scenario_html, what_ran

#: QUESTIONS: the four questions, in the order every report answers them.
QUESTIONS = (
    ("throughput", "Steady-state throughput"),
    ("latency", "Latency distribution"),
    ("optimal", "Optimal operating point"),
    ("limit", "Limits"),
)

DASH = "–"


# -- loading ---------------------------------------------------------------------------------


def is_find_result(result: dict[str, Any]) -> bool:
    """is_find_result: the dict is a find result (it has answers and steps), not a run's."""
    return isinstance(result.get("answers"), dict) and isinstance(result.get("steps"), list)


def load_result(path: str | Path) -> dict[str, Any]:
    """load_result reads a find or run result from JSON; a missing file, bad JSON or a
    document that is neither raises :class:`RedlineError` with one line saying so."""
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise RedlineError(f"cannot read {str(path)!r}: {e.strerror or e}") from e
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise RedlineError(f"{str(path)!r} is not JSON: {e.msg} at line {e.lineno}") from e
    if not isinstance(data, dict) or not (is_find_result(data) or "timeseries" in data):
        raise RedlineError(f"{str(path)!r} is neither a find nor a run result")
    return data


def write_reports(
    result: dict[str, Any], html_path: str | Path | None = None, md_path: str | Path | None = None
) -> None:
    """write_reports writes the HTML and/or Markdown report of a find or run result."""
    if html_path is not None:
        render = render_html if is_find_result(result) else render_run_html
        Path(html_path).write_text(render(result))
    if md_path is not None:
        if is_find_result(result):
            Path(md_path).write_text(render_markdown(result))
        else:
            from redline.report.run_markdown import render_run_markdown

            Path(md_path).write_text(render_run_markdown(result))


# -- formatting ------------------------------------------------------------------------------


def fmt(v: Any, digits: int = 3, scale: float = 1.0, suffix: str = "") -> str:
    """fmt shows a figure with ``digits`` significant digits (whole numbers above that), or
    a dash when it is missing."""
    f = num(v)
    if f is None:
        return DASH
    f *= scale
    if abs(f) < 1e-9:
        return f"0{suffix}"  # a fitted 3e-19 is a zero that floating point missed
    if abs(f) >= 10 ** (digits - 1):
        return f"{f:,.0f}{suffix}"
    return f"{f:.{digits}g}{suffix}"


def _pct(v: Any) -> str:
    f = num(v)
    return DASH if f is None else f"{100 * f:.2f}"


def sentences(result: dict[str, Any]) -> dict[str, str]:
    """sentences is the four answers in words: the result's own ``answers.text`` when the
    search wrote it, else said here from the figures."""
    answers = result.get("answers") or {}
    text = answers.get("text")
    if isinstance(text, dict) and all(isinstance(text.get(k), str) for k, _ in QUESTIONS):
        return {k: text[k] for k, _ in QUESTIONS}
    loads = [v for v in (num(s.get("load")) for s in result.get("steps") or []) if v is not None]
    return answer_sentences(answers, result.get("model", "closed"), max(loads, default=None))


def _load_of(answer: dict[str, Any] | None) -> Any:
    if not answer:
        return None
    return answer.get("users", answer.get("rate", answer.get("load")))


def headline(result: dict[str, Any]) -> dict[str, str]:
    """headline is the big figure of each answer card."""
    a = result.get("answers") or {}
    lat = a.get("latency_ms") or {}
    unit = "users" if result.get("model", "closed") == "closed" else "req/s offered"
    opt, lim = a.get("optimal") or {}, a.get("limit") or {}
    rate = a.get("unit") or "req/s"
    cap = lim.get("capacity_rps", lim.get("throughput_rps"))
    ci = num(lim.get("capacity_ci"))
    pm = f" ± {fmt(ci)}" if ci else ""
    # Answers 1 and 2 from a step that never became steady are its means: the card says so.
    unsteady = " (not steady)" if a.get("steady_state_reached") is False else ""
    return {
        "throughput": f"{fmt(a.get('steady_state_throughput_rps'))} {rate}{unsteady}",
        "latency": f"p99 {fmt(lat.get('p99'))} ms{unsteady}",
        "optimal": f"{fmt(_load_of(opt))} {unit}" if opt else DASH,
        "limit": f"{fmt(cap)}{pm} {rate} ({lim.get('kind') or lim.get('reason')})"
        if lim.get("load") is not None
        else "not reached",
    }


def notes(result: dict[str, Any]) -> list[str]:
    """notes are the warnings a reader must not miss: a limit that is redline's own, steps
    whose figures fail Little's law, suspected leaks, a poor USL fit, an unsteady step."""
    out = []
    if (
        result.get("generator_limited")
        or (result.get("stop") or {}).get("condition") == "generator"
    ):
        out.append(
            "The limit found is redline's own, or the machine's: the load generator ran out of "
            "CPU, or waited for one it shared with the service, before the service's own limit. "
            "Give redline cores of its own (run it on another machine) and search again."
        )
    for o in result.get("outages") or []:
        end = num(o.get("end_s"))
        back = (
            f"came back at {fmt(end)} s"
            if end is not None
            else "had not come back when the run ended"
        )
        out.append(
            f"The target stopped answering at {fmt(o.get('start_s'))} s"
            f" ({o.get('error_class', 'errors')}: {o.get('errors', 0)} errors) and {back}:"
            " the steps over that span measured the outage, not the service."
        )
    checks = result.get("checks") or {}
    bad = [c for c in checks.get("little") or [] if c.get("ok") is False]
    if bad:
        listed = ", ".join(
            f"step {c.get('step')} (in flight {fmt(c.get('inflight'))} vs "
            f"throughput x latency {fmt(c.get('expected'))})"
            for c in bad
        )
        out.append(
            f"Little's law does not hold for {listed}: treat those steps' figures as a "
            "measurement problem (a generator that fell behind, or lost completions)."
        )
    for key, trend in (checks.get("leaks") or {}).items():
        if trend.get("suspected"):
            p = num(trend.get("p_value"))
            sig = DASH if p is None else "p<0.001" if p < 0.001 else f"p={p:.3f}"
            out.append(
                f"Suspected leak: the service's {key.replace('_', ' ')} rose "
                f"{fmt(trend.get('rise'))} while the load held steady "
                f"({fmt(trend.get('slope_per_s'))}/s, {sig})."
            )
    usl = result.get("usl") or {}
    if (
        usl.get("ok")
        and usl.get("agrees") is not False
        and num(usl.get("r2")) is not None
        and float(usl["r2"]) < 0.9
    ):
        out.append(f"The USL fits these steps poorly (R² {fmt(usl['r2'])}): read its peak loosely.")
    out.extend(_unsteady_notes(result))
    return out


def _unsteady_notes(result: dict[str, Any]) -> list[str]:
    """_unsteady_notes: the steps that met every limit but never became steady, and which
    answers rest on them (the answers' sentences say the same: means, not a steady state)."""
    answers = result.get("answers") or {}
    behind: dict[Any, list[str]] = {}
    if answers.get("steady_state_reached") is False:
        behind.setdefault(answers.get("steady_state_step"), []).extend(["1", "2"])
    opt = answers.get("optimal") or {}
    if opt.get("steady") is False:
        behind.setdefault(opt.get("step"), []).append("3")
    unsteady = [
        s.get("index")
        for s in result.get("steps") or []
        if s.get("steady") is False and not s.get("fired")
    ]
    if not unsteady:
        return []
    which = "Step" if len(unsteady) == 1 else "Steps"
    line = (
        f"{which} {', '.join(str(i) for i in unsteady)} never became steady within"
        f" {'its' if len(unsteady) == 1 else 'their'} time (the rate or latency still moved)."
    )
    rest = [
        f"answer{'s' if len(a) > 1 else ''} {' and '.join(a)} rest{'' if len(a) > 1 else 's'}"
        f" on step {i}"
        for i, a in behind.items()
        if i in unsteady
    ]
    if rest:
        said = "; ".join(rest)
        whose = "that step's" if len(rest) == 1 else "those steps'"
        line += f" {said[0].upper()}{said[1:]}: {whose} means, not a steady state."
    return [line]


# -- the steps table -------------------------------------------------------------------------


def _verdict(step: dict[str, Any]) -> str:
    fired = step.get("fired") or []
    if not fired and step.get("ok", True):
        return "ok"
    return ", ".join(fired) or "bad"


def _cpu_load(step: dict[str, Any]) -> str:
    svc = step.get("service") or {}
    cpu, load = num(svc.get("cpu_percent")), num(svc.get("load1"))
    if cpu is None and load is None:
        return DASH
    return f"{fmt(cpu, 2)} / {fmt(load, 2)}"


#: STEP_COLUMNS: the HTML steps table: heading and how to show each step's figure.
STEP_COLUMNS: list[tuple[str, Callable[[dict[str, Any]], str]]] = [
    ("step", lambda s: str(s.get("index", DASH))),
    ("phase", lambda s: str(s.get("phase") or DASH)),
    ("load", lambda s: fmt(s.get("load"))),
    ("duration s", lambda s: fmt(s.get("duration_s"))),
    ("offered req/s", lambda s: fmt(s.get("offered_rps"))),
    ("req/s", lambda s: fmt(s.get("throughput_rps"))),
    ("p50 ms", lambda s: fmt(s.get("p50_ms"))),
    ("p90 ms", lambda s: fmt(s.get("p90_ms"))),
    ("p95 ms", lambda s: fmt(s.get("p95_ms"))),
    ("p99 ms", lambda s: fmt(s.get("p99_ms"))),
    ("p99.9 ms", lambda s: fmt(s.get("p99_9_ms"))),
    ("errors %", lambda s: _pct(s.get("error_rate"))),
    ("in flight", lambda s: fmt(s.get("inflight_mean"))),
    ("CPU % / load", _cpu_load),
    ("RSS MiB", lambda s: fmt((s.get("service") or {}).get("rss_bytes"), scale=1 / 2**20)),
    ("fds", lambda s: fmt((s.get("service") or {}).get("fds"))),
    ("verdict", _verdict),
]


def _steps_html(result: dict[str, Any]) -> str:
    steps = result.get("steps") or []
    a = result.get("answers") or {}
    opt_step = (a.get("optimal") or {}).get("step")
    lim_step = (a.get("limit") or {}).get("step")
    unit = "users" if result.get("model", "closed") == "closed" else "offered req/s"
    head = "".join(
        f"<th>{html.escape(unit if name == 'load' else name)}</th>" for name, _ in STEP_COLUMNS
    )
    rows = []
    for s in steps:
        cls = ["ok" if _verdict(s) == "ok" else "bad"]
        if opt_step is not None and s.get("index") == opt_step:
            cls.append("optimal")
        if lim_step is not None and s.get("index") == lim_step:
            cls.append("limit")
        cells = "".join(f"<td>{html.escape(show(s))}</td>" for _, show in STEP_COLUMNS)
        title = html.escape(str(s.get("why") or ""), quote=True)
        rows.append(f'<tr class="{" ".join(cls)}" title="{title}">{cells}</tr>')
    if not rows:
        rows.append(f'<tr><td colspan="{len(STEP_COLUMNS)}">no steps</td></tr>')
    return (
        '<table class="steps"><thead><tr>'
        + head
        + "</tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )


# -- the models ------------------------------------------------------------------------------


def _models_html(result: dict[str, Any]) -> str:
    usl, knee = result.get("usl") or {}, result.get("knee") or {}
    items = []
    if usl.get("ok"):
        peak = (
            f"predicted peak {fmt(usl.get('peak_throughput_rps'))} req/s at "
            f"{fmt(usl.get('peak_n'))} {usl.get('x', 'users')}"
            if usl.get("peak_n") is not None
            else "no predicted peak (κ = 0: throughput levels off)"
        )
        if usl.get("agrees") is False:
            peak = (
                "the measured steps contradict its prediction (a model, not the answer:"
                " the answers above come from the steps)"
            )
        items.append(
            f"Universal Scalability Law: λ = {fmt(usl.get('lam'))} req/s per user, "
            f"σ = {fmt(usl.get('sigma'))} (contention), κ = {fmt(usl.get('kappa'))} "
            f"(crosstalk), R² = {fmt(usl.get('r2'))}; {peak}."
        )
    elif usl:
        items.append(f"Universal Scalability Law: no fit ({usl.get('note', '')}).")
    if knee.get("load") is not None:
        items.append(
            f"Knee (the optimal point: the most throughput per unit of latency): "
            f"{fmt(knee['load'])} "
            f"{'users' if result.get('model', 'closed') == 'closed' else 'req/s offered'} "
            f"({fmt(knee.get('throughput_rps'))} req/s)."
        )
    elif knee:
        items.append("Knee: none (no step met every limit).")
    stop = result.get("stop") or {}
    if stop:
        items.append(
            f"The search stopped on '{stop.get('condition', DASH)}'"
            + (f": {stop['detail']}" if stop.get("detail") else "")
            + "."
        )
    if not items:
        return ""
    return "<ul>" + "".join(f"<li>{html.escape(i)}</li>" for i in items) + "</ul>"


def _config_html(result: dict[str, Any]) -> str:
    config = result.get("config") or result.get("limits")
    if not config:
        return ""
    text = json.dumps(sanitise(config), indent=2, sort_keys=True, default=str)
    return f"<details><summary>Configuration</summary><pre>{html.escape(text)}</pre></details>"


def _answers_html(result: dict[str, Any]) -> str:
    text, figures = sentences(result), headline(result)
    cards = "".join(
        f'<div class="answer" id="answer-{key}"><h3>{i}. {html.escape(title)}</h3>'
        f'<div class="figure">{html.escape(figures[key])}</div>'
        f"<p>{html.escape(text[key])}</p></div>"
        for i, (key, title) in enumerate(QUESTIONS, 1)
    )
    said = "".join(f"<li>{html.escape(n)}</li>" for n in answer_notes(result))
    below = f'<ul class="notes" id="answer-notes">{said}</ul>' if said else ""
    return f'<section class="answers" id="answers">{cards}</section>{below}'


def answer_notes(result: dict[str, Any]) -> list[str]:
    """answer_notes: what the search said under its answers (the bottleneck named, the
    machine's CPUs, the confirmation's drift: ``answers.notes``), as the console said it."""
    return [str(n) for n in (result.get("answers") or {}).get("notes") or []]


def _meta(result: dict[str, Any]) -> str:
    model = result.get("model", "closed")
    parts = [str(result.get("scenario") or result.get("url") or "")]
    parts.append(f"{model} model ({'users' if model == 'closed' else 'arrival rate'} stepped)")
    if result.get("started_at"):
        parts.append(str(result["started_at"]))
    if num(result.get("duration_s")) is not None:
        parts.append(f"{fmt(result['duration_s'])} s")
    stop = (result.get("stop") or {}).get("condition")
    if stop:
        parts.append(f"stopped on '{stop}'")
    return " · ".join(p for p in parts if p)


def render_html(result: dict[str, Any]) -> str:
    """render_html renders a find result as one self-contained HTML page: the four answers
    at the top, warnings, the charts, the steps table, the models and the configuration."""
    warn = notes(result)
    body = _answers_html(result)
    if warn:
        body += (
            '<h2 id="notes">Read this first</h2><ul class="notes">'
            + "".join(f"<li>{html.escape(n)}</li>" for n in warn)
            + "</ul>"
        )
    body += (
        f'<h2 id="steps">Steps</h2><div class="scroll">{_steps_html(result)}</div>'
        f'<h2 id="models">Models</h2>{_models_html(result)}{_config_html(result)}'
    )
    said = tallies(result)
    if said:
        body += (
            '<h2 id="tally">What the service said</h2><ul class="notes">'
            + "".join(
                f"<li><b>{html.escape(name)}</b>: {html.escape(text)}</li>" for name, text in said
            )
            + "</ul>"
        )
    cluster = _cluster(result)
    if cluster.get("injectors"):
        from redline.cluster.table import render_html as injectors_html

        body += injectors_html(cluster["injectors"])
    return page("redline capacity report", _meta(result), body, find_charts(result))


def _cluster(result: dict[str, Any]) -> dict[str, Any]:
    """_cluster is a find result's cluster section (its run's: injectors, loss), {} if none."""
    return dict((result.get("run") or {}).get("cluster") or {})


def tallies(result: dict[str, Any]) -> list[tuple[str, str]]:
    """tallies are the (name, :func:`tally_text`) of each request name with a tally, over
    the whole run (a find result keeps its run's per-name figures under ``run``)."""
    per_name = result.get("per_name") or (result.get("run") or {}).get("per_name") or {}
    return [(n, tally_text(e["tally"])) for n, e in sorted(per_name.items()) if e.get("tally")]


def tally_text(tally: dict[str, int] | None) -> str:
    """tally_text is a name's tally in one line, most frequent first, with shares:
    ``RUNNING 1,204 (75%) · SUCCEEDED 400 (25%)``; empty without one."""
    if not tally:
        return ""
    total = sum(tally.values()) or 1
    ranked = sorted(tally.items(), key=lambda kv: (-kv[1], kv[0]))
    return " · ".join(f"{v} {n:,} ({n / total:.0%})" for v, n in ranked)


def _run_sentences(result: dict[str, Any]) -> dict[str, str]:
    lat = result.get("latency_ms") or {}
    gen = result.get("generator") or {}
    return {
        "throughput": f"{fmt(result.get('requests'))} requests in {fmt(result.get('duration_s'))} s"
        f" after warm-up: {fmt(result.get('rps'))} req/s.",
        "latency": f"p50 {fmt(lat.get('p50'))} ms, p90 {fmt(lat.get('p90'))} ms, "
        f"p99 {fmt(lat.get('p99'))} ms, p99.9 {fmt(lat.get('p99_9'))} ms, "
        f"max {fmt(lat.get('max'))} ms." + lag_sentence(result, fmt),
        "errors": errors_sentence(result),
        "generator": str(gen.get("verdict") or ""),
    }


def render_run_html(result: dict[str, Any]) -> str:
    """render_run_html renders a plain ``redline run`` result (its --json document) as one
    self-contained HTML page: throughput and latency at the top, then the charts over time
    and the per-name table. A single run cannot say where the service runs best or breaks:
    that is ``redline find``'s job."""
    text = _run_sentences(result)
    cards = [
        ("throughput", "Throughput", f"{fmt(result.get('rps'))} req/s"),
        (
            "latency",
            "Latency distribution",
            f"p99 {fmt((result.get('latency_ms') or {}).get('p99'))} ms",
        ),
        (
            "errors",
            "Errors",
            f"{fmt(result.get('errors_total', sum((result.get('errors') or {}).values())))}",
        ),
        (
            "generator",
            "Generator",
            "saturated" if (result.get("generator") or {}).get("saturated") else "kept up",
        ),
    ]
    body = (
        '<section class="answers" id="answers">'
        + "".join(
            f'<div class="answer" id="answer-{k}"><h3>{html.escape(t)}</h3>'
            f'<div class="figure">{html.escape(f)}</div><p>{html.escape(text[k])}</p></div>'
            for k, t, f in cards
        )
        + "</section>"
    )
    per_name = result.get("per_name") or {}
    if per_name:
        rows = "".join(
            f"<tr><td>{html.escape(name)}</td><td>{fmt(v.get('requests'))}</td>"
            f"<td>{fmt(v.get('errors'))}</td>"
            + "".join(
                f"<td>{fmt((v.get('latency_ms') or {}).get(k))}</td>"
                for k in ("p50", "p90", "p99", "max")
            )
            + f'<td style="text-align:left">{html.escape(tally_text(v.get("tally")))}</td>'
            + "</tr>"
            for name, v in sorted(per_name.items())
        )
        body += (
            '<h2 id="per-name">Requests by name</h2><table class="steps"><thead><tr>'
            "<th>name</th><th>requests</th><th>errors</th><th>p50 ms</th><th>p90 ms</th>"
            "<th>p99 ms</th><th>max ms</th><th>tally</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>"
        )
    body += scenario_html(result)
    injectors = (result.get("cluster") or {}).get("injectors")
    if injectors:
        from redline.cluster.table import render_html

        body += render_html(injectors)
    meta = " · ".join(
        str(p)
        for p in (
            what_ran(result),
            f"{result.get('model', 'closed')} model",
            f"{result.get('connections', DASH)} connections",
            f"{fmt(result.get('duration_s'))} s",
        )
    )
    title = "redline scenario report" if result.get("scenario") else "redline run report"
    return page(title, meta, body, run_charts(result))


# -- Markdown --------------------------------------------------------------------------------


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(result: dict[str, Any]) -> str:
    """render_markdown renders a find result as Markdown: the four answers, then the table
    the seed authors typed by hand (step, users or rate, duration, RPS, p50, p95, p99,
    failures %, service CPU / load, verdict), then the warnings and the models."""
    model = result.get("model", "closed")
    text = sentences(result)
    out = [f"# redline capacity report: {result.get('scenario') or result.get('url') or ''}", ""]
    out += [_meta(result), "", "## The four answers", ""]
    for i, (key, title) in enumerate(QUESTIONS, 1):
        out.append(f"{i}. **{title}:** {text[key]}")
    out += [""] + [f"- {n}" for n in answer_notes(result)] if answer_notes(result) else []
    warn = notes(result)
    if warn:
        out += ["", "## Read this first", ""] + [f"- {n}" for n in warn]
    unit = "Users" if model == "closed" else "Rate (req/s)"
    header = [
        "Step",
        unit,
        "Duration (s)",
        "RPS",
        "p50 (ms)",
        "p95 (ms)",
        "p99 (ms)",
        "Failures (%)",
        "Service CPU (%) / load",
        "Verdict",
    ]
    out += ["", "## Steps", "", "| " + " | ".join(header) + " |"]
    out.append(
        "|" + "|".join("---:" if i < len(header) - 1 else "---" for i in range(len(header))) + "|"
    )
    for s in result.get("steps") or []:
        verdict = _verdict(s)
        if s.get("why"):
            verdict += f": {s['why']}"
        cells = [
            str(s.get("index", DASH)),
            fmt(s.get("load")),
            fmt(s.get("duration_s")),
            fmt(s.get("throughput_rps")),
            fmt(s.get("p50_ms")),
            fmt(s.get("p95_ms")),
            fmt(s.get("p99_ms")),
            _pct(s.get("error_rate")),
            _cpu_load(s),
            verdict,
        ]
        out.append("| " + " | ".join(_md_cell(c) for c in cells) + " |")
    models = _models_html(result)
    if models:
        items = [html.unescape(i.split("</li>")[0]) for i in models.split("<li>")[1:]]
        out += ["", "## Models", ""] + [f"- {i}" for i in items]
    said = tallies(result)
    if said:
        out += ["", "## What the service said", ""]
        out += [f"- **{_md_cell(name)}**: {_md_cell(text)}" for name, text in said]
    samples = monitor_samples(result)
    if samples:
        out += ["", f"Service monitor: {len(samples)} samples (see the HTML report's charts)."]
    cluster = _cluster(result)
    if cluster.get("injectors"):
        from redline.cluster.table import render_markdown as injectors_markdown

        out += ["", "## Injectors", "", injectors_markdown(cluster["injectors"])]
    return "\n".join(out) + "\n"
