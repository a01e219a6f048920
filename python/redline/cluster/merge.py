"""merge: the injectors' interval snapshots and reports added into one run's, exactly.

Counts are summed; latency comes from the injectors' HdrHistograms merged bucket for bucket
(``merge_histograms``), never from percentiles of percentiles (Locust's rounded buckets and
Artillery's averaged percentiles are what this avoids). Means are weighted by the histograms'
counts, which is exact; the worst send lag and the slowest response are maxima.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from redline import _engine, window
from redline.percentiles import IN_SNAPSHOTS, snapshot_key

#: SNAPSHOT_QUANTILES: the snapshot's percentile fields and the quantile each reads.
SNAPSHOT_QUANTILES = tuple((snapshot_key(p.name), p.quantile) for p in IN_SNAPSHOTS)

_SUMMED = ("requests", "errors", "active_connections", "in_flight", "bytes_in")
_RATES = ("in_flight_mean", "achieved_rate")


def merge_snapshots(snaps: Sequence[dict[str, Any]], injectors: int) -> dict[str, Any]:
    """merge_snapshots adds one interval's snapshots from the injectors that reported it;
    ``injectors`` is how many the run has (the merged snapshot says both, as
    ``injectors_reported`` and ``injectors``, so an interval some injectors missed is marked,
    not passed off as whole)."""
    hist = merge_histograms([s["histogram"] for s in snaps])
    count, values = _engine.histogram_quantiles(hist, [q for _, q in SNAPSHOT_QUANTILES])
    out: dict[str, Any] = {
        "t_s": max(float(s["t_s"]) for s in snaps),
        "warmup": any(s["warmup"] for s in snaps),
    }
    for key in _SUMMED:
        out[key] = sum(int(s[key]) for s in snaps)
    for key in _RATES:
        out[key] = sum(float(s[key]) for s in snaps)
    out["errors_by_class"] = add_counts(s["errors_by_class"] for s in snaps)
    for (key, _), v in zip(SNAPSHOT_QUANTILES, values, strict=True):
        out[key] = v / 1000.0 if count else 0.0
    # Each injector's histogram holds its `requests` latencies plus any cut off; the requests
    # are the weight the engine's own mean uses, closely enough for a live view.
    mean = window.weighted(snaps, "mean_ms")
    out["mean_ms"] = mean if mean is not None else max(float(s["mean_ms"]) for s in snaps)
    out["max_ms"] = max(float(s["max_ms"]) for s in snaps)
    rates = [s["intended_rate"] for s in snaps if s.get("intended_rate") is not None]
    out["intended_rate"] = sum(rates) if rates else None
    out["send_lag_ms"] = max(float(s["send_lag_ms"]) for s in snaps)
    out["histogram"] = hist
    # The target was down when no injector got an answer: every one reporting saw it down.
    down = all(s.get("down") for s in snaps)
    out["down"] = down
    out["down_since_s"] = (
        min(float(s["down_since_s"]) for s in snaps if s.get("down_since_s") is not None)
        if down
        else None
    )
    if any(s.get("iterations") is not None for s in snaps):
        out["iterations"] = add_counts(s.get("iterations") or {} for s in snaps)
    if any(s.get("names") is not None for s in snaps):
        out["names"] = _merge_names([s.get("names") or {} for s in snaps])
    statuses = merge_statuses(s.get("statuses") or {} for s in snaps)
    if statuses:
        out["statuses"] = statuses
    streams = [s["stream"] for s in snaps if isinstance(s.get("stream"), dict)]
    if streams:
        out["stream"] = _merge_interval_stream(streams)
    cpu = [s["worker_cpu"] for s in snaps if s.get("worker_cpu")]
    if cpu:
        # Per injector (by index): its worker threads' CPU seconds and count, so a search
        # can judge the busiest injector, not the average (see find.LiveRun).
        out["worker_cpu"] = {k: v for c in cpu for k, v in c.items()}
    # A merged snapshot given again (a late one joining its interval) counts its injectors.
    out["injectors_reported"] = sum(int(s.get("injectors_reported", 1)) for s in snaps)
    out["injectors"] = injectors
    return out


def _merge_figure(figures: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """_merge_figure adds the injectors' readings of one stream figure (a first byte, a gap,
    a TTFT, an ITL) over one interval: counts summed, percentiles from the merged
    histograms, the mean weighted by the counts."""
    hist = merge_histograms([f["histogram"] for f in figures])
    count, values = _engine.histogram_quantiles(hist, [q for _, q in SNAPSHOT_QUANTILES])
    n = sum(int(f["count"]) for f in figures)
    out: dict[str, Any] = {"count": n}
    for (key, _), v in zip(SNAPSHOT_QUANTILES, values, strict=True):
        out[key] = v / 1000.0 if count else 0.0
    out["mean_ms"] = sum(int(f["count"]) * float(f["mean_ms"]) for f in figures) / n if n else 0.0
    out["max_ms"] = max(float(f["max_ms"]) for f in figures)
    out["histogram"] = hist
    return out


def _merge_interval_stream(streams: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """_merge_interval_stream adds the injectors' ``stream`` blocks of one interval
    (``--stream``): counts and rates summed, each figure merged (:func:`_merge_figure`)."""
    out: dict[str, Any] = {}
    for key in ("responses", "events", "chunks", "body_bytes"):
        out[key] = sum(int(s[key]) for s in streams)
    for key in ("events_per_s", "chunks_per_s"):
        out[key] = sum(float(s[key]) for s in streams)
    for key in ("first_byte", "chunk_gap"):
        out[key] = _merge_figure([s[key] for s in streams])
    done = [s["completion"] for s in streams if isinstance(s.get("completion"), dict)]
    if done:
        c: dict[str, Any] = {
            key: sum(int(d[key]) for d in done) for key in ("responses", "output_tokens")
        }
        c["output_tokens_per_s"] = sum(float(d["output_tokens_per_s"]) for d in done)
        for key in ("ttft", "itl"):
            c[key] = _merge_figure([d[key] for d in done])
        out["completion"] = c
    return out


def merge_report(
    reports: Sequence[dict[str, Any]],
    timeseries: list[dict[str, Any]],
    extra: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """merge_report adds the injectors' final reports into one, with the merged
    ``timeseries``; ``extra`` are partial figures of injectors that never reported (lost:
    the sums of their snapshots after warm-up, as far as they came)."""
    parts = [*reports, *extra]
    base = dict(reports[0]) if reports else dict(extra[0])
    for key in (
        "requests",
        "intended",
        "unfinished",
        "unsent",
        "retries",
        "clamped",
        "bytes_in",
        "bytes_out",
        "non_2xx",
        "errors_total",
        "connects",
        "threads",
        "connections",
    ):
        base[key] = sum(int(p.get(key, 0)) for p in parts)
    base["interrupted"] = any(p.get("interrupted") for p in parts)
    after = [p["after_end"] for p in parts if p.get("after_end")]
    base.pop("after_end", None)
    if after:  # a scenario's sends past the window, on any injector
        base["after_end"] = {
            "requests": sum(int(a["requests"]) for a in after),
            "s": max(float(a["s"]) for a in after),
        }
    base["duration_s"] = max(float(p.get("duration_s", 0.0)) for p in parts)
    secs = base["duration_s"]
    base["rps"] = base["requests"] / secs if secs > 0 else 0.0
    base["transfer_in_per_s"] = base["bytes_in"] / secs if secs > 0 else 0.0
    base["status_codes"] = add_counts(p.get("status_codes", {}) for p in parts)
    base["errors"] = add_counts(p["errors"] for p in parts)
    latency = merge_histograms([p["histograms"]["latency"] for p in parts])
    base["latency_ms"] = summary(latency)
    unc = [r["histograms"]["uncorrected"] for r in parts if r["histograms"].get("uncorrected")]
    merged_unc = merge_histograms(unc) if unc else None
    base["uncorrected_latency_ms"] = summary(merged_unc) if merged_unc else None
    base["histograms"] = {"latency": latency, "uncorrected": merged_unc}
    lags = [r["histograms"]["lag"] for r in parts if r["histograms"].get("lag")]
    if len(lags) == len(parts):  # every injector measured its lag (none older than it)
        base["histograms"]["lag"] = merge_histograms(lags)
        base["lag_ms"] = summary(base["histograms"]["lag"])
    else:
        base.pop("lag_ms", None)
    _merge_stream(base, parts, secs)
    base["per_name"] = _merge_per_name(parts)
    if any(p.get("per_host") for p in parts):
        base["per_host"] = _merge_per_name(parts, "per_host")
    base["timeseries"] = timeseries
    base["outages"] = common_outages([p.get("outages", []) for p in reports])
    if any(p.get("scenario") for p in reports):
        base["scenario"] = _merge_scenario([p["scenario"] for p in reports if p.get("scenario")])
    return base


def _merge_stream(base: dict[str, Any], parts: Sequence[dict[str, Any]], secs: float) -> None:
    """_merge_stream merges the injectors' streamed answers (``--stream``): histograms
    exactly, counts summed, rates over the merged time."""
    streamed = [p for p in parts if p.get("stream") and p["histograms"].get("first_byte")]
    if not streamed:
        return
    for key in ("first_byte", "chunk_gap"):
        merged = merge_histograms([p["histograms"][key] for p in streamed])
        base["histograms"][key] = merged
        base[f"{key}_ms"] = summary(merged)
    counts: dict[str, float] = dict(
        add_counts(
            {k: v for k, v in p["stream"].items() if not k.endswith("_per_s")} for p in streamed
        )
    )
    for key in ("events", "chunks", "body_bytes"):
        counts[f"{key}_per_s"] = counts.get(key, 0) / secs if secs > 0 else 0.0
    base["stream"] = counts
    done = [p for p in streamed if p.get("completion") and p["histograms"].get("ttft")]
    if not done:
        return
    completion: dict[str, Any] = {
        key: sum(int(p["completion"][key]) for p in done) for key in ("responses", "output_tokens")
    }
    completion["output_tokens_per_s"] = completion["output_tokens"] / secs if secs > 0 else 0.0
    for key, name in (("ttft", "ttft_ms"), ("itl", "itl_ms"), ("request_tokens_per_s",) * 2):
        merged = merge_histograms([p["histograms"][key] for p in done])
        base["histograms"][key] = merged
        completion[name] = summary(merged)
    base["completion"] = completion


def add_counts(dicts: Iterable[dict[str, Any]]) -> dict[str, int]:
    """add_counts sums count dictionaries key by key (error classes, status codes)."""
    out: dict[str, int] = {}
    for d in dicts:
        for k, v in d.items():
            out[k] = out.get(k, 0) + int(v)
    return out


def summary(histogram: str) -> dict[str, float]:
    """summary is the report's ``latency_ms`` object of a merged histogram (the engine's own
    LatencySummary, so a merged report reads as a local one)."""
    return dict(json.loads(_engine.histogram_summary(histogram)))


def common_outages(per_injector: Sequence[Sequence[dict[str, Any]]]) -> list[dict[str, Any]]:
    """common_outages are the spans in which every injector saw the target down (an outage
    one injector alone saw is its network's, not the target's); each keeps the first
    injector's error class and the errors summed over the injectors inside the span."""
    if not per_injector or any(not o for o in per_injector):
        return []
    spans = [dict(o) for o in per_injector[0]]
    for others in per_injector[1:]:
        cut = []
        for a in spans:
            for b in others:
                start = max(float(a["start_s"]), float(b["start_s"]))
                ends = [float(e) for e in (a["end_s"], b["end_s"]) if e is not None]
                end = min(ends) if ends else None
                if end is None or end > start:
                    cut.append(
                        {
                            **a,
                            "start_s": start,
                            "end_s": end,
                            "errors": int(a["errors"]) + int(b["errors"]),
                            "errors_by_class": add_counts(
                                [a["errors_by_class"], b["errors_by_class"]]
                            ),
                        }
                    )
        spans = cut
    return spans


