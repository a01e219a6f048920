"""tables: an experiment document shown: the configurations' answers (or a run's figures)
side by side, the verdicts and the best, as terminal text, GitHub-flavoured Markdown and an
HTML page (the comparisons' tables and every configuration's curves overlaid)."""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: Reader reads one figure from a configuration's answers, given the throughput's unit and
#: the load's, as the table shows it (None where the answers have no such figure).
Reader = Callable[[dict[str, Any], str, str], str | None]

_STYLE = (
    "<style>td.worse{color:#b42318;font-weight:600}td.better{color:#1a7f37;font-weight:600}</style>"
)


def _rate(x: Any, unit: str) -> str | None:
    return None if x is None else f"{float(x):,.0f} {unit}"


def _ms(x: Any) -> str | None:
    return None if x is None else f"{float(x):.3g} ms" if float(x) < 1000 else f"{x:,.0f} ms"


def _load(x: Any, load_unit: str) -> str | None:
    return None if x is None else f"{float(x):g} {load_unit}"


def _optimal_load(a: dict[str, Any], load_unit: str) -> str | None:
    o = a.get("optimal") or {}
    return _load(o.get("users", o.get("rate")), load_unit)


#: ROWS: the side-by-side table, a row per figure: its label and its reader.
ROWS: list[tuple[str, Reader]] = [
    ("steady state", lambda a, u, lu: _rate(a.get("steady_state_throughput_rps"), u)),
    ("  at load", lambda a, u, lu: _load(a.get("steady_state_load"), lu)),
    ("  p50", lambda a, u, lu: _ms((a.get("latency_ms") or {}).get("p50"))),
    ("  p99", lambda a, u, lu: _ms((a.get("latency_ms") or {}).get("p99"))),
    ("  p99.9", lambda a, u, lu: _ms((a.get("latency_ms") or {}).get("p99_9"))),
    ("optimal", lambda a, u, lu: _rate((a.get("optimal") or {}).get("throughput_rps"), u)),
    ("  at load", lambda a, u, lu: _optimal_load(a, lu)),
    ("  p99", lambda a, u, lu: _ms((a.get("optimal") or {}).get("p99_ms"))),
    ("limit", lambda a, u, lu: _rate((a.get("limit") or {}).get("throughput_rps"), u)),
    ("  at load", lambda a, u, lu: _load((a.get("limit") or {}).get("load"), lu)),
    ("  reason", lambda a, u, lu: (a.get("limit") or {}).get("reason")),
]


#: RUN_ROWS: the side-by-side table of a run experiment, a row per figure of the runs'
#: ``figures``: its label and its reader (the same reader shape as ROWS').
RUN_ROWS: list[tuple[str, Reader]] = [
    ("goodput", lambda a, u, lu: _rate(a.get("throughput_rps"), u)),
    ("error rate", lambda a, u, lu: _percent(a.get("error_rate"))),
    ("p50", lambda a, u, lu: _ms(a.get("p50_ms"))),
    ("p90", lambda a, u, lu: _ms(a.get("p90_ms"))),
    ("p99", lambda a, u, lu: _ms(a.get("p99_ms"))),
    ("p99.9", lambda a, u, lu: _ms(a.get("p99_9_ms"))),
]


def _percent(x: Any) -> str | None:
    return None if x is None else f"{100 * float(x):.2f}%"


def is_run(doc: dict[str, Any]) -> bool:
    """is_run: the experiment ran each configuration at a fixed load (``redline run
    --vary``), not a search."""
    return doc.get("measure") == "run"


