"""charts: the report's charts as data. Each :class:`Chart` is a title, an x axis, series
and columns, ready for the report's small generic uPlot renderer; building them in Python keeps
the JavaScript free of knowledge about results, and lets tests check what will be drawn.

Builders take the result dicts (see ``docs/schema/find.schema.json`` and
``docs/schema/result.schema.json``) and return None when the result has nothing to draw.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from redline import _engine
from redline.analysis.bottleneck import QUEUE_KEY, THREAD_KEY, part_readings

#: PALETTE: series colours, distinguishable in print and for the common colour blindnesses.
PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf", "#7f7f7f"]
#: MUTED: what was measured but not judged (a step's transition, cut as warm-up).
MUTED = "#aaaaaa"

#: ERROR_CLASSES: the engine's error classes, in the order the report lists them (the
#: engine's, read from it).
ERROR_CLASSES = tuple(_engine.ERROR_CLASSES)

Column = list[float | None]


@dataclass
class Series:
    """Series is one line of a chart: its label, colour, y scale (``y`` or ``y2``, the
    right-hand axis), whether it is drawn as points only (measurements against a fitted
    curve) or with a dash, and whether a line bridges missing values (``span_gaps``) or
    breaks there (a load that was not held between steps)."""

    label: str
    color: str
    scale: str = "y"
    points_only: bool = False
    dash: bool = False
    span_gaps: bool = True


@dataclass
class Chart:
    """Chart is one chart: ``id`` (stable, used by tests and anchors), title, axis labels,
    ``series`` and ``data`` (column 0 is x, then one column per series, None for a gap)."""

    id: str
    title: str
    x_label: str
    y_label: str
    series: list[Series]
    data: list[Column]
    y2_label: str | None = None
    x_time: bool = False
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def points(self) -> int:
        """points is how many non-null y values the chart has to draw."""
        return sum(1 for col in self.data[1:] for v in col if v is not None)

    def to_dict(self) -> dict[str, Any]:
        """to_dict is the chart as the renderer reads it."""
        return asdict(self)


def num(v: Any) -> float | None:
    """num is a value as a finite float, or None (JSON has no NaN, and a chart can not draw one)."""
    if v is None or isinstance(v, bool):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _tidy(v: Any) -> str:
    """_tidy shows a fitted parameter with 3 significant digits, and a 1e-19 as 0."""
    f = num(v)
    if f is None:
        return "–"
    return "0" if abs(f) < 1e-9 else f"{f:.3g}"


def _col(rows: Sequence[dict[str, Any]], key: str, scale: float = 1.0) -> Column:
    out: Column = []
    for r in rows:
        v = num(r.get(key))
        out.append(None if v is None else v * scale)
    return out


def _colors(n: int) -> list[str]:
    return [PALETTE[i % len(PALETTE)] for i in range(n)]


def load_label(model: str) -> str:
    """load_label names the load axis: users (closed) or offered req/s (open)."""
    return "users" if model == "closed" else "offered req/s"


def step_at(steps: Sequence[dict[str, Any]], t: float) -> dict[str, Any] | None:
    """step_at is the step whose [start_s, end_s] holds time ``t``, None between steps."""
    for s in steps:
        start, end = num(s.get("start_s")), num(s.get("end_s"))
        if start is not None and end is not None and start - 1e-6 <= t <= end + 1e-6:
            return s
    return None


# -- over time (find and run) ----------------------------------------------------------------


def throughput_chart(ts: Sequence[dict[str, Any]]) -> Chart | None:
    """throughput_chart: offered (the intended rate, open model) and achieved req/s."""
    if not ts:
        return None
    offered = _col(ts, "intended_rate")
    series = [Series("achieved req/s", PALETTE[0])]
    data = [_col(ts, "t_s"), _col(ts, "achieved_rate")]
    if any(v is not None for v in offered):
        series.append(Series("offered req/s", PALETTE[1], dash=True))
        data.append(offered)
    return Chart("throughput", "Throughput over time", "time (s)", "req/s", series, data)


def latency_chart(
    ts: Sequence[dict[str, Any]], steps: Sequence[dict[str, Any]] = ()
) -> Chart | None:
    """latency_chart: the percentiles of each interval over time. For a search, the p99 of
    every interval a step's warm-up cut (MSER) left out of its judged window is marked as a
    point of its own, so the transition after each step change shows as such."""
    if not ts:
        return None
    keys = [("p50", "p50_ms"), ("p90", "p90_ms"), ("p99", "p99_ms"), ("max", "max_ms")]
    keys = [(label, k) for label, k in keys if any(k in r for r in ts)]
    colors = _colors(len(keys))
    series = [Series(label, colors[i], dash=label == "max") for i, (label, _) in enumerate(keys)]
    # An interval with no answer has no latency (not 0 ms): a gap in the lines.
    answered = [r.get("requests", 1) != 0 for r in ts]
    data = [
        _col(ts, "t_s"),
        *([v if a else None for v, a in zip(_col(ts, k), answered, strict=True)] for _, k in keys),
    ]
    cut = [_cut_off(steps, num(r.get("t_s"))) for r in ts]
    if any(cut) and any(k == "p99_ms" for _, k in keys):
        series.append(Series("p99, cut as transition (not judged)", MUTED, points_only=True))
        data.append([num(r.get("p99_ms")) if c else None for r, c in zip(ts, cut, strict=True)])
    note = "Grey points: intervals a step's MSER warm-up cut left out of what it judged."
    return Chart(
        "latency",
        "Latency percentiles over time",
        "time (s)",
        "ms",
        series,
        data,
        note=note if any(cut) else "",
    )


def _cut_off(steps: Sequence[dict[str, Any]], t: float | None) -> bool:
    """_cut_off: the interval ending at ``t`` lies in a step but before its judged window."""
    if t is None:
        return False
    s = step_at(steps, t)
    if s is None or t <= float(s.get("start_s") or 0.0) + 1e-6:
        return False
    judged = num(s.get("judged_from_s"))
    return judged is not None and t <= judged + 1e-6


def load_chart(
    ts: Sequence[dict[str, Any]], steps: Sequence[dict[str, Any]], model: str
) -> Chart | None:
    """load_chart: the load the engine was given in each interval (its ``target`` when the
    search recorded it; else the open model's intended rate; else the load of the step that
    covers the interval, with a gap between steps) and the connections the engine had open."""
    if not ts:
        return None
    target: Column = []
    for r in ts:
        v = num(r.get("target"))
        if v is None and model != "closed":
            v = num(r.get("intended_rate"))
        if v is None:
            t = num(r.get("t_s"))
            s = step_at(steps, t) if t is not None else None
            v = num(s.get("load")) if s else None
        target.append(v)
    series, data = [], [_col(ts, "t_s")]
    if any(v is not None for v in target):
        series.append(Series(load_label(model), PALETTE[0], span_gaps=False))
        data.append(target)
    conns = _col(ts, "active_connections")
    if any(v is not None for v in conns):
        series.append(Series("open connections", PALETTE[2], dash=True))
        data.append(conns)
    if not series:
        return None
    return Chart("load", "Load over time", "time (s)", load_label(model), series, data)


def errors_over_time_chart(ts: Sequence[dict[str, Any]]) -> Chart | None:
    """errors_over_time_chart: failed requests per interval (a run has no per-step classes)."""
    if not ts:
        return None
    return Chart(
        "errors",
        "Errors over time",
        "time (s)",
        "errors per interval",
        [Series("errors", PALETTE[1])],
        [_col(ts, "t_s"), _col(ts, "errors")],
    )


#: _Figures: a stream chart's figures: where each is in an interval's ``stream``, its label.
_Figures = list[tuple[tuple[str, ...], str]]


def _stream_col(ts: Sequence[dict[str, Any]], path: tuple[str, ...], key: str) -> Column:
    """_stream_col: one figure of each interval's ``stream`` block (at ``path`` within it),
    None where the interval has none or recorded no value of it (a gap, not 0 ms)."""
    out: Column = []
    for r in ts:
        part: Any = r.get("stream")
        for k in path:
            part = part.get(k) if isinstance(part, dict) else None
        if not isinstance(part, dict) or (key.endswith("_ms") and not part.get("count")):
            out.append(None)
        else:
            out.append(num(part.get(key)))
    return out


def stream_charts(ts: Sequence[dict[str, Any]]) -> list[Chart]:
    """stream_charts (``--stream``): each interval's time to first byte and gaps between
    pieces (p50, p99) with its events a second, and, once a streamed completion's tokens
    came, its time to first token and inter-token latency (p50, p99) with its output tokens a
    second (docs/protocols.md); none without stream figures."""
    if not any(isinstance(r.get("stream"), dict) for r in ts):
        return []
    # Each chart: its id, its title, its figures (where in `stream`, label) and its rate.
    plans: list[tuple[str, str, _Figures, tuple[tuple[str, ...], str, str]]] = [
        (
            "stream",
            "Streamed answers over time",
            [(("first_byte",), "first byte"), (("chunk_gap",), "gap")],
            ((), "events_per_s", "events/s"),
        ),
        (
            "completion",
            "Streamed completions over time",
            [(("completion", "ttft"), "TTFT"), (("completion", "itl"), "ITL")],
            (("completion",), "output_tokens_per_s", "tokens/s"),
        ),
    ]
    charts = []
    for cid, title, figures, (rate_path, rate_key, rate_label) in plans:
        series, data = [], [_col(ts, "t_s")]
        colors = _colors(2 * len(figures) + 1)
        for i, (path, label) in enumerate(figures):
            for j, (q, key) in enumerate((("p50", "p50_ms"), ("p99", "p99_ms"))):
                series.append(Series(f"{label} {q}", colors[2 * i + j], dash=q == "p99"))
                data.append(_stream_col(ts, path, key))
        series.append(Series(rate_label, colors[-1], scale="y2"))
        data.append(_stream_col(ts, rate_path, rate_key))
        chart = Chart(cid, title, "time (s)", "ms", series, data, y2_label=rate_label)
        if chart.points():
            charts.append(chart)
    return charts


#: TALLY_SERIES: the most values a tally chart draws as lines of their own (the most
#: frequent); the others are summed into one line.
TALLY_SERIES = 8


def tally_charts(ts: Sequence[dict[str, Any]]) -> list[Chart]:
    """tally_charts: for each request name with a ``tally`` (scenario runs), its answers a
    second by the value the service gave (``tally="$.status"``: QUEUED, RUNNING, SUCCEEDED,
    FAILED), interval by interval: a queue filling and draining, seen from outside."""
    names = sorted({n for s in ts for n, e in (s.get("names") or {}).items() if e.get("tally")})
    charts = []
    for name in names:
        totals: dict[str, int] = {}
        for s in ts:
            for v, n in ((s.get("names") or {}).get(name, {}).get("tally") or {}).items():
                totals[v] = totals.get(v, 0) + int(n)
        ranked = sorted(totals, key=lambda v: (-totals[v], v))
        shown, rest = ranked[:TALLY_SERIES], ranked[TALLY_SERIES:]
        x: Column = []
        cols: list[Column] = [[] for _ in range(len(shown) + (1 if rest else 0))]
        prev = 0.0
        for s in ts:
            t = num(s.get("t_s"))
            if t is None:
                continue
            length = max(t - prev, 1e-9)
            prev = t
            counts = (s.get("names") or {}).get(name, {}).get("tally") or {}
            x.append(t)
            for col, v in zip(cols, shown, strict=False):
                col.append(int(counts.get(v, 0)) / length)
            if rest:
                cols[-1].append(sum(int(counts.get(v, 0)) for v in rest) / length)
        labels = shown + ([f"{len(rest)} other values"] if rest else [])
        colors = _colors(len(labels))
        charts.append(
            Chart(
                "tally-" + "".join(c if c.isalnum() else "-" for c in name),
                f"What '{name}' answered over time",
                "time (s)",
                "answers/s",
                [Series(label, color) for label, color in zip(labels, colors, strict=True)],
                [x, *cols],
                note="Each answer counted by the value at the request's tally path.",
            )
        )
    return charts


# -- per step (find) -------------------------------------------------------------------------


def errors_chart(steps: Sequence[dict[str, Any]]) -> Chart | None:
    """errors_chart: each step's failed requests by class (the total when the steps carry no
    classes)."""
    if not steps:
        return None
    classes = [
        c for c in ERROR_CLASSES if any((s.get("errors_by_class") or {}).get(c) for s in steps)
    ]
    extra = sorted(
        {c for s in steps for c, n in (s.get("errors_by_class") or {}).items() if n}
        - set(ERROR_CLASSES)
    )
    classes += extra
    x: Column = [num(s.get("index")) for s in steps]
    if classes:
        colors = _colors(len(classes))
        series = [Series(c, colors[i]) for i, c in enumerate(classes)]
        data = [
            x,
            *([num((s.get("errors_by_class") or {}).get(c, 0)) for s in steps] for c in classes),
        ]
    else:
        series = [Series("errors", PALETTE[1])]
        data = [x, [num(s.get("errors", 0)) for s in steps]]
    note = "" if any(v for col in data[1:] for v in col) else "no errors in any step"
    return Chart(
        "errors", "Errors by class per step", "step", "failed requests", series, data, note=note
    )


def usl_chart(
    steps: Sequence[dict[str, Any]], usl: dict[str, Any] | None, model: str
) -> Chart | None:
    """usl_chart: measured throughput against concurrency, with the fitted USL curve (the x
    is users in the closed model and mean in-flight requests in the open one)."""
    pts: list[tuple[float, float]] = []
    for s in steps:
        n = num(s.get("load")) if model == "closed" else num(s.get("inflight_mean"))
        if n is None and model != "closed":
            x, lat = num(s.get("throughput_rps")), num(s.get("mean_ms")) or num(s.get("p50_ms"))
            n = x * lat / 1000 if x is not None and lat is not None else None
        x = num(s.get("throughput_rps"))
        if n is not None and x is not None:
            pts.append((n, x))
    curve = [(float(a), float(b)) for a, b in (usl or {}).get("curve") or []]
    if not pts:
        return None
    xs = sorted({p[0] for p in pts} | {c[0] for c in curve})
    measured = {p[0]: p[1] for p in pts}
    fitted = dict(curve)
    data: list[Column] = [list(xs), [measured.get(v) for v in xs]]
    series = [Series("measured", PALETTE[0], points_only=True)]
    note = ""
    if curve:
        series.append(Series("USL fit", PALETTE[1]))
        data.append([fitted.get(v) for v in xs])
        sigma, kappa, r2 = (usl or {}).get("sigma"), (usl or {}).get("kappa"), (usl or {}).get("r2")
        note = (
            f"σ={_tidy(sigma)}, κ={_tidy(kappa)}, R²={r2:.3f}"
            if None not in (sigma, kappa, r2)
            else ""
        )
    elif usl:
        note = f"no USL fit: {usl.get('note', '')}"
    xl = "users" if model == "closed" else "requests in flight"
    return Chart("usl", "Throughput against concurrency", xl, "req/s", series, data, note=note)


def hockey_chart(steps: Sequence[dict[str, Any]]) -> Chart | None:
    """hockey_chart: latency against throughput per step, the hockey stick whose blade is
    where queueing starts. Drawn as points: past a throughput peak (retrograde scaling) the
    steps are not in throughput order, and a line through them would zig-zag."""
    rows = sorted(
        (s for s in steps if num(s.get("throughput_rps")) is not None),
        key=lambda s: float(s["throughput_rps"]),
    )
    if not rows:
        return None
    keys = [("p50", "p50_ms"), ("p90", "p90_ms"), ("p99", "p99_ms")]
    keys = [(label, k) for label, k in keys if any(num(r.get(k)) is not None for r in rows)]
    colors = _colors(len(keys))
    return Chart(
        "hockey",
        "Latency against throughput",
        "req/s",
        "ms",
        [Series(label, colors[i], points_only=True) for i, (label, _) in enumerate(keys)],
        [_col(rows, "throughput_rps"), *(_col(rows, k) for _, k in keys)],
    )


# -- the service -----------------------------------------------------------------------------


def cpu_chart(samples: Sequence[dict[str, Any]]) -> Chart | None:
    """cpu_chart: the service's CPU % (100 = one core) and the host's load average."""
    cpu, load = _col(samples, "cpu_percent"), _col(samples, "load1")
    if not any(v is not None for v in cpu + load):
        return None
    series, data = [], [_col(samples, "t_s")]
    if any(v is not None for v in cpu):
        series.append(Series("CPU %", PALETTE[3]))
        data.append(cpu)
    if any(v is not None for v in load):
        series.append(Series("load average (1 min)", PALETTE[4], scale="y2", dash=True))
        data.append(load)
    return Chart(
        "service-cpu", "Service CPU", "time (s)", "CPU %", series, data, y2_label="load average"
    )


def resources_chart(samples: Sequence[dict[str, Any]]) -> Chart | None:
    """resources_chart: the service's resident memory (MiB) and open file descriptors."""
    rss, fds = _col(samples, "rss_bytes", 1 / 2**20), _col(samples, "fds")
    if not any(v is not None for v in rss + fds):
        return None
    series, data = [], [_col(samples, "t_s")]
    if any(v is not None for v in rss):
        series.append(Series("RSS MiB", PALETTE[5]))
        data.append(rss)
    if any(v is not None for v in fds):
        series.append(Series("open fds", PALETTE[6], scale="y2"))
        data.append(fds)
    return Chart(
        "service-resources",
        "Service memory and file descriptors",
        "time (s)",
        "MiB",
        series,
        data,
        y2_label="fds",
    )