def merge_histograms(histograms: list[str]) -> str:
    """merge_histograms adds encoded histograms bucket for bucket (one given: itself)."""
    return histograms[0] if len(histograms) == 1 else _engine.merge_histograms(histograms)


def _merge_names(names: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in sorted({n for d in names for n in d}):
        mine = [d[name] for d in names if name in d]
        out[name] = {
            "requests": sum(int(m["requests"]) for m in mine),
            "errors": sum(int(m["errors"]) for m in mine),
            "errors_by_class": add_counts(m["errors_by_class"] for m in mine),
            "histogram": merge_histograms([m["histogram"] for m in mine]),
        }
        tally = add_counts(m.get("tally") or {} for m in mine)
        if tally:
            out[name]["tally"] = tally
        statuses = merge_statuses(m.get("statuses") or {} for m in mine)
        if statuses:
            out[name]["statuses"] = statuses
    return out


def merge_statuses(parts: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """merge_statuses adds snapshots' ``statuses`` (status code -> count, cumulative
    buckets at the engine's bounds, sum, least and greatest latency), code by code: exact,
    as the buckets are the same on every injector."""
    out: dict[str, Any] = {}
    for part in parts:
        for code, f in part.items():
            if not int(f.get("count") or 0):
                continue
            m = out.get(code)
            if m is None:
                out[code] = {**f, "buckets": list(f["buckets"])}
                continue
            m["count"] += int(f["count"])
            m["buckets"] = [a + int(b) for a, b in zip(m["buckets"], f["buckets"], strict=True)]
            m["sum_s"] += float(f["sum_s"])
            m["min_s"] = min(m["min_s"], float(f["min_s"]))
            m["max_s"] = max(m["max_s"], float(f["max_s"]))
    return out


def _merge_per_name(parts: Sequence[dict[str, Any]], key: str = "per_name") -> dict[str, Any]:
    """_merge_per_name merges the injectors' figures per request name (or per host, with
    ``key="per_host"``): counts added, histograms merged, so percentiles are exact."""
    out: dict[str, Any] = {}
    for name in sorted({n for p in parts for n in p.get(key, {})}):
        mine = [p[key][name] for p in parts if name in p.get(key, {})]
        hist = merge_histograms([m["histogram"] for m in mine])
        entry: dict[str, Any] = {
            "requests": sum(int(m["requests"]) for m in mine),
            "errors": sum(int(m["errors"]) for m in mine),
            "latency_ms": summary(hist),
            "histogram": hist,
        }
        reasons = add_counts(m.get("failure_reasons", {}) for m in mine)
        if reasons:
            entry["failure_reasons"] = reasons
        # Each injector bounds its own values; added, the run's may hold a few more.
        tally = add_counts(m.get("tally") or {} for m in mine)
        if tally:
            entry["tally"] = tally
        out[name] = entry
    return out


def _merge_scenario(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """_merge_scenario sums a scenario's iteration and group counts and rates; their
    latency is the injectors' worst percentile, an upper bound (the engine's scenario
    summary carries no histogram yet; see docs/distributed.md)."""
    out = dict(parts[0])
    its = [p["iterations"] for p in parts]
    out["iterations"] = {
        "started": sum(int(i["started"]) for i in its),
        "completed": sum(int(i["completed"]) for i in its),
        "failed": sum(int(i["failed"]) for i in its),
        "rate": sum(float(i["rate"]) for i in its),
        "latency_ms": _worst([i["latency_ms"] for i in its]),
    }
    groups: dict[str, Any] = {}
    for name in sorted({g for p in parts for g in p.get("groups", {})}):
        mine = [p["groups"][name] for p in parts if name in p.get("groups", {})]
        groups[name] = {
            "requests": sum(int(m["requests"]) for m in mine),
            "errors": sum(int(m["errors"]) for m in mine),
            "rps": sum(float(m["rps"]) for m in mine),
            "latency_ms": _worst([m["latency_ms"] for m in mine]),
        }
    out["groups"] = groups
    data = _merge_data([p.get("data") or {} for p in parts])
    if data:
        out["data"] = data
    sockets = _merge_sockets([p.get("sockets") or {} for p in parts])
    if sockets:
        out["sockets"] = sockets
    out["latency_merged"] = "upper bound: the worst injector's percentiles"
    return out


def _merge_data(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """_merge_data adds up each data set's rows and hand-outs over the injectors (each held
    its own slice of the file); the set is used up when every injector's slice was."""
    out: dict[str, Any] = {}
    for name in sorted({n for p in parts for n in p}):
        mine = [p[name] for p in parts if name in p]
        out[name] = {
            **mine[0],
            "rows": sum(int(m["rows"]) for m in mine),
            "taken": sum(int(m["taken"]) for m in mine),
            "missed": sum(int(m["missed"]) for m in mine),
            "used_up": all(bool(m["used_up"]) for m in mine),
        }
    return out


#: SOCKET_COUNTS: a WebSocket step's counts (``scenario.sockets``), each summed over injectors.
SOCKET_COUNTS = ("opened", "sent", "received", "answered", "unmatched", "lost_total")


def _merge_sockets(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """_merge_sockets adds up each WebSocket step's messages over the injectors (every
    injector's sockets are its own, so the books add: sent = answered + lost_total still)."""
    out: dict[str, Any] = {}
    for name in sorted({n for p in parts for n in p}):
        mine = [p[name] for p in parts if name in p]
        entry: dict[str, Any] = {k: sum(int(m[k]) for m in mine) for k in SOCKET_COUNTS}
        entry["lost"] = add_counts(m.get("lost") or {} for m in mine)
        out[name] = entry
    return out


def _worst(summaries: list[dict[str, float]]) -> dict[str, float]:
    keys = summaries[0].keys()
    return {k: (min if k == "min" else max)(float(s[k]) for s in summaries) for k in keys}
