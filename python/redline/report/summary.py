"""summary: the end-of-run text, laid out like wrk's so its users feel at home, plus what wrk
leaves out (the tail to 99.99 %, errors by class, non-2xx by status, the requests left unfinished or
never sent, the generator verdict). Where a label reads like wrk's but means something else, the
row says so (wrk's Req/Sec is per thread; redline's is the whole run's)."""

from __future__ import annotations

import math
from typing import Any

from redline.percentiles import PERCENTILES
from redline.runs.result import Result
from redline.units import fmt_bytes, fmt_count, fmt_ms

#: _PERCENTILES: the summary's latency rows, wrk's (no p95: Locust's and JMeter's column is
#: in the JSON report), as (label, report key).
_PERCENTILES = tuple((p.label, p.report_key) for p in PERCENTILES if p.name != "p95")


def render(result: Result) -> str:
    """render returns the multi-line summary of a run."""
    d = result.data
    lines = []
    model = "open model" if d.get("model") == "open" else "closed model"
    verb = "gRPC" if d.get("grpc") else d.get("method", "GET")
    lines.append(f"Run @ {verb} {d.get('url', '')}")
    conns = f"{d.get('connections', '?')} connections"
    if d.get("protocol") == "h2":
        # HTTP/2: each connection carries `streams` requests at once (h2load's -m).
        conns += f" × {d.get('streams', 1)} streams over h2"
    head = f"  {d.get('threads', '?')} threads and {conns} ({model})"

    gen = d.get("generator", {})
    if d.get("model") == "open" and gen.get("intended_rate"):
        # A scenario's open model schedules iterations, each of several requests.
        unit = "iterations/s" if d.get("scenario") else "req/s"
        head += f", intended {fmt_count(gen['intended_rate'])} {unit}"
    lines.append(head)
    lat = result.latency
    rps = _per_interval_rps(result)
    lines.append("  Stats          Avg      Stdev        Max")
    lines.append(
        f"    Latency {fmt_ms(lat.mean):>10} {fmt_ms(lat.stdev):>10} {fmt_ms(lat.max):>10}"
    )
    if rps:
        mean, sd = _mean_sd(rps)
        lines.append(
            f"    Req/Sec {fmt_count(mean):>10} {fmt_count(sd):>10} {fmt_count(max(rps)):>10}"
            f"   (all {d.get('threads', '?')} threads, per interval; wrk's is per thread)"
        )
    lines.append("  Latency Distribution" + _latency_from(d))
    unc = result.uncorrected_latency
    lag = result.lag
    for label, key in _PERCENTILES:
        row = f"  {label:>7} {fmt_ms(getattr(lat, key)):>10}"
        if unc is not None:
            row += f"   (service time {fmt_ms(getattr(unc, key))})"
        if lag is not None:
            row += f"   (generator lag {fmt_ms(getattr(lag, key))})"
        lines.append(row)
    lines.extend(_stream(result))
    lines.append(
        f"  {result.requests} requests in {result.duration_s:.2f}s, "
        f"{fmt_bytes(d.get('bytes_in', 0))} read, {fmt_bytes(d.get('bytes_out', 0))} written"
    )
    errors = result.errors
    socket = {k: v for k, v in errors.items() if k != "status"}
    if any(socket.values()):
        lines.append("  Errors: " + ", ".join(f"{k} {v}" for k, v in socket.items()))
    lines.extend(_statuses(result))
    lines.extend(_outages(result))
    lines.extend(_books(result))
    lines.append(f"Requests/sec: {result.rps:>12.2f}")
    lines.append(f"Transfer/sec: {fmt_bytes(d.get('transfer_in_per_s', 0)):>12}")
    if gen.get("late_sends"):
        lines.append(f"Late sends:   {gen['late_sends']} ({_late(gen)})")
    verdict = gen.get("verdict", "")
    verdict = verdict[:1].upper() + verdict[1:]
    cpu = f"CPU {gen.get('cpu_s', 0):.2f}s"
    # A closed-model run whose connections did not all open did not reach its load.
    short = d.get("model") == "closed" and gen.get("connections_opened") is not None
    short = short and gen["connections_opened"] < (d.get("connections") or 0)
    warn = gen.get("saturated") or gen.get("limit", "server") != "server" or short
    lines.append(f"{'WARNING: ' if warn else ''}{verdict} ({cpu})")
    if result.interrupted:
        lines.append("Interrupted: this summary covers what ran before the stop.")
    lines.extend(parts_lines(d))
    return "\n".join(lines)


