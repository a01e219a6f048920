"""page: the live page's HTML. One self-contained document, as the report is: the vendored
uPlot, the report's stylesheet and the shared chart code (``assets/chart.js``) are inlined, so
it needs no CDN and works offline; ``page.js`` applies the event stream."""

from __future__ import annotations

import html
from functools import cache
from importlib import resources

from redline.report.page import CSS, UPLOT_VERSION

#: LIVE_CSS: what the live page adds to the report's stylesheet.
LIVE_CSS = """
.bar{display:flex;gap:12px;align-items:center;flex-wrap:wrap;margin:0 0 16px}
.pill{border-radius:999px;padding:2px 10px;font-weight:600;background:#eaeef2}
.pill.running{background:#dafbe1;color:#116329}.pill.stopping{background:#fff8c5}
.pill.stopped{background:#ffebe9;color:#a40e26}.pill.done{background:#ddf4ff;color:#0969da}
button#stop{font:inherit;padding:4px 14px;border-radius:6px;border:1px solid #cf222e;
background:#fff;color:#cf222e;cursor:pointer}button#stop:disabled{opacity:.5;cursor:default}
.answer .sub{color:#57606a;font-size:12.5px}
#per-name th:first-child,#per-name th:last-child{text-align:left}
form#start-form{display:flex;gap:10px;flex-wrap:wrap;align-items:end;background:#fff;
border:1px solid #d0d7de;border-radius:8px;padding:12px 14px}
form#start-form label{display:flex;flex-direction:column;font-size:12px;color:#57606a;gap:2px}
form#start-form input,form#start-form select{font:inherit;padding:3px 6px}
form#start-form input[name=target]{min-width:320px}
button#start{font:inherit;padding:4px 14px;border-radius:6px;border:1px solid #1f883d;
background:#1f883d;color:#fff;cursor:pointer}button#start:disabled{opacity:.5;cursor:default}
#form-error{color:#cf222e}
"""

#: FORM: the start page's form (``redline ui``): what to load, how, how long; the command
#: line that does the same is shown under it.
FORM = (
    '<section id="launch"><form id="start-form">'
    '<label>URL or scenario file<input name="target" required '
    'placeholder="http://127.0.0.1:8080/ or scenario.py"></label>'
    '<label>Model<select name="model"><option value="closed">closed: users</option>'
    '<option value="open">open: requests per second</option></select></label>'
    '<label>Load<input name="load" value="10" inputmode="decimal" size="7"></label>'
    '<label>Duration<input name="duration" value="30s" size="7"></label>'
    '<button id="start" type="submit">Start</button></form>'
    '<p>Command line: <code id="command">–</code></p><p id="form-error"></p></section>'
)

_CARDS = (
    ("Rate", "f-rate", "f-offered"),
    ("Latency", "f-latency", "f-latency-more"),
    ("Errors", "f-errors", "f-classes"),
    ("Load", "f-load", "f-inflight"),
    ("Requests", "f-total", None),
)


@cache
def _file(folder: str, name: str) -> str:
    """_file reads a file of the package (``folder``: ``assets`` or ``live``)."""
    return resources.files("redline").joinpath(folder).joinpath(name).read_text(encoding="utf-8")


def _card(title: str, main: str, sub: str | None, hidden: bool = False, card_id: str = "") -> str:
    sub_html = f'<p class="sub" id="{sub}">–</p>' if sub else ""
    attrs = (f' id="{card_id}"' if card_id else "") + (" hidden" if hidden else "")
    return (
        f'<div class="answer"{attrs}><h3>{html.escape(title)}</h3>'
        f'<div class="figure" id="{main}">–</div>{sub_html}</div>'
    )


def _table(section_id: str, title: str, heads: tuple[str, ...], body_id: str) -> str:
    """_table: a hidden section of one table, its rows filled by page.js into ``body_id``."""
    cells = "".join(f"<th>{h}</th>" for h in heads)
    return (
        f'<section id="{section_id}" hidden><h2>{title}</h2><div class="scroll">'
        f'<table class="steps"><thead><tr>{cells}</tr></thead><tbody id="{body_id}"></tbody>'
        "</table></div></section>"
    )


def render_page(
    title: str, kind: str, stop_token: str, form: bool = False, started: bool = True
) -> str:
    """render_page is the live page of a ``run`` or ``find`` (``kind``); ``stop_token`` is
    what its stop and start buttons must send (a header no other site's form can set).
    ``form``: the start page of ``redline ui``, which starts runs from a form; ``started``:
    a run was started, whose events the page follows at once."""
    cards = "".join(_card(t, m, s) for t, m, s in _CARDS)
    cards += _card("Service", "f-cpu", "f-mem", hidden=True, card_id="service")
    search = _table(
        "search",
        "Search steps",
        ("step", "phase", "load", "req/s", "p50", "p99", "errors", "verdict"),
        "steps",
    )
    per_name = _table(
        "per-name",
        "Per request name",
        ("name", "requests", "errors", "p50", "p95", "p99", "error classes", "tally"),
        "names",
    )
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        '<link rel="icon" href="data:,">'
        f"<title>{html.escape(title)} (live)</title>"
        f"<style>{_file('assets', 'uPlot.min.css')}</style>"
        f"<style>{CSS}{LIVE_CSS}</style></head>"
        f'<body data-kind="{html.escape(kind)}" data-stop="{html.escape(stop_token)}"'
        f' data-ui="{int(form)}" data-run="{int(started)}"><main>'
        f"<h1>{html.escape(title)}</h1>{FORM if form else ''}"
        '<div class="bar"><span id="status" class="pill">connecting</span>'
        '<span id="clock"></span><button id="stop" disabled>Stop the run</button>'
        '<a id="report" hidden>Final report</a></div>'
        f'<div class="answers" id="answers">{cards}</div>{per_name}{search}'
        '<h2 id="charts-title">Charts</h2><div class="charts" id="charts"></div>'
        f"<footer>redline live view. Charts by uPlot {UPLOT_VERSION} (MIT licence, embedded)."
        "</footer></main>"
        f"<script>{_file('assets', 'uPlot.iife.min.js')}</script>"
        f"<script>{_file('assets', 'chart.js')}</script>"
        f"<script>{_file('live', 'page.js')}</script></body></html>\n"
    )
