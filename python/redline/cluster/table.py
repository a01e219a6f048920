"""table: the per-injector table (requests, rps, CPU, send lag, verdict) and the merged
generator self-check, which names a saturated injector so that a limit found is never
one injector's passed off as the service's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

#: SKEW_WARN_S: clock skew past which an injector's row carries a warning (a tenth of the
#: default 1 s interval: the open model's schedule shifts by the skew; docs/distributed.md).
SKEW_WARN_S = 0.1


def injector_rows(feeds: Sequence[Any], reports: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    """injector_rows: one row per injector, from its report (or, lost, its snapshots)."""
    rows = []
    for f in feeds:
        m = f.member
        r = reports.get(m.index)
        row: dict[str, Any] = {
            "index": m.index,
            "host": m.host,
            "pid": m.pid,
            "cores": m.cores,
            "clock_skew_ms": round(m.clock_skew_s * 1000.0, 3),
            "lost": f.lost,
            "lost_at_s": _rounded(getattr(f, "lost_at_s", None)),
            "lost_share": _rounded(getattr(f, "lost_share", None)),
        }
        if r is not None:
            g = r["generator"]
            row.update(
                requests=int(r["requests"]),
                rps=float(r["rps"]),
                cpu_s=float(g["cpu_s"]),
                cpu_us_per_request=g.get("cpu_us_per_request"),
                busy_ratio=float(g["busy_ratio"]),
                max_send_lag_ms=g.get("max_send_lag_ms"),
                saturated=bool(g["saturated"]),
                verdict=str(g["verdict"]),
                histogram=r["histograms"]["latency"],
            )
        else:
            seen = f.seen.requests
            row.update(
                requests=seen,
                rps=None,
                cpu_s=None,
                cpu_us_per_request=None,
                busy_ratio=None,
                max_send_lag_ms=None,
                saturated=None,
                verdict=f"lost{when(row)}: {f.lost}; {seen} requests answered before",
                histogram=None,
            )
        if abs(m.clock_skew_s) > SKEW_WARN_S:
            row["verdict"] += (
                f"; its clock is {m.clock_skew_s * 1000:+.0f} ms off the driver's "
                "(the shared start instant is that far off)"
            )
        rows.append(row)
    return rows


def merged_generator(
    reports: Sequence[dict[str, Any]], rows: list[dict[str, Any]]
) -> dict[str, Any]:
    """merged_generator is the run's self-check over all injectors: CPU summed, the hottest
    injector's busy ratio, the worst send lag, and a verdict naming each saturated (or
    lost) injector; the limit is ``generator`` when any injector was one."""
    gens = [r["generator"] for r in reports]
    if not gens:
        return {"saturated": None, "limit": "generator", "verdict": _lost_line(rows)}
    out = dict(gens[0])
    for key in ("cpu_s", "user_s", "sys_s", "worker_cpu_s"):
        out[key] = sum(float(g[key]) for g in gens)
    out["busy_ratio"] = max(float(g["busy_ratio"]) for g in gens)
    out["late_sends"] = sum(int(g["late_sends"]) for g in gens)
    for key in ("intended_rate", "achieved_rate"):
        vals = [g[key] for g in gens if g.get(key) is not None]
        out[key] = sum(float(v) for v in vals) if vals else None
    lags = [float(g["max_send_lag_ms"]) for g in gens if g.get("max_send_lag_ms") is not None]
    out["max_send_lag_ms"] = max(lags) if lags else None
    requests = sum(int(r["requests"]) for r in reports)
    out["cpu_us_per_request"] = out["cpu_s"] * 1e6 / requests if requests else None
    saturated = [r for r in rows if r.get("saturated")]
    pooled = [g for g in gens if g.get("limit") == "pool"]
    short = [g for g in gens if g.get("limit") == "fd_limit"]
    for key in ("connections_opened", "fd_refused"):
        out[key] = sum(int(g.get(key) or 0) for g in gens)
    out["limit"] = "generator" if saturated else ("pool" if pooled else "server")
    if short:
        out["limit"] = "fd_limit"
    out["saturated"] = bool(saturated)
    if saturated:
        named = "; ".join(
            f"injector {r['index']} ({r['host']}, pid {r['pid']}): {r['verdict']}"
            for r in saturated
        )
        out["verdict"] = (
            f"generator saturated on {len(saturated)} of {len(rows)} injectors: {named}"
        )
    elif short:
        out["verdict"] = f"{len(short)} of {len(rows)} injectors: {short[0]['verdict']}"
    elif pooled:
        out["verdict"] = f"{len(pooled)} of {len(rows)} injectors: {pooled[0]['verdict']}"
    else:
        out["verdict"] = (
            f"generator kept up on all {len(gens)} reporting injectors "
            f"(hottest {100 * out['busy_ratio']:.0f}% busy); the figures describe the server"
        )
    lost = _lost_line(rows)
    if lost:
        out["verdict"] += f"; {lost}"
    return out


def render(rows: list[dict[str, Any]]) -> str:
    """render: the per-injector table as text, for the terminal summary."""

    def fmt(v: Any, spec: str) -> str:
        return "-" if v is None else format(v, spec)

    lines = ["  injector  host              requests      rps   cpu_s  busy  lag_ms  verdict"]
    for r in rows:
        verdict = "LOST" if r["lost"] else ("SATURATED" if r.get("saturated") else "ok")
        lines.append(
            f"  {r['index']:>8}  {r['host'][:16]:<16}  {r['requests']:>8}  "
            f"{fmt(r['rps'], '>7.1f')}  {fmt(r['cpu_s'], '>6.2f')}  "
            f"{fmt(None if r['busy_ratio'] is None else 100 * r['busy_ratio'], '>3.0f')}%  "
            f"{fmt(r['max_send_lag_ms'], '>6.1f')}  {verdict}"
        )
    return "\n".join(lines)


def render_html(rows: list[dict[str, Any]]) -> str:
    """render_html: the per-injector table for the HTML run report (redline.report.render)."""
    import html

    def cell(v: Any, spec: str = "") -> str:
        return "<td>-</td>" if v is None else f"<td>{html.escape(format(v, spec))}</td>"

    body = "".join(
        "<tr>"
        + cell(r["index"])
        + cell(f"{r['host']} ({r['pid']})")
        + cell(r["requests"])
        + cell(r["rps"], ".1f")
        + cell(r["cpu_s"], ".2f")
        + cell(r["cpu_us_per_request"], ".1f")
        + cell(None if r["busy_ratio"] is None else 100 * r["busy_ratio"], ".0f")
        + cell(r["max_send_lag_ms"], ".1f")
        + cell(r["clock_skew_ms"], ".1f")
        + cell(r["verdict"])
        + "</tr>"
        for r in rows
    )
    return (
        '<h2 id="injectors">Injectors</h2><table class="steps"><thead><tr><th>injector</th>'
        "<th>host (pid)</th><th>requests</th><th>req/s</th><th>CPU s</th><th>CPU µs/req</th>"
        "<th>busy %</th><th>send lag ms</th><th>clock skew ms</th><th>verdict</th></tr></thead>"
        f"<tbody>{body}</tbody></table>"
    )


def render_markdown(rows: list[dict[str, Any]]) -> str:
    """render_markdown: the per-injector table for the Markdown find report (a lost
    injector's verdict says when and how it was lost)."""

    def cell(v: Any, spec: str = "") -> str:
        return "-" if v is None else format(v, spec).replace("|", "\\|")

    out = [
        "| injector | host (pid) | requests | req/s | CPU s | CPU µs/req | busy % "
        "| send lag ms | clock skew ms | verdict |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        busy = None if r.get("busy_ratio") is None else 100 * r["busy_ratio"]
        cells = [
            cell(r["index"]),
            cell(f"{r['host']} ({r['pid']})"),
            cell(r.get("requests")),
            cell(r.get("rps"), ".1f"),
            cell(r.get("cpu_s"), ".2f"),
            cell(r.get("cpu_us_per_request"), ".1f"),
            cell(busy, ".0f"),
            cell(r.get("max_send_lag_ms"), ".1f"),
            cell(r.get("clock_skew_ms"), ".1f"),
            cell(r.get("verdict")),
        ]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def _lost_line(rows: list[dict[str, Any]]) -> str:
    lost = [r for r in rows if r["lost"]]
    if not lost:
        return ""
    return "lost: " + "; ".join(
        f"injector {r['index']} ({r['host']}, pid {r['pid']}) {r['lost']}" for r in lost
    )


def _rounded(v: float | None) -> float | None:
    return None if v is None else round(float(v), 3)


def when(row: dict[str, Any]) -> str:
    """when: a lost row's time of loss and share of the load, as words (" at 6.2 s,
    carrying 33 % of the load"), or "" where unknown."""
    out = ""
    if row.get("lost_at_s") is not None:
        out += f" at {row['lost_at_s']:.1f} s"
    if row.get("lost_share") is not None:
        out += f"{',' if out else ''} carrying {100 * row['lost_share']:.0f} % of the load"
    return out
