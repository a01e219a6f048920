"""progress: the live view of a run. On a terminal, a rich panel redrawn once per interval (a bar
over the duration, request count or stages, the live rate with a sparkline, the interval's
percentiles, errors as they appear); elsewhere (logs, CI) one plain line per interval. Both only
consume the engine's per-interval snapshot dicts: nothing here measures anything.
"""

from __future__ import annotations

import sys
from collections import deque
from dataclasses import dataclass
from typing import IO, Any

from redline.units import fmt_count, fmt_ms

#: The sparkline's steps, lowest to highest.
_BARS = "▁▂▃▄▅▆▇█"
#: How many intervals the rate sparkline remembers.
_HISTORY = 40


#: PARTIAL: an interval shorter than this share of a whole one is partial (the run's last).
PARTIAL = 0.9


def describe(s: dict[str, Any], after_end: bool = False, partial: float | None = None) -> str:
    """describe renders one interval snapshot as a single line (errors by class when any);
    ``after_end``: the interval after the run's end, in which requests sent before it were
    answered (no sends: "req/s=0" beside its percentiles read as a repeat of the last second)
    and a scenario's iterations under way at the end sent their last requests. ``partial``:
    the span of an interval shorter than a whole one (a run's last, cut by its end), whose
    sends are said as a count: a rate over 20 ms read as a burst the server never saw."""
    p95 = f"p95={fmt_ms(s['p95_ms']):>8}  " if "p95_ms" in s else ""
    classes = ", ".join(
        f"{k} {v}" for k, v in sorted((s.get("errors_by_class") or {}).items()) if v
    )
    rate = f"req/s={fmt_count(s.get('achieved_rate') or 0):>7}"
    if partial is not None:
        sent = round((s.get("achieved_rate") or 0) * partial)
        rate = f"the last {partial * 1000:.0f}ms: {sent:,} sent"
    if after_end:
        rate = f"after the end: {s.get('requests', 0):,} answers to requests sent before it"
        sent = s.get("achieved_rate") or 0
        if sent:
            # A scenario's iterations under way at the end send the rest of their requests.
            went = f"req/s={fmt_count(sent)}"
            if partial is not None:
                went = f"{round(sent * partial):,} in its last {partial * 1000:.0f}ms"
            rate = (
                f"after the end: {s.get('requests', 0):,} answers; the iterations under way"
                f" went on sending, {went}"
            )
    line = (
        f"t={s.get('t_s', 0):6.1f}s  {rate}  "
        f"p50={fmt_ms(s.get('p50_ms', 0)):>8}  {p95}p99={fmt_ms(s.get('p99_ms', 0)):>8}  "
        f"max={fmt_ms(s.get('max_ms', 0)):>8}  errors={s.get('errors', 0)}"
        + (f" ({classes})" if classes else "")
        + f"  conns={s.get('active_connections', 0)}"
    )
    if s.get("fd_refused"):
        line += f" (the open-file limit refused {s['fd_refused']:,} connects)"
    if s.get("intended_rate"):
        line += (
            f"  intended={fmt_count(s['intended_rate'])}/s lag={fmt_ms(s.get('send_lag_ms', 0))}"
        )
    if s.get("warmup"):
        line += "  (warm-up)"
    cluster = injectors_text(s)
    if cluster:
        line += f"  {cluster}"
    for name, said in interval_tallies(s):
        line += f"  {name}: {said}"
    return line


def interval_tallies(s: dict[str, Any]) -> list[tuple[str, str]]:
    """interval_tallies: what each request name with a tally (``tally="$.status"``) was
    answered in the interval, most frequent first (``RUNNING 34, SUCCEEDED 10``)."""
    out = []
    for name, part in sorted((s.get("names") or {}).items()):
        tally = part.get("tally") or {}
        if tally:
            ranked = sorted(tally.items(), key=lambda kv: (-kv[1], kv[0]))
            out.append((name, ", ".join(f"{v} {n:,}" for v, n in ranked)))
    return out