def grid(doc: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """grid: the side-by-side table's header (the configurations' labels) and rows (a label,
    then a cell per configuration; "–" where a figure is missing). With repeats a row gives
    the headline throughput's spread over them."""
    configs = doc["configurations"]
    load_unit = "users" if doc.get("model") == "closed" else "req/s"
    header = [c["label"] for c in configs]
    source, table, spread = ("answers", ROWS, "steady_state_throughput_rps")
    if is_run(doc):
        source, table, spread = ("figures", RUN_ROWS, "throughput_rps")
    rows = []
    for label, read in table:
        cells = []
        for c in configs:
            a = c.get(source) or {}
            cells.append(read(a, a.get("unit") or "req/s", load_unit) or "–")
        rows.append([label, *cells])
    if doc.get("repeat", 1) > 1:
        cells = []
        for c in configs:
            s = (c.get("spread") or {}).get(spread)
            unit = (c.get(source) or {}).get("unit") or "req/s"
            cells.append("–" if s is None else f"{s['min']:,.0f}–{s['max']:,.0f} {unit}")
        rows.insert(1, [f"  over {doc['repeat']} repeats", *cells])
    return header, rows


def headline(doc: dict[str, Any]) -> str:
    """headline: one line saying what the experiment was."""
    n = len(doc["configurations"])
    each = f", {doc['repeat']} runs each" if doc.get("repeat", 1) > 1 else ""
    what = "run" if is_run(doc) else "find"
    return (
        f"experiment: {n} configurations of `{doc['command']}`, a {what} ({doc.get('model')}"
        f" model) each{each}"
        + (" (interrupted: the configurations that ran)" if doc.get("interrupted") else "")
    )


def verdict_lines(doc: dict[str, Any]) -> list[str]:
    """verdict_lines: each comparison's sentence, then the best."""
    lines = [c["text"] for c in doc.get("comparisons") or []]
    b = doc.get("best")
    none = "no run measured anything" if is_run(doc) else "no configuration reached a steady state"
    lines.append(b["text"] if b else f"best: none ({none})")
    return lines


def render_text(doc: dict[str, Any]) -> str:
    """render_text is the terminal's view of an experiment."""
    header, rows = grid(doc)
    first = max(len(r[0]) for r in rows) + 2
    widths = [max(12, len(h), *(len(r[i + 1]) for r in rows)) + 2 for i, h in enumerate(header)]
    out = [headline(doc), ""]
    out.append(" " * first + "".join(f"{h:>{w}}" for h, w in zip(header, widths, strict=True)))
    for r in rows:
        cells = "".join(f"{x:>{w}}" for x, w in zip(r[1:], widths, strict=True))
        out.append(f"{r[0]:<{first}}{cells}")
    out.append("")
    out += verdict_lines(doc)
    return "\n".join(out) + "\n"


def render_markdown(doc: dict[str, Any]) -> str:
    """render_markdown: the table and the verdicts in GitHub-flavoured Markdown, then each
    comparison's figures as ``redline compare`` writes them."""
    header, rows = grid(doc)
    out = ["## redline experiment", "", _md(headline(doc).removeprefix("experiment: ")), ""]
    out.append("| | " + " | ".join(f"`{_md(h)}`" for h in header) + " |")
    out.append("| --- |" + " ---: |" * len(header))
    out += [
        "| " + " | ".join(_md(x.strip()) if i else _md(x) for i, x in enumerate(r)) + " |"
        for r in rows
    ]
    out += [""]
    lines = verdict_lines(doc)
    out += [f"- {_md(x)}" for x in lines[:-1]]
    out += ["", f"**{_md(lines[-1])}**", ""]
    for c in doc.get("comparisons") or []:
        out += [f"### `{_md(c['new'])}` against `{_md(c['base'])}`", ""]
        out += ["| | figure | base | new | change | 95% CI | verdict | windows |"]
        out += ["| --- | --- | ---: | ---: | ---: | ---: | :---: | --- |"]
        for r in c["rows"]:
            out.append(
                f"| {_md(r['group'])} | {r['figure']} | {_num(r['figure'], r['base'])} |"
                f" {_num(r['figure'], r['new'])} | {_change(r)} | {_ci(r)} | {r['verdict']} |"
                f" {r['windows'][0]}+{r['windows'][1]} |"
            )
        out.append("")
    return "\n".join(out)


def render_html(doc: dict[str, Any]) -> str:
    """render_html: a self-contained page: the table, the verdicts, each comparison's table
    and every configuration's charts overlaid (throughput against load, p99 against
    throughput, the steady state's percentiles and goodput over time)."""
    from redline.compare import page
    from redline.experiment.measures import Measure
    from redline.experiment.ranking import Ranked, compare
    from redline.report.page import page as _page

    header, rows = grid(doc)
    head = "<th></th>" + "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body_rows = "".join(
        "<tr>" + "".join(f"<td>{html.escape(x.strip())}</td>" for x in r) + "</tr>" for r in rows
    )
    lines = verdict_lines(doc)
    verdicts = "".join(f"<li>{html.escape(x)}</li>" for x in lines[:-1])
    measure = Measure(doc.get("measure", Measure.FIND.value))
    ranked = [
        Ranked(c["label"], c["vary"], [r["result"] for r in c["runs"]], measure)
        for c in doc["configurations"]
    ]
    docs = [d for x in ranked if x.results and (d := x.document()) is not None]
    window = float(doc.get("window_s") or 5.0)
    tables = "".join(
        page.comparison_table(cmp)
        for a, b in zip(ranked, ranked[1:], strict=False)
        if (cmp := compare(a, b, window)) is not None
    )
    body = (
        _STYLE + '<h2 id="configurations">Configurations</h2>'
        f'<div class="scroll"><table class="steps"><tr>{head}</tr>{body_rows}</table></div>'
        f'<section id="answers"><h2 id="verdicts">Verdicts</h2><ul>{verdicts}</ul>'
        f'<p id="best"><strong>{html.escape(lines[-1])}</strong></p></section>'
        f"{tables}"
    )
    title = "redline experiment: " + ", ".join(header)
    return _page(title, headline(doc), body, page.charts(docs) if docs else [])


def _num(figure: str, v: Any) -> str:
    from redline.compare.figures import parse_figure
    from redline.compare.tables import shown

    return shown(parse_figure(figure), v)


def _change(r: dict[str, Any]) -> str:
    c = r.get("change")
    if c is None:
        return "–"
    return f"{100 * c:+.2f}pp" if r["figure"] == "errors" else f"{100 * c:+.1f}%"


def _ci(r: dict[str, Any]) -> str:
    ci = r.get("ci")
    if not ci:
        return ""
    lo, hi = (100 * float(x) for x in ci)
    return f"[{lo:+.2f}, {hi:+.2f}]" if r["figure"] == "errors" else f"[{lo:+.1f}, {hi:+.1f}]"


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def write_outputs(
    doc: dict[str, Any], json_path: str | None, html_path: str | None, markdown: str | None
) -> None:
    """write_outputs writes the experiment document and the reports that were asked for."""
    if json_path:
        Path(json_path).write_text(json.dumps(doc, indent=2) + "\n")
    if html_path:
        Path(html_path).write_text(render_html(doc))
    if markdown:
        Path(markdown).write_text(render_markdown(doc))
