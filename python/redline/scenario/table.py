"""table: the end-of-run tables of a scenario run, laid out as Locust and JMeter users know
them: per request name, per host (when a flow reached more than one) and per group
(requests, failures, rps, mean, min, max, p50, p90, p95, p99), the failure reasons, what
the service said (each name's tally: its answers by the value at its ``tally`` path), each
WebSocket step's messages and the iteration counts."""

from __future__ import annotations

from typing import Any

_COLS = ("Name", "Requests", "Fails", "Req/s", "Mean", "Min", "Max", "p50", "p90", "p95", "p99")


def _ms(v: float) -> str:
    return f"{v:.0f}" if v >= 100 else f"{v:.1f}" if v >= 10 else f"{v:.2f}"


def _row(name: str, e: dict[str, Any], secs: float) -> list[str]:
    lat = e.get("latency_ms", {})
    n = int(e.get("requests", 0))
    rps = e.get("rps", n / secs if secs > 0 else 0.0)
    return [name, str(n), str(int(e.get("errors", 0))), f"{rps:.1f}"] + [
        _ms(float(lat.get(k, 0.0))) for k in ("mean", "min", "max", "p50", "p90", "p95", "p99")
    ]


def _grid(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for r in rows:
        cells = [r[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(r[1:], widths[1:], strict=True)
        ]
        out.append("  " + "  ".join(cells).rstrip())
    return out


def _data_line(name: str, d: dict[str, Any]) -> str:
    """_data_line: what a data set handed out, and what happened when it ran out."""
    how = "unique" if d.get("unique") else str(d.get("order", "sequential"))
    line = f"Data {name!r} ({how}): {d['taken']} of {d['rows']} rows taken"
    if d.get("used_up"):
        if d.get("on_exhausted") == "stop":
            line += "; the rows ran out and the run stopped there (on_exhausted='stop')"
        else:
            line += f"; the rows ran out: {d['missed']} iterations failed with no row left"
    return line


def _socket_line(name: str, w: dict[str, Any]) -> str:
    """_socket_line: a WebSocket step's books: messages both ways, every one sent answered or
    lost (by how its socket ended)."""
    line = (
        f"Socket {name!r}: {w['opened']} opened; {w['sent']} messages sent, {w['received']} "
        f"received; {w['answered']} answered"
    )
    if w["lost_total"]:
        lost = ", ".join(f"{k} {v}" for k, v in sorted(w["lost"].items()))
        line += f", {w['lost_total']} lost ({lost})"
    if w["unmatched"]:
        line += f"; {w['unmatched']} received answered nothing sent"
    return line


def _python_line(py: dict[str, Any]) -> str:
    """_python_line: what the Python steps cost: per function, calls and µs a call; their
    thread's CPU and its share of the process's."""
    each = "; ".join(
        f"{name}: {f['calls']} calls, {f['us_per_call']:.0f} µs a call, {f['errors']} failed"
        for name, f in sorted(py.get("functions", {}).items())
    )
    return (
        f"Python steps: {each}; their thread used {py['cpu_s']:.2f} s of CPU "
        f"({py['cpu_share']:.0%} of the run's), in calls {py['busy_ratio']:.0%} of the time"
    )


def render(data: dict[str, Any]) -> str:
    """render returns the scenario tables of a result document (latencies in ms)."""
    secs = float(data.get("duration_s", 0.0))
    lines = ["Requests (latency in ms)"]
    rows = [list(_COLS)]
    for name, e in sorted(data.get("per_name", {}).items()):
        rows.append(_row(name, e, secs))
    lines += _grid(rows)
    hosts = data.get("per_host") or {}
    if len(hosts) > 1:
        lines.append("Hosts (latency in ms)")
        rows = [["Host", *_COLS[1:]]]
        for origin, e in sorted(hosts.items()):
            rows.append(_row(origin, e, secs))
        lines += _grid(rows)
    sc = data.get("scenario") or {}
    groups = sc.get("groups") or {}
    if groups:
        lines.append("Groups (each pass timed as a whole)")
        rows = [list(_COLS)]
        for name, e in sorted(groups.items()):
            rows.append(_row(name, e, secs))
        lines += _grid(rows)
    reasons = [
        (name, reason, n)
        for name, e in sorted(data.get("per_name", {}).items())
        for reason, n in sorted(e.get("failure_reasons", {}).items(), key=lambda x: -x[1])
    ]
    if reasons:
        lines.append("Failures")
        lines += _grid(
            [["Name", "Count", "Reason"]] + [[name, str(n), reason] for name, reason, n in reasons]
        )
    tallies = [
        (name, value, n, sum(e["tally"].values()))
        for name, e in sorted(data.get("per_name", {}).items())
        if e.get("tally")
        for value, n in sorted(e["tally"].items(), key=lambda x: -x[1])
    ]
    if tallies:
        lines.append("Tallies (answers by the value at each request's tally path)")
        lines += _grid(
            [["Name", "Value", "Count", "Share"]]
            + [[name, value, str(n), f"{n / total:.1%}"] for name, value, n, total in tallies]
        )
    for name, w in sorted((sc.get("sockets") or {}).items()):
        lines.append(_socket_line(name, w))
    for name, d in sorted((sc.get("data") or {}).items()):
        lines.append(_data_line(name, d))
    if sc.get("python"):
        lines.append(_python_line(sc["python"]))
    it = sc.get("iterations")
    if it:
        lat = it.get("latency_ms", {})
        lines.append(
            f"Iterations: {it['started']} started, {it['completed']} completed, "
            f"{it['failed']} failed ({it.get('rate', 0):.2f}/s; "
            f"mean {_ms(lat.get('mean', 0))} ms, p95 {_ms(lat.get('p95', 0))} ms)"
        )
    return "\n".join(lines)