def injectors_text(s: dict[str, Any]) -> str:
    """injectors_text: a cluster run's interval, when not every injector reported it: how
    many did, and the lost ones by name ("" otherwise, and on one machine)."""
    n, got = s.get("injectors"), s.get("injectors_reported")
    if n is None or got == n:
        return ""
    lost = "; ".join(s.get("injectors_lost") or [])
    return f"injectors {got}/{n}" + (f" (lost: {lost})" if lost else "")


@dataclass(frozen=True)
class Goal:
    """Goal: where the run ends, for the progress bar: after ``seconds`` (a duration or the
    stages' total) or after ``requests`` answers."""

    seconds: float | None = None
    requests: int | None = None


class Spans:
    """Spans: the intervals' lengths, read off their end times, to tell a partial interval
    (the run's last, cut by its end) from whole ones. The first is taken as whole (a run
    shorter than one interval has no other)."""

    def __init__(self) -> None:
        self.t_s = 0.0
        self.whole = 0.0

    def partial(self, t_s: float) -> float | None:
        """partial: the span of the interval ending at ``t_s`` when it is shorter than a
        whole one, else None."""
        span, self.t_s = t_s - self.t_s, max(t_s, self.t_s)
        if span > self.whole:
            self.whole = span
            return None
        return span if 0 < span < PARTIAL * self.whole else None


class PlainProgress:
    """PlainProgress prints one line per interval to a stream (default stderr); with a
    ``goal`` in seconds, the interval past it says it is the drain after the end."""

    def __init__(self, stream: IO[str] | None = None, goal: Goal | None = None):
        self.stream = stream or sys.stderr
        self.end_s = goal.seconds if goal is not None else None
        self.spans = Spans()

    def set_goal(self, goal: Goal) -> None:
        """set_goal: where the run ends, once known (a scenario file's own duration)."""
        self.end_s = goal.seconds

    def __call__(self, snapshot: dict[str, Any]) -> None:
        t = float(snapshot.get("t_s") or 0.0)
        after_end = self.end_s is not None and t > self.end_s + 1e-6
        partial = self.spans.partial(t)
        print(describe(snapshot, after_end, partial), file=self.stream, flush=True)

    def close(self) -> None:
        """close ends the view (nothing to do for plain lines)."""


class Tally:
    """Tally: what the snapshots so far add up to (the live view's state)."""

    def __init__(self) -> None:
        self.t_s = 0.0
        self.requests = 0
        self.errors = 0
        self.by_class: dict[str, int] = {}
        self.rates: deque[float] = deque(maxlen=_HISTORY)
        self.last: dict[str, Any] = {}
        self.spans = Spans()
        #: rate: the last whole interval's send rate (a partial one's is no rate to show).
        self.rate = 0.0

    def add(self, s: dict[str, Any]) -> None:
        """add folds one interval snapshot in."""
        self.t_s = float(s.get("t_s") or self.t_s)
        self.requests += int(s.get("requests") or 0)
        self.errors += int(s.get("errors") or 0)
        # Per-class counts, where the snapshot carries them (a dict class -> count).
        for cls, n in (s.get("errors_by_class") or {}).items():
            if n:
                self.by_class[cls] = self.by_class.get(cls, 0) + int(n)
        if self.spans.partial(self.t_s) is None:
            self.rate = float(s.get("achieved_rate") or 0.0)
            self.rates.append(self.rate)
        self.last = s

    def fraction(self, goal: Goal) -> float | None:
        """fraction: how far the run is towards its goal, 0..1 (None when unknown)."""
        if goal.requests:
            return min(1.0, (self.requests + self.errors) / goal.requests)
        if goal.seconds:
            return min(1.0, self.t_s / goal.seconds)
        return None


def sparkline(values: list[float]) -> str:
    """sparkline draws values as block characters scaled to their maximum."""
    top = max(values, default=0.0)
    if top <= 0:
        return _BARS[0] * len(values)
    return "".join(
        _BARS[min(len(_BARS) - 1, int(v / top * (len(_BARS) - 1) + 0.5))] for v in values
    )