def _mean_sd(xs: list[float]) -> tuple[float, float]:
    """_mean_sd: the mean and the population standard deviation of ``xs`` (not empty), as
    statistics.fmean and pstdev give them. Spelled here because importing ``statistics`` (with
    fractions, decimal and random) cost every run ~18 M instructions at start, for one row."""
    mean = math.fsum(xs) / len(xs)
    return mean, math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / len(xs))


def parts_lines(d: dict[str, Any]) -> list[str]:
    """parts_lines says each watched part's figures over the run (``--watch``), by the
    bottleneck's readings (:func:`redline.analysis.bottleneck.part_readings`): a resource at
    its limit is said to have run out."""
    over = (d.get("parts") or {}).get("over_run")
    if not over:
        return []
    from redline.analysis.bottleneck import QUEUE_KEY, part_readings

    lines = ["Watched parts, over the run:"]
    for name, figures in over.items():
        said = [
            r.evidence
            + ((" (short of CPU)" if r.key == QUEUE_KEY else " (ran out)") if r.saturated else "")
            for r in part_readings(name, figures)
        ]
        lines.append(f"  {name}: " + ("; ".join(said) or "no figures (it was not read)"))
    return lines


def _late(gen: dict[str, Any]) -> str:
    """_late says how the late sends are timed."""
    if gen.get("latency_from", "intended") == "intended":
        return "timed from their intended start"
    return "a wait for a busy connection is in their latency, the generator's lag is not"


def _latency_from(d: dict[str, Any]) -> str:
    """_latency_from says where the latency figures start, beside their heading."""
    gen = d.get("generator", {})
    if gen.get("latency_from") == "intended":
        return " (from intended send time, generator lag included)"
    if gen.get("latency_from") == "sent":
        stamps = {
            "kernel": "the kernel's send stamp",
            "write": "the write's clock bracket",
            "mixed": "the kernel's or the write's stamps, some user-space",
        }.get(gen.get("send_stamps", ""), "the user-space send stamp")
        wait = "wait for a connection + " if d.get("model") == "open" else ""
        return f" ({wait}server time from {stamps}; generator lag apart)"
    return " (from intended send time)" if d.get("model") == "open" else ""


def _statuses(result: Result) -> list[str]:
    """_statuses says the answers that were not 2xx, as wrk's "Non-2xx or 3xx" does (3xx are
    not among them, and said apart); a gRPC run's statuses are gRPC's, said by name."""
    grpc = result.data.get("grpc")
    if grpc:
        said = ", ".join(f"{name} {n}" for name, n in grpc["statuses"].items())
        lines = [f"  gRPC statuses: {said or 'none'}"]
        if grpc.get("client_streaming"):
            lines.append(f"  Each call sent {grpc['messages_per_call']} messages (a client stream)")
        return lines
    lines = []
    codes = sorted(result.status_codes.items())
    neither = [(c, n) for c, n in codes if not 200 <= c < 400]
    if neither:
        total = sum(n for _, n in neither)
        by_status = ", ".join(f"{c}: {n}" for c, n in neither)
        lines.append(f"  Non-2xx or 3xx responses: {total} ({by_status})")
    redirects = [(c, n) for c, n in codes if 300 <= c < 400]
    if redirects:
        by_status = ", ".join(f"{c}: {n}" for c, n in redirects)
        lines.append(f"  3xx responses: {sum(n for _, n in redirects)} ({by_status})")
    return lines


def _stream(result: Result) -> list[str]:
    """_stream is the streamed answers' table (``--stream``): first byte and gaps."""
    first, gap, counts = result.first_byte, result.chunk_gap, result.stream
    if first is None or gap is None or counts is None:
        return []
    grpc = result.data.get("grpc") is not None
    lines = [
        "  Streamed: first message (as latency)  gap between messages"
        if grpc
        else "  Streamed: first byte (as latency)  gap between chunks/events"
    ]
    for label, key in _PERCENTILES:
        lines.append(
            f"  {label:>7} {fmt_ms(getattr(first, key)):>10}   {fmt_ms(getattr(gap, key)):>10}"
        )
    pieces = (
        f"{counts['chunks']} messages ({counts['chunks_per_s']:.1f}/s)"
        if grpc
        else f"{counts['events']} events ({counts['events_per_s']:.1f}/s), {counts['chunks']} "
        f"chunks ({counts['chunks_per_s']:.1f}/s)"
    )
    lines.append(
        f"  {counts['responses']} streamed answers, {pieces}, "
        f"{fmt_bytes(counts['body_bytes'])} of bodies"
    )
    return lines + _completion(result)