# -- the watched parts (--watch) ---------------------------------------------------------

#: SMALL: what the renderer reads to draw a chart at the small height.
SMALL = {"small": True}


def part_names(ts: Sequence[dict[str, Any]]) -> list[str]:
    """part_names: the parts any interval has figures of, in the order first seen, the
    generator last."""
    names: list[str] = []
    for row in ts:
        for name in row.get("parts") or {}:
            if name not in names:
                names.append(name)
    return sorted(names, key=lambda n: n == "generator")


def _lines(name: str, figures: dict[str, float]) -> dict[tuple[str, str], float]:
    """_lines: one interval's values of a part's lines, by (label, scale)."""
    if name == "generator":
        out = {}
        for key, label in (("busy", "busy %"), ("wait", "waiting for a CPU %")):
            v = num(figures.get(key))
            if v is not None:
                out[(label, "y")] = 100.0 * v
        return out
    lines: dict[tuple[str, str], float] = {}
    for r in part_readings(name, figures):
        if r.resource == "accept-queue":
            lines[("accept queue (waiting)", "y2")] = float(figures.get("accept_queue") or 0.0)
        elif r.resource == "errors":
            lines[("errors/s", "y2")] = r.utilisation
        elif r.key == QUEUE_KEY:
            lines[("waiting for a CPU %", "y")] = 100.0 * r.utilisation
        elif r.key == THREAD_KEY:
            lines[("busiest thread % of a core", "y")] = 100.0 * r.utilisation
        else:
            label = f"pool {r.key} %" if r.resource == "pool" else f"{r.resource} %"
            lines[(label, "y")] = 100.0 * r.utilisation
    return lines


