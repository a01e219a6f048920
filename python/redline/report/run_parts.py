"""run_parts: the parts of a run's page that say what ran: the scenario file and its host (a
URL run: the method and URL), its iterations and groups, and the failures by status code and
reason, where a bare count ("121 status") would say neither what failed nor why."""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any


def what_ran(result: dict[str, Any]) -> str:
    """what_ran: ``SCENARIO.py against HOST`` for a scenario, ``METHOD URL`` for a URL run."""
    scenario = result.get("scenario") or {}
    if scenario:
        name = scenario.get("file") or "scenario"
        return f"{name} against {result.get('url', '')}"
    return f"{result.get('method', 'GET')} {result.get('url', '')}"


def failures_by_status(result: dict[str, Any]) -> str:
    """failures_by_status: the error statuses with their counts, most first (``500 ×66,
    429 ×55``); "" when there were none."""
    codes = sorted(
        ((int(c), int(n)) for c, n in (result.get("status_codes") or {}).items() if int(c) >= 400),
        key=lambda cn: (-cn[1], cn[0]),
    )
    return ", ".join(f"{c} ×{n:,}" for c, n in codes)


def lag_sentence(result: dict[str, Any], fmt: Callable[[Any], str]) -> str:
    """lag_sentence gives the generator's own send lag (figures shown by ``fmt``), kept out
    of the latency (or in it, with --latency-from intended); empty for results older than it."""
    lag = result.get("lag_ms")
    if not lag:
        return ""
    where = (
        "included in the latency above (--latency-from intended)"
        if (result.get("generator") or {}).get("latency_from") == "intended"
        else "not in the latency above"
    )
    return (
        f" The generator's own send lag: p50 {fmt(lag.get('p50'))} ms, p99 "
        f"{fmt(lag.get('p99'))} ms, max {fmt(lag.get('max'))} ms ({where})."
    )


def errors_sentence(result: dict[str, Any]) -> str:
    """errors_sentence: the errors by class, the status class spelled out by code."""
    errors = {k: v for k, v in (result.get("errors") or {}).items() if v}
    parts = []
    for k, v in errors.items():
        statuses = failures_by_status(result) if k == "status" else ""
        parts.append(f"{v:,} {k}" + (f" ({statuses})" if statuses else ""))
    said = "Errors: " + ", ".join(parts) + "." if parts else "No errors."
    return said + f" Non-2xx responses: {result.get('non_2xx', 0)}."


def _ms(v: Any) -> str:
    return "–" if v is None else f"{float(v):.3g}"


def scenario_html(result: dict[str, Any]) -> str:
    """scenario_html: a scenario's iterations, its groups and each request's failure reasons
    ("" for a URL run)."""
    s = result.get("scenario") or {}
    if not s:
        return ""
    it = s.get("iterations") or {}
    lat = it.get("latency_ms") or {}
    under_way = int(it.get("started", 0)) - int(it.get("completed", 0)) - int(it.get("failed", 0))
    flows = ", ".join(f"{html.escape(f)} (weight {w})" for f, w in (s.get("flows") or {}).items())
    out = [
        '<h2 id="scenario">Scenario</h2>',
        f"<p>Flows: {flows or '–'}. Iterations: {int(it.get('started', 0)):,} started, "
        f"{int(it.get('completed', 0)):,} completed, {int(it.get('failed', 0)):,} failed"
        + (f", {under_way:,} under way at the end" if under_way > 0 else "")
        + f"; {float(it.get('rate', 0)):.3g} a second; each took p50 {_ms(lat.get('p50'))} ms, "
        f"p99 {_ms(lat.get('p99'))} ms.</p>",
    ]
    groups = s.get("groups") or {}
    if groups:
        rows = "".join(
            f"<tr><td>{html.escape(name)}</td><td>{g.get('requests', 0):,}</td>"
            f"<td>{g.get('errors', 0):,}</td><td>{float(g.get('rps', 0)):.3g}</td>"
            f"<td>{_ms((g.get('latency_ms') or {}).get('p50'))}</td>"
            f"<td>{_ms((g.get('latency_ms') or {}).get('p99'))}</td></tr>"
            for name, g in sorted(groups.items())
        )
        out.append(
            '<h3 id="groups">Groups (each pass timed as a whole)</h3><table class="steps"><thead>'
            "<tr><th>group</th><th>passes</th><th>errors</th><th>per s</th><th>p50 ms</th>"
            f"<th>p99 ms</th></tr></thead><tbody>{rows}</tbody></table>"
        )
    reasons = [
        (name, why, n)
        for name, v in sorted((result.get("per_name") or {}).items())
        for why, n in sorted((v.get("failure_reasons") or {}).items(), key=lambda kv: -kv[1])
    ]
    if reasons:
        rows = "".join(
            f'<tr><td>{html.escape(name)}</td><td style="text-align:left">{html.escape(why)}'
            f"</td><td>{n:,}</td></tr>"
            for name, why, n in reasons
        )
        out.append(
            '<h3 id="failures">Failures by request and reason</h3><table class="steps"><thead>'
            f"<tr><th>request</th><th>reason</th><th>count</th></tr></thead><tbody>{rows}"
            "</tbody></table>"
        )
    return "".join(out)