def _completion(result: Result) -> list[str]:
    """_completion is the streamed completions' table: TTFT, inter-token latency, and each
    request's tokens a second (the LLM serving benchmarks' figures)."""
    c = result.completion
    if c is None:
        return []
    ttft, itl, rate = c["ttft_ms"], c["itl_ms"], c["request_tokens_per_s"]
    lines = ["  Completions:    TTFT  inter-token   tokens/s a request"]
    for label, key in _PERCENTILES:
        lines.append(
            f"  {label:>7} {fmt_ms(ttft[key]):>10}   {fmt_ms(itl[key]):>10}   {rate[key]:>10.1f}"
        )
    lines.append(
        f"  {c['responses']} completions, {c['output_tokens']} output tokens "
        f"({c['output_tokens_per_s']:.1f}/s)"
    )
    return lines


def _outages(result: Result) -> list[str]:
    """_outages says when the target stopped answering, and whether it came back."""
    out = []
    for o in result.outages:
        cls = o.get("error_class", "connect")
        by_class = o.get("errors_by_class", {})
        n = by_class.get(cls, o.get("errors", 0))
        line = f"  Target stopped answering at {o['start_s']:.2f} s ({cls}: {n} errors)"
        end = o.get("end_s")
        if end is None:
            line += " and had not come back when the run ended"
        else:
            line += f" and came back at {end:.2f} s ({end - o['start_s']:.2f} s down)"
        out.append(line)
    return out


def _books(result: Result) -> list[str]:
    """The requests that are neither answers nor errors, and the figures that are bounds, each
    on its own line when non-zero."""
    lines = []
    after = result.data.get("after_end") or {}
    if after.get("requests"):
        # A scenario's iterations under way at the end sent the rest of their requests.
        lines.append(
            f"  After the end ({window_s(result.data):.2f}s): {after['requests']} requests sent"
            f" by the iterations under way then, the last {after.get('s', 0.0):.2f}s after it;"
            f" counted, and the rates divide by the {result.duration_s:.2f}s they went out in"
        )
    if result.unfinished:
        lines.append(
            f"  Unfinished: {result.unfinished} requests still out at the cut-off, in the latency"
            " figures at their age then (the tail is a lower bound)"
        )
    if result.unsent:
        lines.append(
            f"  Never sent: {result.unsent} hits due before the end, in the latency figures at"
            " their age at the end (a lower bound)"
        )
    if result.retries:
        lines.append(
            f"  Retries: {result.retries} requests sent again after a kept-alive connection"
            " closed under them"
        )
    if result.clamped:
        lines.append(
            f"  Clamped: {result.clamped} latencies beyond the histogram's range count as its top"
        )
    return lines


def _per_interval_rps(result: Result) -> list[float]:
    """Requests per second of each full post-warm-up interval of the send window (wrk's
    Req/Sec row). The intervals after the window, in which requests sent before its end drain
    (a short one after a URL run; whole empty ones after a scenario's last iterations), are
    left out: a few requests in a few milliseconds would read as a huge rate, and empty
    intervals would pull the mean below Requests/sec."""
    spans = []
    prev_t = 0.0
    for s in send_window(result.timeseries, window_s(result.data)):
        t = float(s.get("t_s", 0.0))
        spans.append((t - prev_t, s))
        prev_t = t
    full = max((w for w, _ in spans), default=0.0)
    return [s.get("requests", 0) / w for w, s in spans if w >= 0.5 * full and not s.get("warmup")]


def window_s(doc: dict[str, Any]) -> float:
    """window_s: a run document's send window after warm-up (``-d``): its ``duration_s``
    less the time a scenario's iterations under way at the end went on sending
    (``after_end.s``), which the duration covers."""
    after = doc.get("after_end") or {}
    return float(doc.get("duration_s") or 0.0) - float(after.get("s") or 0.0)


def send_window(series: list[dict[str, Any]], duration_s: float) -> list[dict[str, Any]]:
    """send_window: the intervals that began before the send window's end (the warm-up's end
    plus ``duration_s``, the report's measured window); the ones after hold only the drain of
    requests sent before it, and none of the load."""
    warm_end = max((float(s.get("t_s", 0.0)) for s in series if s.get("warmup")), default=0.0)
    send_end = warm_end + duration_s
    out = []
    prev_t = 0.0
    for s in series:
        if prev_t >= send_end - 1e-6:
            break
        out.append(s)
        prev_t = float(s.get("t_s", 0.0))
    return out