def part_chart(name: str, ts: Sequence[dict[str, Any]]) -> Chart | None:
    """part_chart: the part's resources interval by interval (None: no figures of it)."""
    rows = [_lines(name, (row.get("parts") or {}).get(name) or {}) for row in ts]
    keys: list[tuple[str, str]] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    if not keys:
        return None
    keys.sort(key=lambda k: k[1] == "y2")
    colors = _colors(len(keys))
    series = [Series(label, colors[i], scale=scale) for i, (label, scale) in enumerate(keys)]
    data: list[Column] = [_col(ts, "t_s"), *([r.get(k) for r in rows] for k in keys)]
    right = [label for label, scale in keys if scale == "y2"]
    return Chart(
        "part-" + "".join(c if c.isalnum() else "-" for c in name),
        f"{name}: its resources in use" if name != "generator" else "generator (redline)",
        "time (s)",
        "% of its limit",
        series,
        data,
        y2_label=" / ".join(r.split(" (")[0] for r in right) or None,
        extra=dict(SMALL),
    )


def part_charts(ts: Sequence[dict[str, Any]]) -> list[Chart]:
    """part_charts: one small chart per watched part (``--watch``), on the load's own time
    axis. Each interval carries each part's figures over it (``parts``); a part's chart
    draws every resource as the share of its limit in use, as the bottleneck judges it
    (:func:`~redline.analysis.bottleneck.part_readings`): CPU of the cores the part may use,
    its threads' wait for a CPU, memory, open files, each pool; and on the right-hand axis
    what has no limit to be a share of: its accept queue's waiting connections and its
    errors a second. The generator's is its workers' busy and waiting shares. The x column
    is the load charts' own."""
    charts = [part_chart(name, ts) for name in part_names(ts)]
    return [c for c in charts if c is not None]


