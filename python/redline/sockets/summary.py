"""summary: the end-of-run text of a WebSocket run, laid out like the HTTP run's (wrk's
shape): the round trips' distribution, messages both ways and a second, the books (every
message answered or lost) and the sockets the server ended, by class."""

from __future__ import annotations

from redline.percentiles import PERCENTILES
from redline.sockets.result import SocketResult
from redline.units import fmt_bytes, fmt_ms

#: _PERCENTILES: the rows of the round trips' distribution, as the HTTP summary's.
_PERCENTILES = tuple((p.label, p.report_key) for p in PERCENTILES if p.name != "p95")


def render(result: SocketResult) -> str:
    """render returns the multi-line summary of a WebSocket run."""
    d = result.data
    m = result.messages
    lat = result.latency
    if d["model"] == "open":
        model = f"open model, {d['rate']:g} messages/s across them"
    else:
        model = "closed model: each sends after its last reply"
        if d.get("stagger_s"):
            model += f", first sends spread over {d['stagger_s']:g}s"
    lines = [
        f"WebSocket run @ {d['url']}",
        f"  {d['threads']} threads and {result.sockets['wanted']} sockets ({model}); "
        f"replies matched by {d['match_rule']}",
        "  Round trip     Avg      Stdev        Max",
        f"    Latency {fmt_ms(lat.mean):>10} {fmt_ms(lat.stdev):>10} {fmt_ms(lat.max):>10}",
        "  Round trip distribution"
        + (" (from each message's intended send)" if d["model"] == "open" else ""),
    ]
    lines += [f"  {label:>7} {fmt_ms(getattr(lat, key)):>10}" for label, key in _PERCENTILES]
    lines.append(
        f"  {m['sent']} messages sent, {m['received']} received in {result.duration_s:.2f}s; "
        f"{fmt_bytes(m['bytes_out'])} written, {fmt_bytes(m['bytes_in'])} read"
    )
    books = f"  {m['answered']} answered"
    if m["lost_total"]:
        lost = ", ".join(f"{k} {v}" for k, v in sorted(m["lost"].items()))
        books += f", {m['lost_total']} lost ({lost})"
    if m["unmatched"]:
        books += f"; {m['unmatched']} received answered nothing sent"
    lines.append(books)
    sockets = result.sockets
    lines.append(f"  Sockets: {sockets['opened']} opened for {sockets['wanted']} wanted")
    if result.errors_total:
        ends = ", ".join(f"{k} {v}" for k, v in sorted(result.errors.items()))
        lines.append(f"  Errors: {ends}")
    lines.append(f"Sent/sec:     {m['sent_per_s']:>12.2f}")
    lines.append(f"Received/sec: {m['received_per_s']:>12.2f}")
    if d.get("interrupted"):
        lines.append("Interrupted: this summary covers what ran before the stop.")
    return "\n".join(lines)