def view(tally: Tally, goal: Goal) -> Any:
    """view builds the panel's renderable from the tally (a rich Group of lines)."""
    from rich.console import Group
    from rich.progress_bar import ProgressBar
    from rich.table import Table
    from rich.text import Text

    s = tally.last
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    frac = tally.fraction(goal)
    if goal.requests:
        where = f"{tally.requests + tally.errors:,} / {goal.requests:,} requests"
    elif goal.seconds:
        where = f"{tally.t_s:.1f}s / {goal.seconds:g}s"
    else:
        where = f"{tally.t_s:.1f}s"
    bar = Table.grid(padding=(0, 2))
    bar.add_column(width=40)
    bar.add_column(no_wrap=True)
    bar.add_row(
        ProgressBar(total=1.0, completed=frac or 0.0, width=40),
        f"{where}" + (f"  {100 * frac:.0f}%" if frac is not None else ""),
    )
    grid.add_row("progress", bar)
    rate = f"{fmt_count(tally.rate)}/s"
    if s.get("intended_rate"):
        rate += f" of {fmt_count(s['intended_rate'])}/s intended"
    rate += f"  {sparkline(list(tally.rates))}"
    grid.add_row("rate", rate)
    # p95 where the snapshot carries it, else the p90 it always has.
    mid = ("p95", "p95_ms") if "p95_ms" in s else ("p90", "p90_ms")
    pcts = [("p50", "p50_ms"), mid, ("p99", "p99_ms")]
    lat = "  ".join(f"{name} {fmt_ms(s.get(key) or 0)}" for name, key in pcts)
    grid.add_row("latency", f"{lat}  max {fmt_ms(s.get('max_ms') or 0)}  (last interval)")
    grid.add_row(
        "answered",
        f"{tally.requests:,}  connections {s.get('active_connections', 0)}"
        + ("  (warm-up)" if s.get("warmup") else ""),
    )
    for name, said in interval_tallies(s):
        grid.add_row(f"{name} said", f"{said}  (last interval)")
    cluster = injectors_text(s)
    if cluster:
        grid.add_row("injectors", Text(cluster, "red"))
    if tally.errors:
        detail = ", ".join(f"{k} {v:,}" for k, v in sorted(tally.by_class.items()))
        grid.add_row("errors", Text(f"{tally.errors:,}" + (f": {detail}" if detail else ""), "red"))
    else:
        grid.add_row("errors", "0")
    return Group(grid)


class LiveProgress:
    """LiveProgress keeps a small panel updated in place on a terminal (rich), cleared before
    the summary is printed."""

    def __init__(self, stream: IO[str] | None = None, goal: Goal | None = None):
        from rich.console import Console
        from rich.live import Live

        self.goal = goal or Goal()
        self.tally = Tally()
        self._live = Live(
            "starting...",
            console=Console(file=stream or sys.stderr),
            transient=True,
            auto_refresh=False,
        )
        self._live.start()

    def set_goal(self, goal: Goal) -> None:
        """set_goal: where the run ends, once known (a scenario file's own duration)."""
        self.goal = goal

    def __call__(self, snapshot: dict[str, Any]) -> None:
        self.tally.add(snapshot)
        self._live.update(view(self.tally, self.goal), refresh=True)

    def close(self) -> None:
        """close removes the panel before the summary is printed."""
        self._live.stop()


def summary_stream(json_path: str | None) -> IO[str]:
    """summary_stream is where a command prints its summary: stdout, unless ``--json -``
    writes the JSON document there (then stderr, so stdout stays one JSON document)."""
    return sys.stderr if json_path == "-" else sys.stdout


def for_stream(
    stream: IO[str] | None = None, goal: Goal | None = None
) -> PlainProgress | LiveProgress:
    """for_stream picks the live view on a TTY and plain lines elsewhere."""
    stream = stream or sys.stderr
    if stream.isatty():
        return LiveProgress(stream, goal)
    return PlainProgress(stream, goal)
