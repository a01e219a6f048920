"""page: a comparison as a self-contained HTML page: the tables, and every result's charts
overlaid (latency by percentile, goodput and p99 over time; for find results the throughput
against the load and the latency against the throughput of each configuration).

The page is built by the report's page template (:func:`redline.report.page.page`: uPlot and its
renderer embedded, so it opens offline) and the chart types of :mod:`redline.report.charts`.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

from redline import _engine
from redline.compare.comparison import Comparison
from redline.compare.counting import outcomes
from redline.compare.documents import Document, Kind
from redline.compare.significance import Verdict
from redline.compare.tables import evidence, shown, shown_change, shown_ci
from redline.compare.windows import Stretch
from redline.report.charts import PALETTE, Chart, Series, num

#: NINES are the quantiles of the percentile curve: 0 .. 0.9999, denser in the tail.
NINES = [1 - 10 ** (-k / 8) for k in range(0, 33)]

_STYLE = (
    "<style>td.worse{color:#b42318;font-weight:600}td.better{color:#1a7f37;font-weight:600}"
    "table.steps td:first-child,table.steps td:nth-child(2){text-align:left}</style>"
)


def render_html(comparisons: Sequence[Comparison]) -> str:
    """render_html is the page for comparisons that share a base."""
    from redline.report.page import page as _page

    if not comparisons:
        raise ValueError("render_html needs at least one comparison")
    docs = [comparisons[0].base, *(c.new for c in comparisons)]
    body = _STYLE + "".join(comparison_table(c) for c in comparisons)
    title = "redline compare: " + " vs ".join(d.label for d in docs)
    meta = f"base {docs[0].label}: {docs[0].description}"
    return _page(title, meta, body, charts(docs))


def charts(docs: Sequence[Document]) -> list[Chart]:
    """charts: the overlaid charts of the documents (base first), those with data."""
    made = [percentile_chart(docs), over_time_chart(docs, "goodput"), over_time_chart(docs, "p99")]
    if docs and docs[0].kind is Kind.FIND:
        made += [steps_chart(docs, "load", "throughput_rps"), steps_chart(docs, "tput", "p99_ms")]
    return [c for c in made if c is not None and c.points()]


def percentile_chart(docs: Sequence[Document]) -> Chart | None:
    """percentile_chart: latency against percentile, x in nines (1 = p90, 2 = p99, 3 =
    p99.9), of each result's headline stretch (the run, or the steady state)."""
    curves = []
    for d in docs:
        hists = [h for s in _headline(d).snapshots if isinstance(h := s.get("histogram"), str)]
        hists = [h for h in hists if h]
        if not hists:
            continue
        count, values = _engine.histogram_quantiles(_engine.merge_histograms(hists), NINES)
        if count:
            xs = [-math.log10(1 - q) if q < 1 else 4.0 for q in NINES]
            curves.append((d.label, xs, [v / 1000.0 for v in values]))
    return _overlay(
        "percentiles",
        "Latency by percentile",
        "percentile (nines: 1 = p90, 2 = p99, 3 = p99.9)",
        "ms",
        curves,
    )


def over_time_chart(docs: Sequence[Document], what: str) -> Chart | None:
    """over_time_chart: goodput (``what="goodput"``) or p99 per interval against the time
    since the headline stretch began."""
    curves = []
    for d in docs:
        st = _headline(d)
        if not st.snapshots:
            continue
        xs: list[float] = []
        ys: list[float | None] = []
        prev = float(st.snapshots[0]["t_s"]) - st.interval_s
        t0 = prev
        for s in st.snapshots:
            t, seconds = float(s["t_s"]), float(s["t_s"]) - prev
            prev = t
            if seconds < 0.5 * st.interval_s:
                continue  # a run's last, cut-short interval
            xs.append(round(t - t0, 3))
            if what == "goodput":
                ys.append(outcomes([s], seconds).goodput)
            else:
                ys.append(num(s.get("p99_ms")) if int(s.get("requests") or 0) else None)
        curves.append((d.label, xs, ys))
    title = "Goodput over time" if what == "goodput" else "p99 per interval over time"
    return _overlay(
        f"{what}-time", title, "time (s)", "req/s" if what == "goodput" else "ms", curves
    )


def steps_chart(docs: Sequence[Document], chart: str, y_key: str) -> Chart | None:
    """steps_chart: a find result's steps, throughput against load (``chart="load"``) or
    p99 against throughput (``"tput"``), one series per result."""
    curves = []
    for d in docs:
        steps = [s for s in d.data.get("steps") or [] if isinstance(s, dict)]
        x_key = "load" if chart == "load" else "throughput_rps"
        pts = sorted(
            (x, y)
            for s in steps
            if (x := num(s.get(x_key))) is not None and (y := num(s.get(y_key))) is not None
        )
        curves.append((d.label, [x for x, _ in pts], [y for _, y in pts]))
    if chart == "load":
        unit = "users" if docs[0].data.get("model") == "closed" else "offered req/s"
        return _overlay("tput-load", "Throughput against load", unit, "req/s", curves, True)
    return _overlay("p99-tput", "p99 against throughput", "req/s", "ms", curves, True)


def _overlay(
    chart_id: str,
    title: str,
    x_label: str,
    y_label: str,
    curves: Sequence[tuple[str, Sequence[float], Sequence[float | None]]],
    points_only: bool = False,
) -> Chart | None:
    """_overlay puts curves with different x values on one chart: the x column is the union
    of theirs, each curve None where it has no point (bridged, since ``span_gaps``)."""
    if not curves:
        return None
    xs = sorted({float(x) for _, cx, _ in curves for x in cx})
    where = {x: i for i, x in enumerate(xs)}
    data: list[list[float | None]] = [list(xs)]
    series = []
    for n, (label, cx, cy) in enumerate(curves):
        col: list[float | None] = [None] * len(xs)
        for x, y in zip(cx, cy, strict=True):
            col[where[float(x)]] = y
        data.append(col)
        series.append(Series(label, PALETTE[n % len(PALETTE)], points_only=points_only))
    return Chart(chart_id, title, x_label, y_label, series, data)


def comparison_table(c: Comparison) -> str:
    """comparison_table: one comparison's rows and search facts as an HTML table under a
    heading (the experiment page shows its comparisons with it)."""
    rows = []
    for r in c.rows:
        cls = r.verdict.value if r.verdict in (Verdict.BETTER, Verdict.WORSE) else ""
        cells = [
            html.escape(r.group),
            r.figure.label,
            shown(r.figure, r.base),
            shown(r.figure, r.new),
            shown_change(r),
            shown_ci(r),
        ]
        rows.append(
            "<tr>"
            + "".join(f"<td>{html.escape(x)}</td>" for x in cells)
            + f'<td class="{cls}">{html.escape(r.verdict.value)}</td>'
            + f"<td>{html.escape(evidence(r))}</td></tr>"
        )
    for name, a, b in c.facts:
        rows.append(
            f"<tr><td>search</td><td>{html.escape(name)}</td><td>{html.escape(a)}</td>"
            f"<td>{html.escape(b)}</td><td></td><td></td><td></td><td></td></tr>"
        )
    head = "".join(
        f"<th>{h}</th>"
        for h in ("", "figure", "base", "new", "change", "95% CI", "verdict", "evidence")
    )
    return (
        f"<h2>{html.escape(c.new.label)} against {html.escape(c.base.label)}</h2>"
        f'<div class="scroll"><table class="steps"><tr>{head}</tr>{"".join(rows)}</table></div>'
    )


def _headline(d: Document) -> Stretch:
    return next(iter(d.stretches.values()), Stretch())
