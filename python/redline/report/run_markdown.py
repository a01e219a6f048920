"""run_markdown: a ``redline run`` result (URL or scenario) as Markdown, for a pull request
or a wiki page: what ran, the summary as the terminal printed it, and a scenario's requests
by name. A find result has its own (:func:`redline.report.render.render_markdown`)."""

from __future__ import annotations

from typing import Any


def render_run_markdown(result: dict[str, Any]) -> str:
    """render_run_markdown renders a run's --json document: a title naming what ran, the
    end-of-run summary (the same text ``redline run`` printed), then the per-name table."""
    from redline.report.summary import render
    from redline.runs.result import Result

    what = result.get("scenario") or f"{result.get('method', 'GET')} {result.get('url', '')}"
    out = [f"# redline run report: {what}", ""]
    out += ["```text", render(Result(result)), "```"]
    per_name = result.get("per_name") or {}
    if result.get("scenario") and per_name:
        out += ["", "## Requests by name", ""]
        out += ["| name | requests | errors | p50 ms | p90 ms | p99 ms | max ms | failures |"]
        out += ["| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
        for name, v in sorted(per_name.items()):
            lat = v.get("latency_ms") or {}
            reasons = ", ".join(
                f"{why} ×{n}" for why, n in sorted((v.get("failure_reasons") or {}).items())
            )
            cells = [_cell(name), str(v.get("requests", 0)), str(v.get("errors", 0))]
            cells += [_ms(lat.get(k)) for k in ("p50", "p90", "p99", "max")]
            out.append("| " + " | ".join([*cells, _cell(reasons)]) + " |")
    return "\n".join(out) + "\n"


def _ms(v: Any) -> str:
    return "–" if v is None else f"{float(v):.3g}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