def monitor_samples(result: dict[str, Any]) -> list[dict[str, Any]]:
    """monitor_samples is the result's monitor series: a list, or ``{"samples": [...]}``."""
    m = result.get("monitor")
    if isinstance(m, dict):
        m = m.get("samples")
    return [s for s in (m or []) if isinstance(s, dict) and num(s.get("t_s")) is not None]


def find_charts(result: dict[str, Any]) -> list[Chart]:
    """find_charts is every chart of a find result that has data, in report order."""
    ts = result.get("timeseries") or []
    steps = result.get("steps") or []
    model = result.get("model", "closed")
    samples = monitor_samples(result)
    charts = [
        throughput_chart(ts),
        latency_chart(ts, steps),
        load_chart(ts, steps, model),
        errors_chart(steps),
        cpu_chart(samples),
        resources_chart(samples),
        usl_chart(steps, result.get("usl"), model),
        hockey_chart(steps),
        *stream_charts(ts),
        *tally_charts(ts),
        *part_charts(ts),
    ]
    return [c for c in charts if c is not None]


def run_charts(result: dict[str, Any]) -> list[Chart]:
    """run_charts is every chart of a plain run result that has data, over its send window
    (the drain after it, a scenario's whole empty intervals, is no part of the load)."""
    from redline.report.summary import send_window, window_s

    ts = result.get("timeseries") or []
    if result.get("duration_s"):  # a finished run's (the live page's series has none yet)
        ts = send_window(ts, window_s(result))
    charts = [
        throughput_chart(ts),
        latency_chart(ts),
        load_chart(ts, [], result.get("model", "closed")),
        errors_over_time_chart(ts),
        cpu_chart(monitor_samples(result)),
        resources_chart(monitor_samples(result)),
        *stream_charts(ts),
        *tally_charts(ts),
        *part_charts(ts),
    ]
    return [c for c in charts if c is not None]
